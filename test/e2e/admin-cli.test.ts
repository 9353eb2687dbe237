/**
 * The `rcd` management CLI driven as a subprocess against the real server process. The server runs
 * without RCD_ADMIN_TOKEN, so it generates a token file in its data directory and the CLI reads it
 * from there, the way an operator on the same machine works.
 */
import { execFile } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, call, startServer, type ServerProcess } from '../helpers/server-process.js';
import { field, parseAnswer, parseBundle } from '../helpers/answers.js';

let srv: ServerProcess;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  if (extra.RCD_ADMIN_TOKEN === undefined) delete env.RCD_ADMIN_TOKEN;
  delete env.RCD_ADMIN_URL;
  delete env.RCD_DATA_DIR;
  return env;
}

function rcd(args: string[], opts: { env?: Record<string, string>; input?: string; withServer?: boolean } = {}): Promise<Run> {
  const full = opts.withServer === false ? args : [...args, '--admin-url', srv.adminUrl!, '--data-dir', srv.dir];
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...full], { env: cleanEnv(opts.env), cwd: srv.dir }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1;
      resolve({ code, stdout, stderr });
    });
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

beforeAll(async () => {
  srv = await startServer({ admin: true, env: { RCD_ADMIN_TOKEN: '' }, args: ['--webhook-allow-private', 'true'] });
});

afterAll(async () => {
  await srv?.dispose();
});

