/**
 * Key-use bookkeeping: the delivery loop reports the keys it saw to the control thread, which writes
 * `lastUsedAt`. On SIGTERM the last report is written before the store closes, so a key used just
 * before a stop shows as used after the restart.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';

const USED = 'key-use-test-key-1';
const UNUSED = 'key-use-test-key-2';
const BUNDLE = { environments: { live: { keys: [USED, UNUSED], content: { A: { json: { a: 1 } } } } } };

let server: ServerProcess | undefined;
afterAll(async () => {
  await server?.dispose();
  if (server !== undefined) rmSync(server.dir, { recursive: true, force: true });
});

async function keys(): Promise<{ lastUsedAt: string | null }[]> {
  const res = await fetch(`${server!.adminUrl}/admin/v1/environments/live/keys`, { headers: { authorization: 'Bearer test-admin-token' } });
  return ((await res.json()) as { keys: { lastUsedAt: string | null }[] }).keys;
}

describe('key use', () => {
  it('is recorded when the server stops, and survives the restart', async () => {
    server = await startServer({ admin: true, bundle: BUNDLE });
    const before = Date.now();
    expect((await call(server.url, '/api/v1/config/A', { key: USED })).status).toBe(200);
    expect(await server.stop()).toBe(0);

    server = await startServer({ admin: true, dir: server.dir });
    const used = (await keys()).map((k) => k.lastUsedAt);
    expect(used.filter((u) => u === null)).toHaveLength(1);
    const stamp = used.find((u) => u !== null)!;
    expect(Date.parse(stamp)).toBeGreaterThanOrEqual(before - 1000);
  });
});
