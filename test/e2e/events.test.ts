/**
 * The change stream against real servers: Node reading the SSE bytes, and EventSource in Chromium on
 * another origin with a stream token. Edits arrive as events naming the changed ids and the catalog's
 * new tag; a client resumes with Last-Event-ID on the same node or another node of the store; heartbeats
 * flow; --max-streams answers 503 with Retry-After; a revoked key's stream ends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { launchChromium, startPageServer, type PageServer } from '../helpers/browser.js';
import { rawCall } from '../helpers/http-raw.js';
import { NodeStream } from '../helpers/sse.js';
import { freePort } from '../helpers/free-port.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const KEY = 'events-test-key-1';
const OTHER_KEY = 'events-other-env-key';
/** The environment of the test that restarts a node of the file's store. */
const FLEET_KEY = 'events-fleet-env-key';

function changes(s: NodeStream): { seq: number; changed?: string[]; all?: boolean; catalog: string; jitterMs: number }[] {
  return s.events.filter((e) => e.event === 'change').map((e) => JSON.parse(e.data) as { seq: number; changed?: string[]; all?: boolean; catalog: string; jitterMs: number });
}

async function adm(srv: ServerProcess, method: string, path: string, body?: string): Promise<unknown> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as unknown;
}

/** The part of the browser's EventSource the page uses (the test compiles without the DOM library). */
interface PageEventSource {
  addEventListener(type: string, listener: (e: unknown) => void): void;
  close(): void;
}

let dir: string;
let srv: ServerProcess;
let page: PageServer;
/** The store's second node, started by the first test that needs it; the test that stops it starts it again. */
let second: Promise<ServerProcess> | undefined;
/** The second node's port, chosen once: a restarted node comes back on the same one. */
let secondPort: number | undefined;

function secondArgs(): string[] {
  return ['--port', String(secondPort), '--cors-origins', page.origin];
}

function secondNode(): Promise<ServerProcess> {
  second ??= freePort().then((port) => {
    secondPort = port;
    return startServer({ dir, admin: true, args: secondArgs() });
  });
  return second;
}

beforeAll(async () => {
  dir = tempDir();
  page = await startPageServer();
  srv = await startServer({
    dir,
    admin: true,
    args: ['--stream-heartbeat-ms', '1000', '--stream-jitter-ms', '2500', '--max-streams', '5', '--cors-origins', page.origin],
    bundle: {
      environments: {
        web: { keys: [KEY], content: { Shop: { json: { price: 1 } }, News: { json: { n: 1 } } } },
        other: { keys: [OTHER_KEY], content: { Shop: { json: { price: 9 } } } },
        fleet: { keys: [FLEET_KEY], content: { News: { json: { n: 1 } } } },
      },
    },
  });
});

