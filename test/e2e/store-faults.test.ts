/**
 * The store locked under a running server, with a real SQLite file and a real second connection:
 * delivery keeps answering at once, admin writes answer 503 store_busy with Retry-After once
 * --store-busy-timeout has passed, and nothing is half-written. Both are bounds in time, so this file
 * runs alone; store-unavailable.test.ts covers the store's files deleted or replaced.
 */
import Database from 'better-sqlite3';
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
