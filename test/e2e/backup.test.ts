/**
 * The backup and restore procedure of docs/operations.md, done as written on a real server and a
 * real SQLite file: `sqlite3 rcd.db "VACUUM INTO '…'"` while the server serves and takes admin
 * writes, the copy and the data directory's secret files restored into a new data directory, a
 * server started on it: it answers as the original did at one moment of the backup, keys included.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

const SQLITE3 = '/usr/bin/sqlite3';
const TOKEN = 'test-admin-token';
const USERS = ['player-1', 'player-2', 'player-3'];
const dirs: string[] = [];
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const s of servers) await s.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function sqlite3(args: readonly string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    execFile(SQLITE3, args, { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, out: stdout + stderr });
    });
  });
}

async function adminPut(server: ServerProcess, path: string, body: string): Promise<number> {
  const res = await fetch(`${server.adminUrl!}/admin/v1${path}`, { method: 'PUT', headers: { authorization: `Bearer ${TOKEN}` }, body });
  await res.text();
  return res.status;
}

/** What clients see of the demo environment: the catalog and every user's dynamic answer. */
async function answers(server: ServerProcess, key: string): Promise<string> {
  const parts = [(await call(server.url, '/api/v1/env/catalog', { key, method: 'GET' })).text];
  for (const u of USERS) {
    const r = await call(server.url, '/api/v1/config/PlayerSettings/dynamic', { key, body: JSON.stringify({ u, p: { level: 12 }, v: '1.0.0' }) });
    expect(r.status).toBe(200);
    parts.push(r.text);
  }
  return parts.join('\n');
}

describe('backup while serving, restore into a new data directory', () => {
  it('the restored server answers as the original did at a moment of the backup, with the same keys', async () => {
    expect(existsSync(SQLITE3), `${SQLITE3} is missing: apt-get install sqlite3 (.ci/run does)`).toBe(true);
    const original = await startServer({ admin: true, seedDemo: true });
    servers.push(original);
    const key = readFileSync(join(original.dir, 'demo-api-key'), 'utf8').trim();

    // Every state the original was in while the backup ran: before, and after each write answered.
    const states = new Set<string>([await answers(original, key)]);
    let writing = true;
    let writes = 0;
    const writer = (async (): Promise<void> => {
      while (writing) {
        writes++;
        expect(await adminPut(original, '/environments/demo/content/PlayerSettings', `{"difficulty":"hard","edit":${writes}}`)).toBe(200);
        states.add(await answers(original, key));
      }
    })();
    // Delivery load beside the writes: the backup must not disturb either.
    let served = 0;
    const reader = (async (): Promise<void> => {
      while (writing) {
        expect((await call(original.url, '/api/v1/config/StoreLayout', { key })).status).toBe(200);
        served++;
      }
    })();
    await new Promise((r) => setTimeout(r, 300));

    const backup = join(tempDir('rcd-backup-'), 'rcd.db');
    dirs.push(join(backup, '..'));
    const vacuum = await sqlite3([join(original.dir, 'rcd.db'), `VACUUM INTO '${backup}'`]);
    expect(vacuum.out).toBe('');
    expect(vacuum.code).toBe(0);

    await new Promise((r) => setTimeout(r, 300));
    writing = false;
    await Promise.all([writer, reader]);
    expect(writes).toBeGreaterThan(2);
    expect(served).toBeGreaterThan(0);
    // A write after the backup: the restored server must not have it.
    expect(await adminPut(original, '/environments/demo/content/PlayerSettings', '{"difficulty":"after-the-backup"}')).toBe(200);
    const latest = await answers(original, key);

    const check = await sqlite3([backup, 'PRAGMA integrity_check']);
    expect(check.out.trim()).toBe('ok');

    // Restore: the database copy and the data directory's files, into a directory of its own.
    const restored = tempDir('rcd-restored-');
    dirs.push(restored);
    copyFileSync(backup, join(restored, 'rcd.db'));
    for (const file of ['webhook-key', 'demo-api-key']) copyFileSync(join(original.dir, file), join(restored, file));
    const server = await startServer({ dir: restored, admin: true });
    servers.push(server);

    const seen = await answers(server, key);
    expect(states.has(seen)).toBe(true);
    expect(seen).not.toBe(latest);
    expect(seen).not.toContain('after-the-backup');
    // It takes writes and serves them, like the original.
    expect(await adminPut(server, '/environments/demo/content/PlayerSettings', '{"difficulty":"restored"}')).toBe(200);
    const r = await call(server.url, '/api/v1/config/PlayerSettings', { key });
    expect(r.json).toEqual({ difficulty: 'restored' });
  }, 90_000);
});
