/**
 * The database goes away under delivery load, on a PostgreSQL server of this test's own (stopped
 * and started for real): delivery answers every request from what is loaded, admin writes answer
 * 503 store_unavailable within about a second, /healthz reports the store unreachable, a node
 * started meanwhile says so and keeps retrying; once the database is back, the nodes reconnect,
 * catch up and serve what is written next. A database that stops under a stream of admin writes,
 * again and again, leaves every node running (a transaction's connection closing under it ends no
 * thread: src/store/postgres/transaction.ts); connections reset by the network under writes and
 * cache misses leave no call unanswered (connection.ts, lostConnectionsClosed).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, errorCode, healthOf, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { createDatabase, startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { startTcpRelay } from '../helpers/tcp-relay.js';
import { until } from '../helpers/until.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const ITEMS = 20;
// The propagation bound, raised from 2 s: the test machine is shared, and a restart is slow on it.
const SLOW_MACHINE = ['--propagation-timeout', '5000'];
let pg: RunningPostgres;
let storeUrl: string;
const running: ServerProcess[] = [];

beforeAll(async () => {
  pg = await startPostgres();
  storeUrl = (await createDatabase(pg.url)).url;
}, 60_000);
afterEach(async () => {
  for (const s of running.splice(0).reverse()) await s.dispose();
});
afterAll(async () => {
  await pg.destroy();
});

async function admin(srv: ServerProcess, method: string, path: string, body?: string, timeoutMs = 10_000): Promise<{ status: number; code: string | undefined; ms: number }> {
  const t = Date.now();
  let res: Response;
  try {
    res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body, signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    // Not reached at all: say whether the server is still running and what it last wrote.
    const state = srv.child.exitCode === null && srv.child.signalCode === null ? 'still running' : `exited (code ${srv.child.exitCode}, signal ${srv.child.signalCode})`;
    throw new Error(`${method} ${path}: ${(err as Error).message}; the server ${state}; its output ends:\n${srv.stdout().slice(-1500)}\n${srv.stderr().slice(-1500)}`, { cause: err });
  }
  const json = (await res.json()) as { error?: { code?: string } };
  return { status: res.status, code: json.error?.code, ms: Date.now() - t };
}

/** Creates environment `env` through `srv` and answers a delivery key of it. */
async function environmentWithKey(srv: ServerProcess, env: string): Promise<string> {
  expect((await admin(srv, 'PUT', `environments/${env}`)).status).toBe(201);
  const res = await fetch(`${srv.adminUrl}/admin/v1/environments/${env}/keys`, { method: 'POST', headers: AUTH });
  return ((await res.json()) as { key: string }).key;
}

/** Requests in a loop over every item until stopped; counts answers that are not 200 with the right body. */
function deliveryLoad(srv: ServerProcess, key: string, workers: number): { stop: () => Promise<{ ok: number; failed: string[] }> } {
  let stopping = false;
  let ok = 0;
  const failed: string[] = [];
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = w; !stopping; i++) {
      const id = `item${i % ITEMS}`;
      try {
        const r = await call(srv.url, `/api/v1/config/${id}`, { key });
        if (r.status === 200 && (r.json as { n?: number }).n === i % ITEMS) ok++;
        else failed.push(`${id}: ${r.status} ${r.text.slice(0, 120)}`);
      } catch (err) {
        failed.push(`${id}: ${(err as Error).message}`);
      }
    }
  });
  return {
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
      return { ok, failed };
    },
  };
}

