/**
 * The store failing under a running server, with real SQLite files and a real second connection:
 * - another connection holds the write lock: delivery keeps answering at once, admin writes answer
 *   503 store_busy with Retry-After once --store-busy-timeout has passed, and nothing is half-written;
 * - the store's files are deleted or replaced: writes answer 503 store_unavailable (never 2xx),
 *   the log and /healthz say so, and delivery goes on from the last good state.
 */
import Database from 'better-sqlite3';
import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'store-faults-key-1';
const BUNDLE = { environments: { live: { keys: [KEY], content: { Shop: { json: { price: 1 } } } } } };
const AUTH = { authorization: 'Bearer test-admin-token' };

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.dispose();
  server = undefined;
});

interface AdminReply {
  status: number;
  headers: Headers;
  json: { error?: { code?: string } } & Record<string, unknown>;
  ms: number;
}

async function adminCall(method: string, path: string, body?: string): Promise<AdminReply> {
  const started = performance.now();
  const res = await fetch(`${server!.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  const json = (await res.json()) as AdminReply['json'];
  return { status: res.status, headers: res.headers, json, ms: performance.now() - started };
}

async function price(): Promise<{ status: number; price: unknown; ms: number }> {
  const started = performance.now();
  const r = await call(server!.url, '/api/v1/config/Shop', { key: KEY });
  return { status: r.status, price: (r.json as { price?: unknown } | undefined)?.price, ms: performance.now() - started };
}

async function health(): Promise<unknown> {
  return (await call(server!.url, '/healthz', { method: 'GET', key: null, contentType: null })).json;
}

describe('a store locked by another connection', () => {
  it('delays only the admin write, which answers 503 store_busy with Retry-After; delivery answers at once', async () => {
    server = await startServer({ admin: true, bundle: BUNDLE, args: ['--store-busy-timeout', '1000'] });
    const other = new Database(join(server.dir, 'rcd.db'));
    try {
      other.exec('BEGIN IMMEDIATE');
      let settled = false;
      const put = adminCall('PUT', 'environments/live/content/Shop', '{"price":2}').finally(() => (settled = true));
      // Delivery requests one after another for as long as the admin write waits on the lock.
      const during: { status: number; price: unknown; ms: number }[] = [];
      while (!settled) during.push(await price());
      const refused = await put;

      expect(refused.status).toBe(503);
      expect(refused.json.error?.code).toBe('store_busy');
      expect(refused.headers.get('retry-after')).toBe('1');
      // It waited for the lock (the busy timeout), and not much longer.
      expect(refused.ms).toBeGreaterThan(900);
      expect(refused.ms).toBeLessThan(3000);
      // Delivery went on the whole time. Before the store moved off the delivery thread every request
      // sent during the wait answered only after it (>= 1000 ms). The bound leaves room for a loaded CI box.
      expect(during.length).toBeGreaterThan(5);
      expect(during.every((r) => r.status === 200 && r.price === 1)).toBe(true);
      expect(Math.max(...during.map((r) => r.ms))).toBeLessThan(250);
      // Every other write answers the same way.
      const env = await adminCall('PUT', 'environments/other');
      expect(env.status).toBe(503);
      expect(env.json.error?.code).toBe('store_busy');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }

    // Nothing of the refused writes was kept; once the lock is gone the same write goes through, live.
    expect((await price()).price).toBe(1);
    const envs = await adminCall('GET', 'environments');
    expect((envs.json.environments as { id: string }[]).map((e) => e.id)).toEqual(['live']);
    const ok = await adminCall('PUT', 'environments/live/content/Shop', '{"price":2}');
    expect(ok.status).toBe(200);
    expect((await price()).price).toBe(2);
  }, 30_000);
});

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
