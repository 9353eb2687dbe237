/**
 * Named admin tokens against the real server, on both admin-state backends (a SQLite file and a
 * PostgreSQL database): every admin route (walked from the router's own table, so a new route is
 * covered without editing this file) called with every role and both scopes answers exactly as the
 * role and scope allow; the audit log names the token; the store holds only digests; a revoked
 * token is refused; the CLI creates, lists and revokes tokens.
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ROUTES, type AdminRoute } from '../../src/admin/server/handlers.js';
import { TOKEN_ROLES, type TokenRole } from '../../src/admin/server/access.js';
import { createDatabase } from '../helpers/postgres.js';
import { BIN, startServer, type ServerProcess } from '../helpers/server-process.js';

const BOOTSTRAP = { authorization: 'Bearer test-admin-token' };
/** A scoped token may act on these two: `live` holds content, `spare` does not exist (yet). */
const SCOPE = ['live', 'spare'];

interface Created {
  id: string;
  name: string;
  role: TokenRole;
  environments: '*' | string[];
  token: string;
}

async function admin(srv: ServerProcess, method: string, path: string, opts: { token?: string; body?: string; headers?: Record<string, string> } = {}): Promise<{ status: number; json: unknown }> {
  const auth = opts.token === undefined ? BOOTSTRAP : { authorization: `Bearer ${opts.token}` };
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: { ...auth, ...opts.headers }, body: opts.body });
  const text = await res.text();
  return { status: res.status, json: text === '' ? null : (JSON.parse(text) as unknown) };
}

function code(r: { json: unknown }): string | undefined {
  return (r.json as { error?: { code?: string } } | null)?.error?.code;
}

function rank(role: TokenRole): number {
  return TOKEN_ROLES.indexOf(role);
}

/** The route's path with `:env` set to `env` and every other param to a name nothing holds. */
function pathOf(route: AdminRoute, env: string): string {
  return route.pattern
    .split('/')
    .map((s) => (s === ':env' ? env : s.startsWith(':') ? 'nothing-here' : s))
    .join('/');
}

interface Backend {
  name: string;
  /**
   * Whether the CLI's test runs on this backend. The CLI speaks HTTP to the admin API and does the
   * same whatever the store; every call it makes there (token create, list and revoke, a refused
   * role, a write audited under the token's name, a revoked token refused) is made over HTTP on
   * every backend by the other tests, so one backend runs it.
   */
  cli: boolean;
  start: () => Promise<{ srv: ServerProcess; storeRows: () => Promise<{ digest: string }[]>; storeBytes: () => Promise<string>; cleanup: () => Promise<void> }>;
}

const BACKENDS: Backend[] = [
  {
    name: 'SQLite file',
    cli: true,
    start: async () => {
      const srv = await startServer({ admin: true });
      const require = createRequire(import.meta.url);
      const Database = require('better-sqlite3') as new (f: string, o: { readonly: boolean }) => { prepare(s: string): { all(): unknown[] }; close(): void };
      return {
        srv,
        storeRows: () => {
          const db = new Database(join(srv.dir, 'rcd.db'), { readonly: true });
          try {
            return Promise.resolve(db.prepare('SELECT * FROM admin_tokens').all() as { digest: string }[]);
          } finally {
            db.close();
          }
        },
        // Every file of the store (database, WAL), as bytes: a token must appear in none.
        storeBytes: () =>
          Promise.resolve(
            readdirSync(srv.dir)
              .filter((f) => f.startsWith('rcd.db'))
              .map((f) => readFileSync(join(srv.dir, f)).toString('latin1'))
              .join('\n'),
          ),
        cleanup: () => srv.dispose(),
      };
    },
  },
  {
    name: 'PostgreSQL',
    cli: false,
    start: async () => {
      const db = await createDatabase();
      const srv = await startServer({ admin: true, store: db.url });
      const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
      return {
        srv,
        storeRows: async () => [...(await sql.unsafe<{ digest: string }[]>('SELECT * FROM admin_tokens'))],
        storeBytes: async () => JSON.stringify(await sql.unsafe('SELECT * FROM admin_tokens')) + JSON.stringify(await sql.unsafe('SELECT * FROM admin_audit')),
        cleanup: async () => {
          await sql.end();
          await srv.dispose();
          await db.drop();
        },
      };
    },
  },
];