afterAll(async () => {
  // A second node that failed to start has nothing to stop.
  await second?.then((node) => node.dispose(), () => undefined);
  await srv?.dispose();
  await page?.close();
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
    const node2 = await secondNode();
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

describe('change stream (EventSource in Chromium)', () => {
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  it('a page on another origin gets a token with its key, hears edits, and resumes after reconnecting', async () => {
    const tab = await browser.newPage();
    try {
      await tab.goto(page.origin + '/game.html');
      const api = srv.url;
      // The page: token with the key, then EventSource (which cannot send headers).
      await tab.evaluate(
        async ([base, key]) => {
          const w = globalThis as unknown as { got: { type: string; id: string; data: string }[]; source: PageEventSource; open: (url: string) => void };
          const ES = (globalThis as unknown as { EventSource: new (url: string) => PageEventSource }).EventSource;
          w.got = [];
          w.open = (url: string): void => {
            w.source = new ES(url);
            for (const type of ['ready', 'change']) {
              w.source.addEventListener(type, (e) => {
                const m = e as { data: string; lastEventId: string };
                w.got.push({ type, id: m.lastEventId, data: m.data });
              });
            }
          };
          const r = await fetch(base + '/api/v1/env/events/token', { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' } });
          const { token } = (await r.json()) as { token: string };
          w.open(base + '/api/v1/env/events?token=' + encodeURIComponent(token));
        },
        [api, KEY] as const,
      );
      type Got = { type: string; id: string; data: string }[];
      const got = (): Promise<Got> => tab.evaluate(() => (globalThis as unknown as { got: Got }).got);
      const waitFor = async (pred: (g: Got) => boolean): Promise<Got> => {
        const deadline = Date.now() + 8000;
        for (;;) {
          const g = await got();
          if (pred(g)) return g;
          if (Date.now() > deadline) throw new Error('timed out: ' + JSON.stringify(g));
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      await waitFor((g) => g.some((e) => e.type === 'ready'));
      await adm(srv, 'PUT', 'environments/web/content/News', '{"n":3}');
      const withChange = await waitFor((g) => g.some((e) => e.type === 'change'));
      const change = withChange.find((e) => e.type === 'change')!;
      expect((JSON.parse(change.data) as { changed: string[] }).changed).toEqual(['News']);

      // The page closes its stream; an edit happens meanwhile; a new EventSource resumes after the last id.
      const lastId = await tab.evaluate(() => {
        const w = globalThis as unknown as { source: PageEventSource; got: { id: string }[] };
        w.source.close();
        return w.got.at(-1)!.id;
      });
      await adm(srv, 'PUT', 'environments/web/content/News', '{"n":4}');
      await tab.evaluate(
        async ([base, key, last]) => {
          const w = globalThis as unknown as { got: unknown[]; open: (url: string) => void };
          w.got = [];
          const r = await fetch(base + '/api/v1/env/events/token', { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' } });
          const { token } = (await r.json()) as { token: string };
          w.open(base + '/api/v1/env/events?token=' + encodeURIComponent(token) + '&lastEventId=' + last);
        },
        [api, KEY, lastId] as const,
      );
      const resumed = await waitFor((g) => g.some((e) => e.type === 'ready'));
      expect(resumed.filter((e) => e.type === 'change').map((e) => (JSON.parse(e.data) as { changed: string[] }).changed)).toEqual([['News']]);
      expect(Number(resumed.find((e) => e.type === 'change')!.id)).toBeGreaterThan(Number(lastId));
    } finally {
      await tab.close();
    }
  }, 40_000);

  it("EventSource reconnects by itself after its server restarts and resumes with Last-Event-ID; edits made meanwhile on another node arrive", async () => {
    // node1 is the store's second node, and the file's first node the other node here (environment fleet).
    let node1 = await secondNode();
    const node2 = srv;
    const tab = await browser.newPage();
    try {
      await tab.goto(page.origin + '/game.html');
      const url = await tab.evaluate(
        async ([base, key]) => {
          const r = await fetch(base + '/api/v1/env/events/token', { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' } });
          const { token } = (await r.json()) as { token: string };
          return base + '/api/v1/env/events?token=' + encodeURIComponent(token);
        },
        [node1.url, FLEET_KEY] as const,
      );
      await tab.evaluate((u) => {
        const w = globalThis as unknown as { got: { type: string; id: string; data: string }[] };
        const ES = (globalThis as unknown as { EventSource: new (url: string) => PageEventSource }).EventSource;
        w.got = [];
        const source = new ES(u);
        for (const type of ['ready', 'change']) {
          source.addEventListener(type, (e) => {
            const m = e as { data: string; lastEventId: string };
            w.got.push({ type, id: m.lastEventId, data: m.data });
          });
        }
      }, url);
      type Got = { type: string; id: string; data: string }[];
      const waitFor = async (pred: (g: Got) => boolean, ms = 15_000): Promise<Got> => {
        const deadline = Date.now() + ms;
        for (;;) {
          const g = await tab.evaluate(() => (globalThis as unknown as { got: Got }).got);
          if (pred(g)) return g;
          if (Date.now() > deadline) throw new Error('timed out: ' + JSON.stringify(g));
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      await waitFor((g) => g.some((e) => e.type === 'ready'));
      await adm(node2, 'PUT', 'environments/fleet/content/News', '{"n":2}');
      const seen = await waitFor((g) => g.some((e) => e.type === 'change'));
      const lastId = Number(seen.at(-1)!.id);

      await node1.stop();
      await adm(node2, 'PUT', 'environments/fleet/content/News', '{"n":3}');
      second = startServer({ dir, admin: true, args: secondArgs() });
      node1 = await second;
      // The browser reconnects on its own (retry: 3000) with Last-Event-ID: without it the server
      // would only send `ready`; with it, what happened since is announced first.
      const after = await waitFor((g) => g.filter((e) => e.type === 'ready').length === 2);
      // The edit was made while node1 was down and node1 announces nothing at start, so an event after
      // lastId can only be the resumption's.
      const resumed = after.slice(after.findIndex((e) => e.type === 'ready') + 1);
      expect(resumed.filter((e) => e.type === 'change' && Number(e.id) > lastId)).toHaveLength(1);
      expect(resumed.at(-1)).toMatchObject({ type: 'ready' });
      expect(Number(resumed.at(-1)!.id)).toBeGreaterThan(lastId);
    } finally {
      await tab.close();
    }
  }, 60_000);
});
