/**
 * A browser build calling the delivery API from its own origin, in real Chromium: the CORS preflight
 * passes for an allowed origin (and fails for another), the page reads the ETag and X-Missing-Content
 * headers and the error codes, and fetch hands a 304 to the page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startServer, type ServerProcess } from '../helpers/server-process.js';
import { launchChromium, startPageServer, type PageServer } from '../helpers/browser.js';

const KEY = 'browser-test-key-1';

let allowed: PageServer;
let other: PageServer;
let srv: ServerProcess;
let browser: Browser;

beforeAll(async () => {
  allowed = await startPageServer();
  other = await startPageServer();
  srv = await startServer({
    args: ['--cors-origins', `https://unused.example, ${allowed.origin}`],
    bundle: { environments: { web: { keys: [KEY], content: { Shop: { json: { items: ['sword'], pad: 'x'.repeat(3000) } }, Small: { json: { a: 1 } } } } } },
  });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.dispose();
  await allowed?.close();
  await other?.close();
});

interface PageAnswer {
  status: number;
  etag: string | null;
  missing: string | null;
  text: string;
  error?: string;
}

/** Runs fetch in a page of `origin` and reports what the page can see. */
async function fetchFrom(page: Page, url: string, init: { method: string; headers: Record<string, string>; body?: string }): Promise<PageAnswer> {
  return page.evaluate(
    async ([u, i]) => {
      try {
        const r = await fetch(u, i);
        return { status: r.status, etag: r.headers.get('etag'), missing: r.headers.get('x-missing-content'), text: await r.text() };
      } catch (err) {
        return { status: 0, etag: null, missing: null, text: '', error: String(err) };
      }
    },
    [url, init] as const,
  );
}

async function pageAt(origin: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(origin + '/game.html');
  return page;
}

const HEADERS = { 'x-api-key': KEY, 'content-type': 'application/json' };

describe('Chromium on another origin', () => {
  it('an allowed origin passes the preflight, reads the answer, its ETag and X-Missing-Content, and gets 304 with If-None-Match', async () => {
    const page = await pageAt(allowed.origin);
    try {
      const first = await fetchFrom(page, srv.url + '/api/v1/config/shop/dynamic', { method: 'POST', headers: HEADERS, body: '{"u":"p"}' });
      expect(first.error).toBeUndefined();
      expect(first.status).toBe(200);
      expect((JSON.parse(first.text) as { data: { items: string[] } }).data.items).toEqual(['sword']);
      expect(first.etag).toMatch(/^"w.+"$/);
      const again = await fetchFrom(page, srv.url + '/api/v1/config/shop/dynamic', {
        method: 'POST',
        headers: { ...HEADERS, 'if-none-match': first.etag! },
        body: '{"u":"p"}',
      });
      expect(again.status).toBe(304);
      expect(again.text).toBe('');

      const combined = await fetchFrom(page, srv.url + '/api/v1/combine?c=' + encodeURIComponent('["Small","Gone"]'), { method: 'POST', headers: HEADERS, body: '{}' });
      expect(combined.status).toBe(200);
      expect(combined.missing).toBe('Gone');

      const catalog = await fetchFrom(page, srv.url + '/api/v1/env/catalog', { method: 'GET', headers: HEADERS });
      expect(catalog.status).toBe(200);
      const revalidated = await fetchFrom(page, srv.url + '/api/v1/env/catalog', { method: 'GET', headers: { ...HEADERS, 'if-none-match': catalog.etag! } });
      expect(revalidated.status).toBe(304);

      // Errors carry the CORS headers too: the page reads the stable code.
      const missing = await fetchFrom(page, srv.url + '/api/v1/config/nope', { method: 'POST', headers: HEADERS, body: '{}' });
      expect(missing.status).toBe(404);
      expect((JSON.parse(missing.text) as { error: { code: string } }).error.code).toBe('content_not_found');
    } finally {
      await page.close();
    }
  }, 30_000);

  it('an origin not on the list is refused by the browser', async () => {
    const page = await pageAt(other.origin);
    try {
      const r = await fetchFrom(page, srv.url + '/api/v1/config/small', { method: 'POST', headers: HEADERS, body: '{}' });
      expect(r.status).toBe(0);
      expect(r.error).toMatch(/TypeError/);
    } finally {
      await page.close();
    }
  }, 30_000);
});