describe('rcd CLI against a running server', () => {
  it('the server wrote a 0600 token file that the CLI uses', async () => {
    const tokenFile = join(srv.dir, 'admin-token');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(srv.stdout() + srv.stderr()).toContain(tokenFile);
    const r = await rcd(['env', 'create', 'dev']);
    expect(r).toEqual({ code: 0, stdout: 'created environment dev\n', stderr: '' });
  });

  it('refuses with the server message and a non-zero exit on a wrong token', async () => {
    const r = await rcd(['env', 'ls'], { env: { RCD_ADMIN_TOKEN: 'not-the-token' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/unauthorized, HTTP 401/);
    expect(r.stdout).toBe('');
  });

  it('manages keys and content end to end; the delivery API serves the result', async () => {
    const key = await rcd(['key', 'create', '--env', 'dev']);
    expect(key.code).toBe(0);
    const apiKey = /api key: (\S+)/.exec(key.stdout)![1]!;
    const keyId = /key id: +(\S+)/.exec(key.stdout)![1]!;
    const file = join(srv.dir, 'hud.jsonc');
    writeFileSync(file, '{\n  /* HUD */\n  "scale": 1.5\n}\n');
    // Runs that do not depend on each other run at the same time (here and below).
    const [ls, put] = await Promise.all([rcd(['key', 'ls', '--env', 'dev']), rcd(['content', 'put', file, '--env', 'dev', '--id', 'Hud'])]);
    expect(ls.stdout).toContain(keyId);
    expect(ls.stdout).not.toContain(apiKey);
    expect(put.code).toBe(0);
    const hash = /hash ([0-9a-f]{32})/.exec(put.stdout)![1]!;
    expect((await call(srv.url, '/api/v1/config/hud/dynamic', { key: apiKey })).json).toMatchObject({ data: { scale: 1.5 }, hash });

    const fromStdin = await rcd(['content', 'put', '-', '--env', 'dev', '--id', 'Hud', '--min-app-version', '2.0.0'], { input: '{"scale":2}' });
    expect(fromStdin.stdout).toMatch(/revision 2/);
    expect((await call(srv.url, '/api/v1/config/hud', { key: apiKey, body: '{"v":"2.1.0"}' })).json).toEqual({ scale: 2 });
    expect((await call(srv.url, '/api/v1/config/hud', { key: apiKey, body: '{"v":"1.0.0"}' })).json).toEqual({ scale: 1.5 });

    const history = await rcd(['content', 'history', '--env', 'dev', '--id', 'hud']);
    expect(history.stdout.trim().split('\n')).toHaveLength(3);
    expect((await rcd(['content', 'rollback', '--env', 'dev', '--id', 'Hud', '--to', '1'])).code).toBe(0);
    expect((await call(srv.url, '/api/v1/config/hud', { key: apiKey, body: '{"v":"2.1.0"}' })).json).toEqual({ scale: 1.5 });
    // A refused put writes nothing: the listing beside it counts 3 revisions either way.
    const [got, bad, listing] = await Promise.all([
      rcd(['content', 'get', '--env', 'dev', '--id', 'Hud']),
      rcd(['content', 'put', '-', '--env', 'dev', '--id', 'Hud'], { input: '{"scale":}' }),
      rcd(['content', 'ls', '--env', 'dev', '--json']),
    ]);
    expect(got.stdout).toContain('/* HUD */');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid_content, HTTP 400/);
    const listed = parseAnswer(listing.stdout);
    expect(listed.content).toEqual([expect.objectContaining({ id: 'Hud', revisionCount: 3 })]);

    const mapping = join(srv.dir, 'hud.mapping.json');
    writeFileSync(mapping, JSON.stringify({ rules: [{ segment: 'big', when: { screen: { $lt: 7 } }, patch: { scale: 3 } }] }));
    expect((await rcd(['mapping', 'put', mapping, '--env', 'dev', '--id', 'Hud'])).stdout).toBe('Hud: mapping stored (1 rules)\n');
    const small = await call(srv.url, '/api/v1/config/hud/dynamic', { key: apiKey, body: '{"p":{"screen":6}}' });
    expect(small.json).toMatchObject({ data: { scale: 3 }, meta: { seg: [{ n: 'big', v: null }] } });
    writeFileSync(mapping, JSON.stringify({ rules: [{ segment: 'bad', when: { screen: { $lt: 7 } } }] }));
    // The refused mapping is refused on its own shape, whether the stored one is removed before or after.
    const [badMapping, removed] = await Promise.all([rcd(['mapping', 'put', mapping, '--env', 'dev', '--id', 'Hud']), rcd(['mapping', 'rm', '--env', 'dev', '--id', 'Hud'])]);
    expect(badMapping.code).toBe(1);
    expect(badMapping.stderr).toMatch(/invalid_mapping/);
    expect(removed.code).toBe(0);
    expect((await call(srv.url, '/api/v1/config/hud/dynamic', { key: apiKey, body: '{"p":{"screen":6}}' })).json).toMatchObject({ meta: { seg: [] } });

    expect((await rcd(['key', 'revoke', keyId, '--env', 'dev'])).code).toBe(0);
    expect((await call(srv.url, '/api/v1/config/hud', { key: apiKey })).status).toBe(401);
    // Some twenty CLI runs one after another: a loaded machine needs more than the default 30 s.
  }, 60_000);

  it('syncs between environments, lists environments and removes them', async () => {
    expect((await rcd(['env', 'create', 'prod'])).code).toBe(0);
    const prodKey = field(parseAnswer((await rcd(['key', 'create', '--env', 'prod', '--json'])).stdout).key, 'key');
    expect((await call(srv.url, '/api/v1/config/hud', { key: prodKey })).status).toBe(404);
    const sync = await rcd(['sync', 'dev', 'prod', 'Hud']);
    expect(sync.stdout).toMatch(/Hud\s+created\s+[0-9a-f]{32}/);
    expect((await call(srv.url, '/api/v1/config/hud', { key: prodKey })).json).toEqual({ scale: 1.5 });
    // The refused removal changes nothing, so the listing beside it is the same either way.
    const [envs, refused] = await Promise.all([rcd(['env', 'ls']), rcd(['env', 'rm', 'prod'])]);
    expect(envs.stdout).toMatch(/\ndev\s+1\s+\d+/);
    expect(envs.stdout).toMatch(/\nprod\s+1\s+1/);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/conflict, HTTP 409/);
    expect((await rcd(['env', 'rm', 'prod', '--force'])).stdout).toBe('deleted environment prod (1 content items)\n');
  });

  it('manages webhooks, shows the audit log, and imports/exports bundles', async () => {
    const add = await rcd(['webhook', 'add', 'http://127.0.0.1:9/x', '--events', 'content.deleted', '--secret', 's3']);
    expect(add.stdout).toMatch(/^webhook wh_\w+ -> http:\/\/127\.0\.0\.1:9\/x \(content\.deleted\)\n$/);
    const id = /webhook (wh_\w+)/.exec(add.stdout)![1]!;
    expect((await rcd(['webhook', 'ls'])).stdout).toContain(id);
    expect((await rcd(['webhook', 'rm', id])).code).toBe(0);

    const [audit, auditJson, exported] = await Promise.all([rcd(['audit', '--limit', '5']), rcd(['audit', '--json', '--limit', '1000']), rcd(['export'])]);
    expect(audit.stdout).toMatch(/cli\s+webhook\.delete/);
    const entries = field(parseAnswer(auditJson.stdout).entries, 'entries');
    expect(entries.every((e) => e.actor === 'cli')).toBe(true);
    expect(entries.map((e) => e.action)).toEqual(expect.arrayContaining(['environment.create', 'key.create', 'key.revoke', 'content.put', 'content.rollback', 'mapping.put', 'mapping.delete', 'environment.sync', 'environment.delete']));

    expect(exported.code).toBe(0);
    const bundle = parseBundle(exported.stdout);
    expect(bundle.environments.dev?.content?.Hud).toBeDefined();
    bundle.environments.fresh = { keys: ['fresh-key-0123456789abcdef'], content: { Hello: { json: { hi: 1 } } } };
    const file = join(srv.dir, 'bundle.json');
    writeFileSync(file, JSON.stringify(bundle));
    const imported = await rcd(['import', file, '--json']);
    expect(JSON.parse(imported.stdout)).toEqual({ environmentsCreated: 1, keysAdded: 1, revisionsAdded: 1, mappingsChanged: 0, schedulesAdded: 0, rolloutsAdded: 0, propagation: { seq: expect.any(Number) as unknown, nodes: 1, applied: 1, missed: [] } });
    expect((await call(srv.url, '/api/v1/config/hello', { key: 'fresh-key-0123456789abcdef' })).json).toEqual({ hi: 1 });
  });

  it('prints help per command and exits 2 on usage errors', async () => {
    const [help, usage, down] = await Promise.all([
      rcd(['content', '--help'], { withServer: false }),
      rcd(['content', 'put', 'x.json'], { withServer: false, env: { RCD_ADMIN_TOKEN: 't' } }),
      rcd(['env', 'ls', '--admin-url', 'http://127.0.0.1:1'], { withServer: false, env: { RCD_ADMIN_TOKEN: 't' } }),
    ]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('rcd content put FILE --env ENV --id ID [--min-app-version X.Y.Z]');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--env is required');
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot reach the admin API');
  });
});
