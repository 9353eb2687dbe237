/**
 * runAdminCommand in-process against a real admin server (loopback HTTP, memory store). The CLI as
 * a subprocess against the real server process is covered in test/e2e/admin-cli.test.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCommand } from '../../../../src/admin/client/commands.js';
import type { CliIO } from '../../../../src/admin/client/context.js';
import { startAdminServer, type AdminServer } from '../../../../src/admin/server/server.js';
import { openAdminState } from '../../../../src/admin/server/open-state.js';
import type { AdminStateStore } from '../../../../src/admin/server/state.js';
import { openStore } from '../../../../src/store/index.js';
import type { Store } from '../../../../src/store/types.js';
import { parseAnswer, parseBundle } from '../../../helpers/answers.js';

let store: Store;
let state: AdminStateStore;
let server: AdminServer;
let dir: string;
let adminUrl: string;

beforeAll(async () => {
  store = await openStore('memory:');
  state = openAdminState(store.readerUrl);
  server = await startAdminServer({
    host: '127.0.0.1', port: 0, token: 'cli-token', store, state, onChange: () => Promise.resolve(null), log: () => undefined,
    webhooks: { allowPrivateTargets: true },
  });
  adminUrl = `http://127.0.0.1:${server.port}`;
  dir = mkdtempSync(join(tmpdir(), 'rcd-cli-'));
  writeFileSync(join(dir, 'admin-token'), 'cli-token\n', { mode: 0o600 });
});

afterAll(async () => {
  await server.close();
  await state.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number;
  out: string;
  err: string;
}

async function rcd(args: string[], env: NodeJS.ProcessEnv = { RCD_DATA_DIR: '' }): Promise<Run> {
  let out = '';
  let err = '';
  const io: CliIO = {
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    env,
    readInput: (file) => readFile(file),
  };
  const code = await runAdminCommand([...args, '--admin-url', adminUrl, '--data-dir', dir], io);
  return { code, out, err };
}

describe('rcd admin commands (in-process)', () => {
  it('creates environments and lists them as a table or JSON', async () => {
    expect(await rcd(['env', 'create', 'dev'])).toEqual({ code: 0, out: 'created environment dev\n', err: '' });
    expect((await rcd(['env', 'create', 'dev'])).out).toBe('environment dev already exists\n');
    const table = await rcd(['env', 'ls']);
    expect(table.out.split('\n')[0]).toMatch(/^ENV\s+CONTENT\s+KEYS\s+CREATED$/);
    expect(table.out).toMatch(/\ndev\s+0\s+0\s+\d{4}-/);
    const json = parseAnswer((await rcd(['env', 'ls', '--json'])).out);
    expect(json.environments?.map((e: { id: string }) => e.id)).toEqual(['dev']);
  });

  it('puts, shows and rolls back content from files', async () => {
    const file = join(dir, 'settings.jsonc');
    writeFileSync(file, '{\n  // comment\n  "speed": 1\n}\n');
    const put = await rcd(['content', 'put', file, '--env', 'dev', '--id', 'Settings']);
    expect(put.code).toBe(0);
    expect(put.out).toMatch(/^Settings: revision 1, hash [0-9a-f]{32}\n$/);
    writeFileSync(file, '{"speed":2}');
    expect((await rcd(['content', 'put', file, '--env', 'dev', '--id', 'Settings', '--min-app-version', '2.0.0'])).out).toMatch(/revision 2/);
    expect((await rcd(['content', 'get', '--env', 'dev', '--id', 'settings'])).out).toBe('{"speed":2}\n');
    expect((await rcd(['content', 'get', '--env', 'dev', '--id', 'settings', '--revision', '1'])).out).toContain('// comment');
    const history = await rcd(['content', 'history', '--env', 'dev', '--id', 'Settings']);
    expect(history.out).toMatch(/REVISION\s+HASH\s+MIN APP VERSION\s+CREATED/);
    expect(history.out).toMatch(/\n2\s+[0-9a-f]{32}\s+2\.0\.0/);
    expect((await rcd(['content', 'rollback', '--env', 'dev', '--id', 'Settings', '--to', '1'])).out).toMatch(/revision 1 restored as revision 3/);
    expect((await rcd(['content', 'ls', '--env', 'dev'])).out).toMatch(/\nSettings\s+[0-9a-f]{32}\s+3\s+no/);
  });

  it('prints the server error and exits 1 when a write is refused', async () => {
    const bad = join(dir, 'bad.jsonc');
    writeFileSync(bad, '{"a":');
    const r = await rcd(['content', 'put', bad, '--env', 'dev', '--id', 'Bad']);
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/^rcd: .+ \(invalid_content, HTTP 400\)\n/);
    const j = await rcd(['content', 'put', bad, '--env', 'dev', '--id', 'Bad', '--json']);
    expect(parseAnswer(j.err).error?.code).toBe('invalid_content');
  });

  it('refuses usage errors with exit 2 and prints per-command help', async () => {
    const missing = await rcd(['content', 'put', 'x.json', '--env', 'dev']);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('--id is required');
    expect((await rcd(['env', 'frobnicate'])).code).toBe(2);
    const help = await rcd(['key', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('rcd key create --env ENV');
    expect((await runAdminCommand(['nonsense'], { stdout: () => undefined, stderr: () => undefined, env: {}, readInput: () => Promise.resolve(Buffer.alloc(0)) }))).toBe(2);
  });

  it('fails clearly without a token or without a server', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'rcd-cli-empty-'));
    try {
      let err = '';
      const io: CliIO = { stdout: () => undefined, stderr: (t) => void (err += t), env: {}, readInput: () => Promise.resolve(Buffer.alloc(0)) };
      expect(await runAdminCommand(['env', 'ls', '--data-dir', empty, '--admin-url', adminUrl], io)).toBe(1);
      expect(err).toContain('no admin token');
      err = '';
      expect(await runAdminCommand(['env', 'ls', '--admin-url', 'http://127.0.0.1:1'], { ...io, env: { RCD_ADMIN_TOKEN: 'x' } })).toBe(1);
      expect(err).toContain('cannot reach the admin API at http://127.0.0.1:1');
      err = '';
      expect(await runAdminCommand(['env', 'ls', '--admin-url', adminUrl], { ...io, env: { RCD_ADMIN_TOKEN: 'wrong' } })).toBe(1);
      expect(err).toMatch(/unauthorized, HTTP 401/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('creates keys shown once, syncs, manages webhooks and reads the audit log', async () => {
    const key = await rcd(['key', 'create', '--env', 'dev', '--json']);
    const { id, key: plain } = JSON.parse(key.out) as { id: string; key: string };
    const ls = await rcd(['key', 'ls', '--env', 'dev']);
    expect(ls.out).toContain(id);
    expect(ls.out).not.toContain(plain);
    expect((await rcd(['key', 'revoke', id, '--env', 'dev'])).out).toBe(`revoked key ${id}\n`);

    await rcd(['env', 'create', 'prod']);
    const sync = await rcd(['sync', 'dev', 'prod', 'Settings']);
    expect(sync.out).toMatch(/ID\s+ACTION\s+HASH\nSettings\s+created\s+[0-9a-f]{32}/);

    const hook = await rcd(['webhook', 'add', 'http://127.0.0.1:9/h', '--events', 'content.updated,mapping.updated']);
    expect(hook.out).toMatch(/^webhook (wh_[0-9a-f]+) -> http:\/\/127\.0\.0\.1:9\/h \(content\.updated, mapping\.updated\)\nsecret: \S+/);
    const hookId = /webhook (wh_[0-9a-f]+)/.exec(hook.out)![1]!;
    expect((await rcd(['webhook', 'ls'])).out).toContain(hookId);
    expect((await rcd(['webhook', 'rm', hookId])).code).toBe(0);

    const audit = await rcd(['audit', '--limit', '3']);
    expect(audit.out.split('\n')[0]).toMatch(/^ID\s+AT\s+WHO\s+ACTION/);
    expect(audit.out).toMatch(/cli\s+webhook\.delete/);
    expect(audit.out.trim().split('\n')).toHaveLength(4);
  });

  it('imports and exports bundles through the admin API', async () => {
    const out = join(dir, 'export.json');
    expect((await rcd(['export', '--out', out])).code).toBe(0);
    const exported = (await rcd(['export'])).out;
    expect(parseBundle(exported).environments.dev?.content).toHaveProperty('Settings');
    const again = await rcd(['import', out, '--json']);
    expect(JSON.parse(again.out)).toMatchObject({ environmentsCreated: 0, revisionsAdded: 0 });
  });
});
