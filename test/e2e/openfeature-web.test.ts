/**
 * The real OpenFeature web SDK (@openfeature/web-sdk) with the OFREP web provider from npm
 * (@openfeature/ofrep-web-provider: static context, one bulk evaluation, then change detection) in
 * real Chromium, on a page of another origin (--cors-origins), against a real rcd process. Both
 * packages are bundled for the page by esbuild at the start of the test (no CDN). The provider's
 * fetch is wrapped only to record the status of each exchange (test/helpers/openfeature-page.mjs).
 */
import { build } from 'esbuild';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { ROOT, call, startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'ofrep-web-key-1';
const AUTH = { authorization: 'Bearer test-admin-token' };
const SHOP_MAPPING = {
  rules: [
    { segment: 'eu', when: { country: 'DE' }, patch: { currency: 'EUR' } },
    { segment: 'refresh', variants: [{ name: 'A', mod: [0, 499], patch: { refreshHours: 6 } }, { name: 'B', mod: [500, 999], patch: { refreshHours: 12 } }] },
  ],
};
const CONTENT = {
  Settings: { json: { difficulty: 'normal', lives: 3 } },
  Shop: { json: { currency: 'USD', refreshHours: 8 }, mapping: SHOP_MAPPING },
  DarkMode: { json: true },
};
const CONTEXT = { targetingKey: 'player-9', country: 'DE', appVersion: '1.2.0' };

interface Details {
  value: unknown;
  variant?: string;
  reason?: string;
  errorCode?: string;
  flagMetadata: Record<string, unknown>;
}
interface Init {
  status: string;
  error: string | null;
}
interface PageApi {
  init(domain: string, options: Record<string, unknown>, context: Record<string, unknown>): Promise<Init>;
  details(domain: string, flag: string, defaultValue: unknown): Details;
  setContext(domain: string, context: Record<string, unknown>): Promise<string>;
  statuses(domain: string): number[];
  events(domain: string): { type: string; flagsChanged: string[] | null }[];
}

let srv: ServerProcess;
let tight: ServerProcess;
let pages: Server;
let origin = '';
let browser: Browser;
let page: Page;

beforeAll(async () => {
  const bundled = await build({
    entryPoints: [join(ROOT, 'test/helpers/openfeature-page.mjs')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
  });
  const script = bundled.outputFiles[0]!.contents;
  pages = createServer((req, res) => {
    if (req.url === '/of.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>game</title><script type="module" src="/of.js"></script>');
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  srv = await startServer({ admin: true, bundle: { environments: { live: { keys: [KEY], content: CONTENT } } }, args: ['--cors-origins', origin] });
  browser = await launchChromium();
  page = await browser.newPage();
  await page.goto(origin + '/');
  await page.waitForFunction(() => 'of' in globalThis);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await srv?.dispose();
  await tight?.dispose();
  await new Promise<void>((resolve) => (pages === undefined ? resolve() : pages.close(() => resolve())));
});

/** Calls window.of[method](...args) in the page. */
function inPage<K extends keyof PageApi>(method: K, ...args: Parameters<PageApi[K]>): Promise<Awaited<ReturnType<PageApi[K]>>> {
  return page.evaluate(([m, a]) => (globalThis as unknown as { of: Record<string, (...x: unknown[]) => unknown> }).of[m]!(...a), [method, args] as const) as Promise<
    Awaited<ReturnType<PageApi[K]>>
  >;
}

async function admin(method: string, path: string, body?: string): Promise<void> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  expect(res.status, await res.text()).toBeLessThan(300);
}

async function native(id: string): Promise<{ data: unknown; hash: string; meta: { uid: number; mod: number; seg: { n: string; v: string | null }[] } }> {
  const { targetingKey, appVersion, ...p } = CONTEXT;
  const r = await call(srv.url, `/api/v1/config/${id}/dynamic`, { key: KEY, body: JSON.stringify({ u: targetingKey, p, v: appVersion }) });
  return r.json as { data: unknown; hash: string; meta: { uid: number; mod: number; seg: { n: string; v: string | null }[] } };
}

const OPTIONS = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ baseUrl: '', headers: [['X-Api-Key', KEY]], cacheMode: 'disabled', ...extra });

describe('@openfeature/web-sdk with @openfeature/ofrep-web-provider in Chromium', () => {
  it('the bulk evaluation gives each flag the native answer: value, variant, reason, flag metadata', async () => {
    expect(await inPage('init', 'details', OPTIONS({ baseUrl: srv.url, changeDetection: 'none' }), CONTEXT)).toEqual({ status: 'READY', error: null });
    for (const id of ['Settings', 'Shop']) {
      const w = await native(id);
      const seg = w.meta.seg;
      expect(await inPage('details', 'details', id, {})).toMatchObject({
        value: w.data,
        reason: seg.length === 0 ? 'STATIC' : seg.some((s) => s.v !== null) ? 'SPLIT' : 'TARGETING_MATCH',
        variant: seg.length === 0 ? 'default' : seg.map((s) => (s.v === null ? s.n : `${s.n}:${s.v}`)).join(','),
        flagMetadata: { hash: w.hash, seg: JSON.stringify(seg), uid: w.meta.uid, mod: w.meta.mod },
      });
    }
    expect(await inPage('details', 'details', 'DarkMode', false)).toMatchObject({ value: true, reason: 'STATIC' });
    // A/B stickiness: the same user in another domain (another provider, another bulk request) gets the same variant.
    expect(await inPage('init', 'details-again', OPTIONS({ baseUrl: srv.url, changeDetection: 'none' }), CONTEXT)).toMatchObject({ status: 'READY' });
    expect((await inPage('details', 'details-again', 'Shop', {})).variant).toBe((await inPage('details', 'details', 'Shop', {})).variant);
    expect(await inPage('details', 'details', 'NoSuchFlag', { d: 1 })).toMatchObject({ value: { d: 1 }, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
    expect(await inPage('statuses', 'details')).toEqual([200]);
  });

  it('polling: unchanged polls are 304, an edit arrives as ConfigurationChanged naming the flag', async () => {
    expect(await inPage('init', 'polling', OPTIONS({ baseUrl: srv.url, changeDetection: 'polling', pollInterval: 200 }), CONTEXT)).toMatchObject({ status: 'READY' });
    await expect.poll(async () => (await inPage('statuses', 'polling')).filter((s) => s === 304).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    await admin('PUT', 'environments/live/content/Settings', '{"difficulty":"hard","lives":1}');
    await expect.poll(async () => (await inPage('details', 'polling', 'Settings', {})).value, { timeout: 10_000 }).toEqual({ difficulty: 'hard', lives: 1 });
    const changed = (await inPage('events', 'polling')).filter((e) => e.type === 'PROVIDER_CONFIGURATION_CHANGED');
    expect(changed.at(-1)?.flagsChanged).toEqual(['Settings']);
    // The polls after it revalidate the new answer: 304 again.
    await expect.poll(async () => (await inPage('statuses', 'polling')).at(-1), { timeout: 10_000 }).toBe(304);
  });

  it('the change stream (eventStreams, EventSource with a stream token): an edit arrives without polling', async () => {
    // The default change detection: SSE when the answer names a stream; polling off.
    expect(await inPage('init', 'sse', OPTIONS({ baseUrl: srv.url }), CONTEXT)).toMatchObject({ status: 'READY' });
    const before = (await inPage('statuses', 'sse')).length;
    await admin('PUT', 'environments/live/content/Settings', '{"difficulty":"easy","lives":5}');
    await expect.poll(async () => (await inPage('details', 'sse', 'Settings', {})).value, { timeout: 10_000 }).toEqual({ difficulty: 'easy', lives: 5 });
    // One re-evaluation, caused by the event (no poll ran: polling is off).
    expect((await inPage('statuses', 'sse')).slice(before)).toEqual([200]);
    expect((await inPage('events', 'sse')).some((e) => e.type === 'PROVIDER_CONFIGURATION_CHANGED' && e.flagsChanged?.includes('Settings') === true)).toBe(true);
  });

  it('a wrong key is a fatal provider (defaults, PROVIDER_FATAL); a bad context an error state (defaults: its cache is empty); never a crash', async () => {
    const wrong = await inPage('init', 'wrong-key', OPTIONS({ baseUrl: srv.url, headers: [['X-Api-Key', 'not-a-key-at-all']], changeDetection: 'none' }), CONTEXT);
    expect(wrong.status).toBe('FATAL');
    expect(await inPage('statuses', 'wrong-key')).toEqual([401]);
    expect(await inPage('details', 'wrong-key', 'Settings', { d: 1 })).toMatchObject({ value: { d: 1 }, reason: 'ERROR', errorCode: 'PROVIDER_FATAL' });

    const bad = await inPage('init', 'bad-context', OPTIONS({ baseUrl: srv.url, changeDetection: 'none' }), { ...CONTEXT, appVersion: 'one.two' });
    expect(bad.status).toBe('ERROR');
    expect(await inPage('statuses', 'bad-context')).toEqual([400]);
    // The provider has no flags: the SDK asks it anyway, and it answers FLAG_NOT_FOUND with the default.
    expect(await inPage('details', 'bad-context', 'Settings', { d: 2 })).toMatchObject({ value: { d: 2 }, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
    // A context the server takes brings the provider back.
    expect(await inPage('setContext', 'bad-context', CONTEXT)).toBe('READY');
    expect((await inPage('details', 'bad-context', 'Settings', {})).errorCode).toBeUndefined();

    // Without a targeting key the A/B flag alone is TARGETING_KEY_MISSING.
    const untargeted: Record<string, unknown> = { ...CONTEXT };
    delete untargeted.targetingKey;
    expect(await inPage('init', 'untargeted', OPTIONS({ baseUrl: srv.url, changeDetection: 'none' }), untargeted)).toMatchObject({ status: 'READY' });
    expect(await inPage('details', 'untargeted', 'Shop', { d: 3 })).toMatchObject({ value: { d: 3 }, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' });
    expect((await inPage('details', 'untargeted', 'Settings', {})).errorCode).toBeUndefined();
  });

  it('at capacity: the providers refused with 429 answer defaults, the others their flags; after Retry-After a refresh succeeds', async () => {
    // One pool job at a time; a slow render holds it while several providers start at once.
    const slow = { blob: Array.from({ length: 40_000 }, (_, i) => ({ i, s: 'x'.repeat(40) })) };
    tight = await startServer({
      bundle: { environments: { live: { keys: [KEY], content: { Slow: { json: slow } } } } },
      args: ['--cors-origins', origin, '--max-pending', '1', '--max-combine-ids', '1', '--threads', '1'],
    });
    const domains = Array.from({ length: 6 }, (_, i) => `tight-${i}`);
    const inits = await Promise.all(domains.map((d, i) => inPage('init', d, OPTIONS({ baseUrl: tight.url, changeDetection: 'polling', pollInterval: 300 }), { ...CONTEXT, targetingKey: `u${i}` })));
    const limited = domains.filter((_, i) => inits[i]!.status !== 'READY');
    expect(limited.length).toBeGreaterThan(0);
    for (const d of limited) {
      expect(await inPage('statuses', d)).toEqual([429]);
      expect(await inPage('details', d, 'Slow', { d: 0 })).toMatchObject({ value: { d: 0 }, reason: 'ERROR' });
    }
    for (const d of domains.filter((x) => !limited.includes(x))) expect(((await inPage('details', d, 'Slow', {})).value as { blob: unknown[] }).blob).toHaveLength(40_000);
    // After Retry-After (1 s) a context change refreshes a refused provider.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const d = limited[0]!;
    expect(await inPage('setContext', d, { ...CONTEXT, targetingKey: 'after' })).toBe('READY');
    expect(((await inPage('details', d, 'Slow', {})).value as { blob: unknown[] }).blob).toHaveLength(40_000);
  }, 60_000);
});
