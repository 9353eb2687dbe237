/**
 * The change stream against real servers, read by Node as SSE bytes: edits arrive as events naming the
 * changed ids and the catalog's new tag; a client resumes with Last-Event-ID on the same node or
 * another node of the store; heartbeats flow; --max-streams answers 503 with Retry-After; a revoked
 * key's stream ends. EventSource in Chromium: events-chromium.test.ts (test:slow).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventsStore, KEY, OTHER_KEY, adm, changes } from '../helpers/events-store.js';
import { rawCall } from '../helpers/http-raw.js';
import { NodeStream } from '../helpers/sse.js';
import type { ServerProcess } from '../helpers/server-process.js';

let store: EventsStore;
let srv: ServerProcess;

beforeAll(async () => {
  store = await EventsStore.start();
  srv = store.srv;
});

afterAll(async () => {
  await store?.dispose();
});

describe('change stream (Node client)', () => {
  it("announces its environment's edits, ids and the catalog tag, never content, with a jitter window and heartbeats", async () => {
    const s = new NodeStream(srv.url + '/api/v1/env/events', { 'x-api-key': KEY });
    const other = new NodeStream(srv.url + '/api/v1/env/events', { 'x-api-key': OTHER_KEY });
    try {
      await s.until(() => s.events.some((e) => e.event === 'ready'));
      expect(s.status).toBe(200);
      expect(s.headers['content-type']).toBe('text/event-stream');
      expect(s.headers['cache-control']).toBe('no-store');
      const ready = JSON.parse(s.events[0]!.data) as { seq: number; catalog: string; jitterMs: number };
      expect(ready.jitterMs).toBe(2500);
      expect(s.events[0]!.id).toBe(String(ready.seq));

      await adm(srv, 'PUT', 'environments/web/content/Shop', '{"price":2}');
      await s.until(() => changes(s).length === 1);
      const [c] = changes(s);
      expect(c!.changed).toEqual(['Shop']);
      expect(c!.jitterMs).toBe(2500);
      expect(s.events.at(-1)!.id).toBe(String(c!.seq));
      expect(s.events.at(-1)!.data).not.toContain('price');
      // The tag is the catalog's ETag now: a client revalidating with it gets 304.
      const catalog = await rawCall(srv.url, '/api/v1/env/catalog', { method: 'GET', key: KEY, headers: { 'accept-encoding': 'identity' } });
      expect(catalog.headers.etag).toBe(c!.catalog);

      await s.until(() => s.comments >= 1, 3000);
      // The other environment's stream heard nothing but heartbeats.
      await other.until(() => other.comments >= 1, 3000);
      expect(changes(other)).toEqual([]);
    } finally {
      s.close();
      other.close();
    }
  });

  it('resumes from Last-Event-ID, on this node and on another node of the store', async () => {
    const s = new NodeStream(srv.url + '/api/v1/env/events', { 'x-api-key': KEY });
    await s.until(() => s.events.some((e) => e.event === 'ready'));
    const last = s.events.at(-1)!.id!;
    s.close();
    const node2 = await store.secondNode();
    await adm(srv, 'PUT', 'environments/web/content/News', '{"n":2}');
    await adm(srv, 'DELETE', 'environments/web/content/Shop');
    for (const base of [srv.url, node2.url]) {
      const resumed = new NodeStream(base + '/api/v1/env/events', { 'x-api-key': KEY, 'last-event-id': last });
      try {
        await resumed.until(() => resumed.events.some((e) => e.event === 'ready'));
        expect(changes(resumed).map((c) => c.changed)).toEqual([['News'], ['Shop']]);
        const ids = resumed.events.map((e) => Number(e.id));
        expect(ids).toEqual([...ids].sort((a, b) => a - b));
      } finally {
        resumed.close();
      }
    }
    // A client further behind than this node's log is told to re-fetch everything.
    const behind = new NodeStream(node2.url + '/api/v1/env/events', { 'x-api-key': KEY, 'last-event-id': '0' });
    try {
      await behind.until(() => behind.events.some((e) => e.event === 'ready'));
      expect(changes(behind)).toMatchObject([{ all: true }]);
    } finally {
      behind.close();
    }
  }, 30_000);

  it('--max-streams: the stream over the bound gets 503 too_many_streams with Retry-After', async () => {
    const open = Array.from({ length: 5 }, () => new NodeStream(srv.url + '/api/v1/env/events', { 'x-api-key': KEY }));
    try {
      for (const s of open) await s.until(() => s.events.length > 0);
      const refused = await rawCall(srv.url, '/api/v1/env/events', { method: 'GET', key: KEY });
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('5');
      expect((JSON.parse(refused.wire.toString()) as { error: { code: string } }).error.code).toBe('too_many_streams');
    } finally {
      for (const s of open) s.close();
    }
    // Closed streams free their places.
    await new Promise((r) => setTimeout(r, 300));
    const again = new NodeStream(srv.url + '/api/v1/env/events', { 'x-api-key': KEY });
    await again.until(() => again.events.length > 0);
    expect(again.status).toBe(200);
    again.close();
  });

  it('refuses a missing key, a wrong key and a bad token; a revoked key ends its stream', async () => {
    expect((await rawCall(srv.url, '/api/v1/env/events', { method: 'GET' })).status).toBe(401);
    expect((await rawCall(srv.url, '/api/v1/env/events', { method: 'GET', key: 'wrong-key-1234' })).status).toBe(401);
    const forged = await rawCall(srv.url, '/api/v1/env/events?token=key_0000000000000000.99999999999.AAAA', { method: 'GET' });
    expect(forged.status).toBe(401);
    expect((JSON.parse(forged.wire.toString()) as { error: { code: string } }).error.code).toBe('invalid_stream_token');

    const created = (await adm(srv, 'POST', 'environments/web/keys')) as { key: string; id: string };
    const s = new NodeStream(srv.url + '/api/v1/env/events', { 'x-api-key': created.key });
    await s.until(() => s.events.length > 0);
    await adm(srv, 'DELETE', `environments/web/keys/${created.id}`);
    await s.until(() => s.ended);
    expect(s.ended).toBe(true);
  });
});