describe('PostgreSQL outage', () => {
  it('delivery goes on, writes answer 503 fast, health says so, and everything catches up when it returns', async () => {
    const dir = tempDir();
    const a = await startServer({ dir, admin: true, store: storeUrl, args: SLOW_MACHINE });
    running.push(a);
    const key = await environmentWithKey(a, 'live');
    for (let i = 0; i < ITEMS; i++) expect((await admin(a, 'PUT', `environments/live/content/item${i}`, `{"n":${i}}`)).status).toBe(200);
    // Every item served once: loaded on this node (routing, worker caches, front cache).
    for (let i = 0; i < ITEMS; i++) expect((await call(a.url, `/api/v1/config/item${i}`, { key })).status).toBe(200);

    const load = deliveryLoad(a, key, 8);
    await new Promise((r) => setTimeout(r, 300));
    await pg.stop();
    const downAt = Date.now();

    // Admin writes are refused with a stable code, each within about a second.
    const writes = [];
    for (let i = 0; i < 5; i++) writes.push(await admin(a, 'PUT', 'environments/live/content/item0', `{"n":0,"w":${i}}`));
    for (const w of writes) {
      expect(w.status).toBe(503);
      expect(w.code).toBe('store_unavailable');
      expect(w.ms).toBeLessThan(1500);
    }
    await until('/healthz to report the store unreachable', async () => (await healthOf(a)).store === 'unavailable', 5000);

    // A node started while the database is down says so and keeps retrying.
    const late = await startServer({ dir, admin: true, store: storeUrl, args: SLOW_MACHINE, readyWhen: /is unreachable.*retrying/ });
    running.push(late);
    await new Promise((r) => setTimeout(r, Math.max(0, 3000 - (Date.now() - downAt))));
    expect(late.child.exitCode).toBeNull();

    await pg.start();
    const upAt = Date.now();
    await until('/healthz to report the store available', async () => (await healthOf(a)).status === 'ok', 10_000);
    const recoveredMs = Date.now() - upAt;
    const result = await load.stop();
    expect(result.failed).toEqual([]);
    expect(result.ok).toBeGreaterThan(100);

    // The late node finishes its start; a write through it answers once both nodes applied it.
    await until('the late node to listen', () => Promise.resolve(/admin listening on/.test(late.stdout())), 15_000);
    const lateAdmin = /admin listening on (http:\/\/\S+)/.exec(late.stdout())![1]!;
    const lateUrl = /(?<!admin )listening on (http:\/\/\S+)/.exec(late.stdout())![1]!.replace('0.0.0.0', '127.0.0.1');
    const put = await fetch(`${lateAdmin}/admin/v1/environments/live/content/item1`, { method: 'PUT', headers: AUTH, body: '{"n":1,"after":true}' });
    expect(put.status).toBe(200);
    expect(put.headers.get('rcd-propagation')).toBe('2/2');
    expect((await call(a.url, '/api/v1/config/item1', { key })).json).toEqual({ n: 1, after: true });
    expect((await call(lateUrl, '/api/v1/config/item1', { key })).json).toEqual({ n: 1, after: true });
    // And through the first node again.
    const again = await admin(a, 'PUT', 'environments/live/content/item2', '{"n":2,"after":true}');
    expect(again.status).toBe(200);
    expect(errorCode(await call(a.url, '/api/v1/config/missing', { key }))).toBe('content_not_found');
    // The probe backs off to 1 s and the driver waits at most 0.5 s between attempts (its default
    // grows to 20 s after a few seconds of outage); the rest is slack for a slow machine.
    expect(recoveredMs).toBeLessThan(3000);
  }, 120_000);

  it('nodes stay up when the database stops under admin writes in flight, round after round, and write again once it returns', async () => {
    const dir = tempDir();
    const nodes = [await startServer({ dir, admin: true, store: storeUrl, args: SLOW_MACHINE }), await startServer({ dir, admin: true, store: storeUrl, args: SLOW_MACHINE })];
    running.push(...nodes);
    const key = await environmentWithKey(nodes[0]!, 'busy');
    for (let round = 0; round < 8; round++) {
      let stopping = false;
      const answered = new Map<number, number>();
      // Four writers a node, each rewriting an item of its own: transactions are in flight when the database stops.
      const writers = nodes.flatMap((n, ni) =>
        [0, 1, 2, 3].map(async (w) => {
          for (let k = 0; !stopping; k++) {
            const res = await fetch(`${n.adminUrl}/admin/v1/environments/busy/content/item${ni}${w}`, { method: 'PUT', headers: AUTH, body: `{"k":${k}}`, signal: AbortSignal.timeout(10_000) }).catch(() => null);
            if (res !== null) {
              await res.arrayBuffer();
              answered.set(res.status, (answered.get(res.status) ?? 0) + 1);
            }
          }
        }),
      );
      await new Promise((r) => setTimeout(r, 300 + ((round * 137) % 500)));
      await pg.stop();
      await new Promise((r) => setTimeout(r, 1000));
      stopping = true;
      await Promise.all(writers);
      for (const n of nodes) expect(n.child.exitCode, `round ${round}: ${n.stderr().slice(-2000)}`).toBeNull();
      // Only commits and the outage's 503 store_unavailable: no write answered anything else.
      expect([...answered.keys()].sort(), `round ${round}`).toEqual([200, 503]);
      await pg.start();
      await until(`round ${round}: both nodes to report the store available`, async () => (await Promise.all(nodes.map(healthOf))).every((h) => h.status === 'ok'), 15_000);
    }
    // Each node writes again, and both serve the write when it answers.
    for (const [i, n] of nodes.entries()) {
      const res = await fetch(`${n.adminUrl}/admin/v1/environments/busy/content/last${i}`, { method: 'PUT', headers: AUTH, body: `{"after":${i}}` });
      expect(res.status).toBe(200);
      expect(res.headers.get('rcd-propagation')).toBe('2/2');
      for (const m of nodes) expect((await call(m.url, `/api/v1/config/last${i}`, { key })).json).toEqual({ after: i });
    }
  }, 240_000);

  it('connections reset by the network under admin writes and cache misses: every call answers, and the node goes on', async () => {
    const relay = await startTcpRelay(storeUrl);
    try {
      const dir = tempDir();
      const node = await startServer({ dir, admin: true, store: relay.url, args: SLOW_MACHINE });
      running.push(node);
      const key = await environmentWithKey(node, 'reset');
      for (let i = 0; i < 4; i++) expect((await admin(node, 'PUT', `environments/reset/content/item${i}`, `{"n":${i},"v":0}`)).status).toBe(200);
      const unanswered: string[] = [];
      const statuses = new Map<string, number>();
      const count = (what: string): void => void statuses.set(what, (statuses.get(what) ?? 0) + 1);
      for (let round = 0; round < 6; round++) {
        let stopping = false;
        // Writers make new revisions; readers of the items then miss the workers' caches (a read of the store).
        const writers = [0, 1, 2, 3].map(async (w) => {
          for (let v = 1; !stopping; v++) {
            const r = await admin(node, 'PUT', `environments/reset/content/item${w}`, `{"n":${w},"v":${v}}`).catch((err: Error) => (unanswered.push(`write: ${err.message.slice(0, 200)}`), null));
            if (r !== null) count(`write ${r.status} ${r.code ?? ''}`);
          }
        });
        const readers = [0, 1, 2, 3].map(async (w) => {
          while (!stopping) {
            const r = await fetch(`${node.url}/api/v1/config/item${w}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '{}', signal: AbortSignal.timeout(10_000) }).catch((err: Error) => (unanswered.push(`delivery: ${err.message}`), null));
            if (r !== null) {
              await r.arrayBuffer();
              count(`delivery ${r.status}`);
            }
          }
        });
        await new Promise((r) => setTimeout(r, 200 + ((round * 149) % 400)));
        relay.reset();
        await new Promise((r) => setTimeout(r, 800));
        stopping = true;
        await Promise.all([...writers, ...readers]);
        expect(unanswered, `round ${round}`).toEqual([]);
        expect(node.child.exitCode, node.stderr().slice(-2000)).toBeNull();
        await until(`round ${round}: the store available again`, async () => (await healthOf(node)).status === 'ok', 15_000);
      }
      // Answers are commits and reads, or the outage's 503 store_unavailable: nothing else.
      for (const what of statuses.keys()) expect(what).toMatch(/^(write 200 |write 503 store_unavailable|delivery 200|delivery 503)$/);
      expect(statuses.get('write 200 ')).toBeGreaterThan(0);
      expect(statuses.get('delivery 200')).toBeGreaterThan(0);
      const last = await admin(node, 'PUT', 'environments/reset/content/item0', '{"n":0,"last":true}');
      expect(last.status).toBe(200);
      expect((await call(node.url, '/api/v1/config/item0', { key })).json).toEqual({ n: 0, last: true });
    } finally {
      await relay.stop();
    }
  }, 240_000);

  it('a silent partition (nothing answers, nothing closes): the node says so within seconds, answers every call, and goes on within about a second of the network healing', async () => {
    const relay = await startTcpRelay(storeUrl);
    try {
      const dir = tempDir();
      const node = await startServer({ dir, admin: true, store: relay.url, args: SLOW_MACHINE });
      running.push(node);
      const key = await environmentWithKey(node, 'quiet');
      expect((await admin(node, 'PUT', 'environments/quiet/content/item0', '{"n":0}')).status).toBe(200);
      expect((await call(node.url, '/api/v1/config/item0', { key })).status).toBe(200);

      relay.freeze();
      const frozenAt = Date.now();
      // A write in flight as the network goes silent, and one after it: each answers 503 store_unavailable.
      const inFlight = admin(node, 'PUT', 'environments/quiet/content/item1', '{"n":1}', 30_000);
      await until('/healthz to report the store unavailable', async () => (await healthOf(node)).store === 'unavailable', 15_000);
      const noticedMs = Date.now() - frozenAt;
      const first = await inFlight;
      expect([first.status, first.code]).toEqual([503, 'store_unavailable']);
      const next = await admin(node, 'PUT', 'environments/quiet/content/item2', '{"n":2}');
      expect([next.status, next.code]).toEqual([503, 'store_unavailable']);
      expect(next.ms).toBeLessThan(1500);
      // Delivery goes on from what the node has loaded.
      expect((await call(node.url, '/api/v1/config/item0', { key })).json).toEqual({ n: 0 });

      // The network heals for new connections; the frozen ones stay silent for good.
      relay.thaw();
      const thawedAt = Date.now();
      await until('/healthz to report the store available', async () => (await healthOf(node)).status === 'ok', 15_000);
      const recoveredMs = Date.now() - thawedAt;
      const after = await admin(node, 'PUT', 'environments/quiet/content/item3', '{"n":3}');
      expect(after.status).toBe(200);
      // A worker's own connection that went silent is found out by its next read: that request
      // answers 503 store_unavailable within the bound, and the next one reads on a new connection.
      const answers: string[] = [];
      await until('item3 delivered', async () => {
        const r = await call(node.url, '/api/v1/config/item3', { key });
        answers.push(r.status === 200 ? JSON.stringify(r.json) : `${r.status} ${errorCode(r)}`);
        return r.status === 200;
      }, 15_000);
      expect(answers.at(-1)).toBe('{"n":3}');
      for (const a of answers.slice(0, -1)) expect(a).toBe('503 store_unavailable');
      // Noticed by the heartbeat's 5 s bound (STALL_MS, and a beat); back within the probe's backoff (1 s) and a connection.
      expect(noticedMs).toBeLessThan(8000);
      expect(recoveredMs).toBeLessThan(4000);
    } finally {
      await relay.stop();
    }
  }, 120_000);
});