/**
 * The grants docs/admin.md states ("Roles", "Scopes"), written out here rather than read from the
 * route table: a route whose least role or scope changes by mistake fails this list, and a new
 * route must be added to it (and to the docs) on purpose.
 */
const DOCUMENTED_GRANTS: Record<string, string> = {
  'GET environments': 'read own',
  'PUT environments/:env': 'admin env',
  'DELETE environments/:env': 'admin env',
  'POST environments/:env/keys': 'editor env',
  'GET environments/:env/keys': 'read env',
  'DELETE environments/:env/keys/:keyId': 'editor env',
  'GET environments/:env/content': 'read env',
  'PUT environments/:env/content/:id': 'editor env',
  'GET environments/:env/content/:id': 'read env',
  'DELETE environments/:env/content/:id': 'editor env',
  'POST environments/:env/content/:id/rollback': 'editor env',
  'PUT environments/:env/content/:id/mapping': 'editor env',
  'DELETE environments/:env/content/:id/mapping': 'editor env',
  'POST environments/:env/content/:id/preview': 'read env',
  'POST environments/:env/sync': 'editor env',
  'POST import': 'admin all',
  'GET export': 'read all',
  'POST webhooks': 'admin all',
  'GET webhooks': 'admin all',
  'GET webhooks/dead-letters': 'admin all',
  'DELETE webhooks/:id': 'admin all',
  'GET audit': 'read all',
  'POST tokens': 'admin all',
  'GET tokens': 'admin all',
  'DELETE tokens/:name': 'admin all',
  // Scheduled changes, rollouts, the kill switch: docs/schedule.md, "API".
  'GET schedules': 'read own',
  'POST environments/:env/schedules': 'editor env',
  'GET environments/:env/schedules': 'read env',
  'GET environments/:env/schedules/:sid': 'read env',
  'PATCH environments/:env/schedules/:sid': 'editor env',
  'DELETE environments/:env/schedules/:sid': 'editor env',
  'GET environments/:env/schedules/:sid/writes': 'read env',
  'PUT environments/:env/schedules/:sid/ops': 'editor env',
  'POST environments/:env/schedules/check': 'read env',
  'POST environments/:env/rollouts': 'editor env',
  'GET environments/:env/rollouts': 'read env',
  'GET environments/:env/rollouts/:rid': 'read env',
  'POST environments/:env/rollouts/:rid/pause': 'editor env',
  'POST environments/:env/rollouts/:rid/resume': 'editor env',
  'POST environments/:env/rollouts/:rid/advance': 'editor env',
  'POST environments/:env/rollouts/:rid/rollback': 'editor env',
  'POST environments/:env/content/:id/kill': 'editor env',
  // The readout of experiments: docs/admin.md, "Experiments".
  'GET environments/:env/experiments': 'read env',
  'GET environments/:env/experiments/:name': 'read env',
};

describe('the route table', () => {
  it('grants exactly what docs/admin.md documents, route by route', () => {
    expect(Object.fromEntries(ADMIN_ROUTES.map((r) => [`${r.method} ${r.pattern}`, `${r.role} ${r.scope}`]))).toEqual(DOCUMENTED_GRANTS);
  });
});

