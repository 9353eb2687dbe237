/**
 * The change stream in a real browser: EventSource in Chromium on another origin with a stream token
 * hears edits and resumes after reconnecting, also after its server restarts while another node of
 * the store takes edits. events.test.ts covers the stream in Node in `npm test`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, type PageServer } from '../helpers/browser.js';
import { EventsStore, FLEET_KEY, KEY, adm } from '../helpers/events-store.js';
import type { ServerProcess } from '../helpers/server-process.js';

/** The part of the browser's EventSource the page uses (the test compiles without the DOM library). */
interface PageEventSource {
  addEventListener(type: string, listener: (e: unknown) => void): void;
  close(): void;
}

/** The events the page's EventSource listeners recorded in `globalThis.got`. */
type Got = { type: string; id: string; data: string }[];

/** Polls the page's recorded events every 100 ms until `pred` holds; fails after `ms` with what arrived. */
async function eventsOnPage(tab: Page, pred: (g: Got) => boolean, ms: number): Promise<Got> {
  const deadline = Date.now() + ms;
  for (;;) {
    const g = await tab.evaluate(() => (globalThis as unknown as { got: Got }).got);
    if (pred(g)) return g;
    if (Date.now() > deadline) throw new Error('timed out: ' + JSON.stringify(g));
    await new Promise((r) => setTimeout(r, 100));
  }
}

let store: EventsStore;
let srv: ServerProcess;
let page: PageServer;

beforeAll(async () => {
  store = await EventsStore.start();
  srv = store.srv;
  page = store.page;
});

afterAll(async () => {
  await store?.dispose();
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
      const waitFor = (pred: (g: Got) => boolean): Promise<Got> => eventsOnPage(tab, pred, 8000);
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
    let node1 = await store.secondNode();
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
      const waitFor = (pred: (g: Got) => boolean): Promise<Got> => eventsOnPage(tab, pred, 15_000);
      await waitFor((g) => g.some((e) => e.type === 'ready'));
      await adm(node2, 'PUT', 'environments/fleet/content/News', '{"n":2}');
      const seen = await waitFor((g) => g.some((e) => e.type === 'change'));
      const lastId = Number(seen.at(-1)!.id);

      await node1.stop();
      await adm(node2, 'PUT', 'environments/fleet/content/News', '{"n":3}');
      node1 = await store.restartSecond();
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
