/**
 * GET /readyz through a store outage: 503 store_unavailable once a real PostgreSQL has been stopped
 * for longer than --ready-store-outage, while /healthz stays 200 (degraded) and delivery goes on from
 * the front cache, then 200 again once the database returns. A store outage on the wall clock, so this
 * file is in npm run test:slow (readiness.test.ts keeps starting and draining in npm test).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { call, readinessOf, startServer, type ServerProcess } from '../helpers/server-process.js';
import { createDatabase, startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

const KEY = 'key-ready-1';
let srv: ServerProcess | null = null;
let pg: RunningPostgres | null = null;

afterAll(async () => {
  await srv?.dispose();
  await pg?.destroy();
});

describe('readiness', () => {
  it('503 store_unavailable once the store is unreachable longer than --ready-store-outage; /healthz stays 200', async () => {
    pg = await startPostgres();
    const storeUrl = (await createDatabase(pg.url)).url;
    const server = await startServer({
      store: storeUrl,
      bundle: { environments: { prod: { keys: [KEY], content: { Shop: { json: { a: 1 } } } } } },
      // One delivery loop: the answer fetched below is then in the front cache that answers during the outage.
      args: ['--ready-store-outage', '1500', '--http-threads', '1'],
    });
    srv = server;
    expect(await readinessOf(server.url)).toEqual({ status: 200, code: undefined });
    expect((await call(server.url, '/api/v1/config/Shop', { key: KEY })).json).toEqual({ a: 1 });
    await pg.stop();
    const downAt = Date.now();
    await until('/readyz to report the store', async () => (await readinessOf(server.url)).code === 'store_unavailable', 20_000);
    // Not before the bound (the store check runs every second, so the outage is noticed up to 1 s late).
    expect(Date.now() - downAt).toBeGreaterThanOrEqual(1500);
    const health = await call(server.url, '/healthz', { method: 'GET', key: null, contentType: null });
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ status: 'degraded', store: 'unavailable' });
    // Delivery goes on from what is loaded (the front cache).
    expect((await call(server.url, '/api/v1/config/Shop', { key: KEY })).json).toEqual({ a: 1 });
    await pg.start();
    await until('/readyz to be 200 again', async () => (await readinessOf(server.url)).status === 200, 20_000);
  }, 120_000);
});
