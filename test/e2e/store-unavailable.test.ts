/**
 * The store's files deleted or replaced under a running server (real SQLite files): writes answer
 * 503 store_unavailable (never 2xx), the log and /healthz say so, and delivery goes on from the last
 * good state. store-faults.test.ts covers a store locked by another connection.
 */
import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'store-unavailable-key-1';
const BUNDLE = { environments: { live: { keys: [KEY], content: { Shop: { json: { price: 1 } } } } } };
const AUTH = { authorization: 'Bearer test-admin-token' };

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.dispose();
  server = undefined;
});

async function adminCall(method: string, path: string, body?: string): Promise<{ status: number; json: { error?: { code?: string } } & Record<string, unknown> }> {
  const res = await fetch(`${server!.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  return { status: res.status, json: (await res.json()) as { error?: { code?: string } } & Record<string, unknown> };
}

async function price(): Promise<{ status: number; price: unknown }> {
  const r = await call(server!.url, '/api/v1/config/Shop', { key: KEY });
  return { status: r.status, price: (r.json as { price?: unknown } | undefined)?.price };
}

async function health(): Promise<unknown> {
  return (await call(server!.url, '/healthz', { method: 'GET', key: null, contentType: null })).json;
}

describe('a store deleted or replaced under the running server', () => {
  it('refuses every write with 503 store_unavailable, logs it, reports it in /healthz, keeps delivering', async () => {
    server = await startServer({ admin: true, bundle: BUNDLE, args: ['--webhook-allow-private', 'true'] });
    expect(await health()).toEqual({ status: 'ok', seq: expect.any(Number) as unknown, loop: expect.any(Number) as unknown });
    for (const suffix of ['', '-wal', '-shm']) rmSync(join(server.dir, `rcd.db${suffix}`), { force: true });

    const writes = [
      await adminCall('PUT', 'environments/live/content/Shop', '{"price":3}'),
      await adminCall('PUT', 'environments/fresh'),
      await adminCall('POST', 'environments/live/keys'),
      await adminCall('DELETE', 'environments/live/content/Shop'),
      await adminCall('POST', 'webhooks', JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['content.updated'] })),
    ];
    for (const w of writes) {
      expect(w.status).toBe(503);
      expect(w.json.error?.code).toBe('store_unavailable');
    }
    // Delivery answers from the last good state.
    expect(await price()).toMatchObject({ status: 200, price: 1 });
    await expect.poll(health, { timeout: 5000 }).toEqual({ status: 'degraded', store: 'unavailable', seq: expect.any(Number) as unknown, loop: expect.any(Number) as unknown });
    await expect.poll(() => server!.stderr(), { timeout: 5000 }).toMatch(/rcd: error: the store is unavailable: .*rcd\.db was deleted/);

    // Nothing was acknowledged, so nothing is missing after a restart (on a new, empty store).
    const dir = server.dir;
    expect(await server.stop()).toBe(0);
    server = await startServer({ admin: true, dir });
    const envs = await adminCall('GET', 'environments');
    expect(envs.json.environments).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('treats a file renamed over the store as unavailable too', async () => {
    server = await startServer({ admin: true, bundle: BUNDLE });
    const path = join(server.dir, 'rcd.db');
    copyFileSync(path, `${path}.copy`);
    renameSync(`${path}.copy`, path);
    const put = await adminCall('PUT', 'environments/live/content/Shop', '{"price":4}');
    expect(put.status).toBe(503);
    expect(put.json.error?.code).toBe('store_unavailable');
    await expect.poll(health, { timeout: 5000 }).toEqual({ status: 'degraded', store: 'unavailable', seq: expect.any(Number) as unknown, loop: expect.any(Number) as unknown });
    expect((await price()).price).toBe(1);
  });
});
