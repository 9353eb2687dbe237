/**
 * `rcd import`, `rcd export` and `rcd migrate` on a real PostgreSQL database: a SQLite store copied
 * into PostgreSQL keeps every revision, mapping and active key (clients' keys keep working on a
 * node serving the copy); a second migrate into the filled database is refused and changes nothing.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';
import { BIN, call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { createDatabase } from '../helpers/postgres.js';

const MAPPING = { rules: [{ segment: 'vip', when: { tier: 'vip' }, patch: { level: 99 } }] };
let db: { url: string; drop: () => Promise<void> };
let dir: string;
const running: ServerProcess[] = [];

beforeEach(async () => {
  db = await createDatabase();
  dir = tempDir();
});
afterEach(async () => {
  for (const s of running.splice(0)) await s.dispose();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
});

function rcd(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', cwd: dir });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('rcd migrate / import / export with a PostgreSQL store', () => {
  it('copies a SQLite store into PostgreSQL: revisions, mappings and active keys; refuses a filled target', async () => {
    const sqliteUrl = `sqlite:${join(dir, 'rcd.db')}`;
    const src = await openStore(sqliteUrl);
    await src.putEnvironment('prod');
    await src.putEnvironment('dev');
    await src.createKey('prod', 'prod-client-key-0001');
    const revoked = await src.createKey('prod', 'prod-revoked-key-0002');
    await src.revokeKey('prod', revoked.id);
    await src.putContent('prod', 'Shop', '{\n  // first\n  "level": 1\n}', null);
    await src.putContent('prod', 'Shop', '{"level": 2}', '2.0.0');
    await src.putMapping('prod', 'Shop', MAPPING);
    await src.putContent('dev', 'Straße', '{"x": true}', null);
    const exported = await src.exportBundle();
    const keys = (await src.loadDirectory()).keys;
    await src.close();

    const run = rcd('migrate', '--from', sqliteUrl, '--to', db.url);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ environmentsCreated: 2, keysAdded: 1, revisionsAdded: 3, mappingsChanged: 1 });

    const pg = await openStore(db.url);
    try {
      expect(await pg.exportBundle()).toEqual(exported);
      expect((await pg.loadDirectory()).keys).toEqual(keys);
    } finally {
      await pg.close();
    }
    // rcd export on the PostgreSQL store writes the same bundle.
    const out = rcd('export', '--store', db.url);
    expect(out.status).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual(exported);

    // Into a filled database: refused with a stable code, nothing changed.
    const again = rcd('migrate', '--from', sqliteUrl, '--to', db.url);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('conflict');

    // A node on the copy serves the client's existing key.
    const node = await startServer({ dir, store: db.url });
    running.push(node);
    const r = await call(node.url, '/api/v1/config/shop', { key: 'prod-client-key-0001', body: '{"v":"2.0.0"}' });
    expect(r.json).toEqual({ level: 2 });
    expect((await call(node.url, '/api/v1/config/shop', { key: 'prod-revoked-key-0002' })).status).toBe(401);
  }, 60_000);

  it('rcd import --store postgres:// imports a bundle, idempotently', () => {
    const file = join(dir, 'bundle.json');
    writeFileSync(file, JSON.stringify({ environments: { live: { keys: ['live-key-00000001'], content: { A: { json: { a: 1 } } } } } }));
    const first = rcd('import', file, '--store', db.url);
    expect(first.status).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({ environmentsCreated: 1, keysAdded: 1, revisionsAdded: 1, mappingsChanged: 0, schedulesAdded: 0, rolloutsAdded: 0 });
    const second = rcd('import', file, '--store', db.url);
    expect(JSON.parse(second.stdout)).toEqual({ environmentsCreated: 0, keysAdded: 0, revisionsAdded: 0, mappingsChanged: 0, schedulesAdded: 0, rolloutsAdded: 0 });
    const bad = rcd('migrate', '--from', `sqlite:${join(dir, 'x.db')}`, '--to', `sqlite:${join(dir, 'y.db')}`);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('invalid_request');
  }, 60_000);
});