describe.each(BACKENDS)('named admin tokens ($name)', (backend) => {
  let ctx: Awaited<ReturnType<Backend['start']>>;
  let srv: ServerProcess;
  const tokens: Created[] = [];

  beforeAll(async () => {
    ctx = await backend.start();
    srv = ctx.srv;
    for (const env of ['live', 'other']) expect((await admin(srv, 'PUT', `environments/${env}`)).status).toBe(201);
    expect((await admin(srv, 'PUT', 'environments/live/content/Settings', { body: '{"a":1}' })).status).toBe(200);
    for (const role of TOKEN_ROLES) {
      for (const scoped of [false, true]) {
        const name = `${role}-${scoped ? 'scoped' : 'all'}`;
        const r = await admin(srv, 'POST', 'tokens', { body: JSON.stringify({ name, role, environments: scoped ? SCOPE : '*' }) });
        expect(r.status).toBe(201);
        tokens.push(r.json as Created);
      }
    }
  }, 60_000);

  afterAll(async () => {
    await ctx?.cleanup();
  });

  it('every route x every role x both scopes: refused exactly outside the role and the scope', async () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const route of ADMIN_ROUTES) {
      // Environment routes are tried on one environment outside any scoped token's scope and one inside.
      const envs = route.pattern.includes(':env') ? ['other', 'spare'] : ['-'];
      for (const env of envs) {
        for (const t of tokens) {
          const scoped = t.environments !== '*';
          let want: string | null = null;
          if (rank(t.role) < rank(route.role)) want = 'forbidden_role';
          else if (scoped && (route.scope === 'all' || (route.scope === 'env' && !SCOPE.includes(env)))) want = 'forbidden_scope';
          // No body: an allowed call fails validation or finds nothing, so nothing in the way of the next one changes.
          const r = await admin(srv, route.method, pathOf(route, env), { token: t.token });
          checked++;
          const label = `${route.method} ${pathOf(route, env)} as ${t.name}: ${r.status} ${code(r) ?? ''}`;
          if (want === null) {
            if (r.status === 401 || r.status === 403) wrong.push(`${label}, expected to be allowed`);
          } else if (r.status !== 403 || code(r) !== want) {
            wrong.push(`${label}, expected 403 ${want}`);
          }
        }
      }
    }
    expect(wrong).toEqual([]);
    expect(checked).toBeGreaterThan(ADMIN_ROUTES.length * tokens.length);
  }, 120_000);

  it('a scoped token lists only its environments and cannot sync into another one', async () => {
    const editor = tokens.find((t) => t.name === 'editor-scoped')!;
    // The walk above let the admin token delete the empty `other` (and create `spare`).
    await admin(srv, 'PUT', 'environments/other');
    await admin(srv, 'DELETE', 'environments/spare');
    const list = await admin(srv, 'GET', 'environments', { token: editor.token });
    expect(list.status).toBe(200);
    expect((list.json as { environments: { id: string }[] }).environments.map((e) => e.id)).toEqual(['live']);
    const out = await admin(srv, 'POST', 'environments/live/sync', { token: editor.token, body: JSON.stringify({ to: 'other' }) });
    expect(out.status).toBe(403);
    expect(code(out)).toBe('forbidden_scope');
    // Nothing was copied.
    const other = await admin(srv, 'GET', 'environments/other/content');
    expect((other.json as { content: unknown[] }).content).toEqual([]);
  });

  it('the audit log records the token name as the actor, whatever the client declares', async () => {
    const editor = tokens.find((t) => t.name === 'editor-scoped')!;
    const put = await admin(srv, 'PUT', 'environments/live/content/Settings', { token: editor.token, body: '{"a":2}', headers: { 'x-rcd-actor': 'someone-else' } });
    expect(put.status).toBe(200);
    const audit = await admin(srv, 'GET', 'audit?limit=1');
    const entry = (audit.json as { entries: { actor: string; tokenId: string; action: string; target: string }[] }).entries[0]!;
    expect(entry).toMatchObject({ actor: 'editor-scoped', tokenId: editor.id, action: 'content.put', target: 'Settings' });
    const created = await admin(srv, 'GET', 'audit?limit=500');
    const creates = (created.json as { entries: { actor: string; action: string; target: string }[] }).entries.filter((e) => e.action === 'token.create');
    expect(creates.map((e) => e.target).sort()).toEqual(tokens.map((t) => t.name).sort());
  });

  it('the store holds SHA-256 digests only, never a token; the list never shows one', async () => {
    const rows = await ctx.storeRows();
    const digests = rows.map((r) => r.digest).sort();
    expect(digests).toEqual(tokens.map((t) => createHash('sha256').update(t.token).digest('hex')).sort());
    const bytes = await ctx.storeBytes();
    for (const t of tokens) expect(bytes.includes(t.token)).toBe(false);
    const list = await admin(srv, 'GET', 'tokens');
    const text = JSON.stringify(list.json);
    for (const t of tokens) expect(text.includes(t.token)).toBe(false);
    expect((list.json as { tokens: { name: string }[] }).tokens.map((t) => t.name).sort()).toEqual(tokens.map((t) => t.name).sort());
  });

  it('names are unique among live tokens, "bootstrap" is reserved, and a revoked token is refused at once', async () => {
    const dup = await admin(srv, 'POST', 'tokens', { body: JSON.stringify({ name: 'read-all', role: 'read', environments: '*' }) });
    expect(dup.status).toBe(409);
    expect(code(dup)).toBe('conflict');
    const reserved = await admin(srv, 'POST', 'tokens', { body: JSON.stringify({ name: 'bootstrap', role: 'read', environments: '*' }) });
    expect(code(reserved)).toBe('invalid_body');
    const badRole = await admin(srv, 'POST', 'tokens', { body: JSON.stringify({ name: 'x', role: 'owner', environments: '*' }) });
    expect(code(badRole)).toBe('invalid_body');
    const badScope = await admin(srv, 'POST', 'tokens', { body: JSON.stringify({ name: 'x', role: 'read', environments: ['bad env!'] }) });
    expect(code(badScope)).toBe('invalid_body');

    const temp = (await admin(srv, 'POST', 'tokens', { body: JSON.stringify({ name: 'temp', role: 'read', environments: '*' }) })).json as Created;
    expect((await admin(srv, 'GET', 'environments', { token: temp.token })).status).toBe(200);
    const revoked = await admin(srv, 'DELETE', 'tokens/temp');
    expect(revoked.json).toMatchObject({ name: 'temp', revoked: true });
    const after = await admin(srv, 'GET', 'environments', { token: temp.token });
    expect(after.status).toBe(401);
    expect(code(after)).toBe('unauthorized');
    // The name is free again; the old token stays dead.
    const again = (await admin(srv, 'POST', 'tokens', { body: JSON.stringify({ name: 'temp', role: 'read', environments: '*' }) })).json as Created;
    expect((await admin(srv, 'GET', 'environments', { token: again.token })).status).toBe(200);
    expect((await admin(srv, 'GET', 'environments', { token: temp.token })).status).toBe(401);
    expect((await admin(srv, 'DELETE', 'tokens/temp')).status).toBe(200);
  });

  if (backend.cli) {
    it('the CLI creates, lists and revokes tokens; a CLI call with a named token is audited under its name', async () => {
      const run = (args: string[], token = 'test-admin-token'): Promise<{ code: number; stdout: string; stderr: string }> =>
        new Promise((resolve) => {
          execFile(process.execPath, [BIN, ...args, '--admin-url', srv.adminUrl!], { env: { ...process.env, RCD_ADMIN_TOKEN: token }, cwd: srv.dir }, (err, stdout, stderr) =>
            resolve({ code: err === null ? 0 : ((err as { code?: number }).code ?? 1), stdout, stderr }),
          );
        });
      const created = await run(['token', 'create', 'ci-deploy', '--role', 'editor', '--env', 'live', '--json']);
      expect(created.code).toBe(0);
      const info = JSON.parse(created.stdout) as Created;
      expect(info).toMatchObject({ name: 'ci-deploy', role: 'editor', environments: ['live'] });
      // The listing and a refused write change nothing: run at the same time.
      const [ls, put] = await Promise.all([run(['token', 'ls']), run(['env', 'create', 'newenv'], info.token)]);
      expect(ls.code).toBe(0);
      expect(ls.stdout).toMatch(/ci-deploy\s+editor\s+live/);
      expect(ls.stdout.includes(info.token)).toBe(false);

      expect(put.code).toBe(1);
      expect(put.stderr).toMatch(/forbidden_role/);
      const write = await run(['key', 'create', '--env', 'live'], info.token);
      expect(write.code).toBe(0);
      const audit = await admin(srv, 'GET', 'audit?limit=1');
      expect((audit.json as { entries: { actor: string; action: string }[] }).entries[0]).toMatchObject({ actor: 'ci-deploy', action: 'key.create' });

      const revoke = await run(['token', 'revoke', 'ci-deploy']);
      expect(revoke.code).toBe(0);
      const refused = await run(['env', 'ls'], info.token);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/unauthorized/);
    });
  }
});
