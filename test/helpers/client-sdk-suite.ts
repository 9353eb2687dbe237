/**
 * The client SDK suite, one environment at a time: the SDK against the real server process, the
 * requests each scenario causes counted by the client's own fetch (test/helpers/client-harness.mjs).
 * test/e2e/client-sdk.test.ts runs it in Node (`npm test`), test/e2e/client-sdk-chromium.test.ts in
 * Chromium (`npm run test:slow`): the same scenarios and assertions in both. The scenarios share one
 * server, each in an environment of its own with its own key (`live` and its copies `s1`...), start
 * their own only to start it with other limits, and meet a server that is down at the address of a
 * listener that has just closed.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HarnessClientOptions, HarnessRequest, HarnessResult, Harness } from './client-harness.mjs';
import { freePort } from './free-port.js';
import { BIN, startServer, type ServerProcess } from './server-process.js';

export const KEY = 'client-sdk-key-1';
/** The copies of `live` in the shared server's bundle, one a scenario. */
const COPIES = Array.from({ length: 10 }, (_, i) => `s${i + 1}`);
export const CONTEXT = { u: 'player-1', p: { vip: true }, v: '1.5.0' };

/** Environment `live` (key KEY) holding the suite's content and `extra`, and an identical one for each of `copies`. */
export function bundle(extra: Record<string, unknown> = {}, copies: readonly string[] = []): unknown {
  return { environments: Object.fromEntries(['live', ...copies].map((env) => [env, environment(env, extra)])) };
}

/** The delivery key of environment `env` of bundle(): KEY for `live`. */
function keyOf(env: string): string {
  return env === 'live' ? KEY : `client-sdk-key-${env}`;
}

function environment(env: string, extra: Record<string, unknown>): unknown {
  return {
    keys: [keyOf(env)],
    content: {
      Settings: { json: { difficulty: 'normal', lives: 3 } },
      Shop: { json: { items: ['sword'], price: 10 } },
      Promo: { json: { banner: 'none' }, mapping: { rules: [{ segment: 'vip', when: { vip: true }, patch: { banner: 'gold' } }] } },
      Levels: { revisions: [{ json: { level: 1 } }, { json: { level: 2 }, minAppVersion: '2.0.0' }] },
      ...extra,
    },
  };
}

export const ALL = ['Levels', 'Promo', 'Settings', 'Shop'];
export const EXPECTED = {
  Settings: { difficulty: 'normal', lives: 3 },
  Shop: { items: ['sword'], price: 10 },
  Promo: { banner: 'gold' },
  Levels: { level: 1 },
};

/** The harness of one environment, every call asynchronous (Chromium's are page.evaluate calls). */
export interface Driver {
  create(options: Omit<HarnessClientOptions, 'baseUrl' | 'apiKey'>): Promise<number>;
  refresh(id: number): Promise<HarnessResult>;
  refreshTwice(id: number): Promise<[HarnessResult, HarnessResult]>;
  subscribe(id: number): Promise<void>;
  values(id: number, ids: string[]): Promise<ReturnType<Harness['values']>>;
  log(id: number): Promise<HarnessRequest[]>;
  results(id: number): Promise<HarnessResult[]>;
  close(id: number): Promise<void>;
}

export interface Environment {
  readonly name: string;
  /** Storage name prefixes of the adapters to run the warm start with ('ls:' is localStorage in a page). */
  readonly storages: readonly string[];
  /** Origin allowed by --cors-origins, or null. */
  origin(): string | null;
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
  /** The harness speaking to `baseUrl` with `apiKey`. */
  driver(baseUrl: string, apiKey: string): Driver;
}

const AUTH = { authorization: 'Bearer test-admin-token' };

async function admin(srv: ServerProcess, method: string, path: string, body?: string): Promise<void> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  expect(res.status, await res.clone().text()).toBe(200);
  await res.arrayBuffer();
}

/** `rcd export ARGS`: exit code, stdout, stderr. */
export async function rcdExport(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, 'export', ...args], { env: { ...process.env, RCD_ADMIN_TOKEN: 'test-admin-token' } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function dataOf(values: Awaited<ReturnType<Driver['values']>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, v.data]));
}

/** Declares the suite's tests for one environment (Node or Chromium). */
export function describeClientSdk(env: Environment): void {
  describe(`client SDK in ${env.name}`, () => {
    /** The server of the scenario running: the shared one, or one of its own. */
    let srv: ServerProcess | undefined;
    /** The environment the scenario reads and edits. */
    let live = 'live';
    let shared: Promise<ServerProcess> | undefined;
    let own: ServerProcess | undefined;
    let n = 0;
    let copies = 0;
    /** A fresh storage name per client set, so tests share nothing. */
    const storage = (): string => `cache-${env.name}-${++n}`;
    const corsArgs = (): string[] => {
      const cors = env.origin();
      return cors === null ? [] : ['--cors-origins', cors];
    };

    beforeAll(() => env.setUp());
    afterAll(async () => {
      await (await shared)?.dispose();
      await env.tearDown();
    });
    afterEach(async () => {
      await own?.dispose();
      own = undefined;
    });

    /** A server of the scenario's own (with other limits), environment `live`. */
    async function start(args: string[] = [], extra: Record<string, unknown> = {}): Promise<Driver> {
      own = await startServer({ admin: true, bundle: bundle(extra), args: [...corsArgs(), ...args] });
      srv = own;
      live = 'live';
      return env.driver(srv.url, KEY);
    }

    /** The shared server (the change stream without jitter), in an environment no other scenario uses. */
    async function share(): Promise<Driver> {
      shared ??= startServer({ admin: true, bundle: bundle({}, COPIES), args: [...corsArgs(), '--stream-jitter-ms', '0'] });
      srv = await shared;
      const copy = COPIES[copies++];
      if (copy === undefined) throw new Error(`more scenarios share the server than its ${COPIES.length} copies of live`);
      live = copy;
      return env.driver(srv.url, keyOf(live));
    }

    /** The harness speaking to a server that is down: nothing listens at its address (a listener there has just closed). */
    async function down(): Promise<Driver> {
      return env.driver(`http://127.0.0.1:${await freePort()}`, keyOf(live));
    }

    it('cold start: exactly one catalog and one combine, then every value and its meta', async () => {
      const d = await share();
      const c = await d.create({ storage: storage(), context: CONTEXT });
      const r = await d.refresh(c);
      expect(r).toEqual({ changed: ALL, fromCache: false });
      const log = await d.log(c);
      expect(log.map((e) => [e.kind, e.status])).toEqual([['catalog', 200], ['combine', 200]]);
      expect([...log[1]!.ids!].sort()).toEqual(ALL);
      const values = await d.values(c, [...ALL, 'Nope']);
      expect(dataOf(values)).toEqual({ ...EXPECTED, Nope: null });
      expect(values.Promo!.meta!.seg).toEqual([{ n: 'vip', v: null }]);
      expect(values.Settings!.meta).toMatchObject({ seg: [], source: 'server' });
      expect(values.Settings!.meta!.hash).toMatch(/^[0-9a-f]{32}$/);
    });

    it('warm start with nothing changed: catalog 304 and the mapped ids revalidated 304, no content bytes', async () => {
      const d = await share();
      for (const kind of env.storages) await warmStart(d, kind + storage());
    });

    async function warmStart(d: Driver, name: string): Promise<void> {
      const first = await d.create({ storage: name, context: CONTEXT });
      await d.refresh(first);
      await d.close(first);

      const warm = await d.create({ storage: name, context: CONTEXT });
      const r = await d.refresh(warm);
      expect(r).toEqual({ changed: [], fromCache: false });
      const log = await d.log(warm);
      expect(log.map((e) => [e.kind, e.status, e.bytes])).toEqual([['catalog', 304, 0], ['combine', 304, 0]]);
      expect(log.every((e) => e.tag !== null)).toBe(true);
      expect(dataOf(await d.values(warm, ALL))).toEqual(EXPECTED);
    }

    it('one edit: exactly that id is fetched again (with the mapped ids), and reported changed', async () => {
      const d = await share();
      const c = await d.create({ storage: storage(), context: CONTEXT });
      await d.refresh(c);
      await admin(srv!, 'PUT', `environments/${live}/content/Settings`, '{"difficulty":"hard","lives":3}');

      const r = await d.refresh(c);
      expect(r).toEqual({ changed: ['Settings'], fromCache: false });
      const log = (await d.log(c)).slice(2);
      expect(log.map((e) => [e.kind, e.status])).toEqual([['catalog', 200], ['combine', 200]]);
      expect(log[1]!.ids).toEqual(['Settings', 'Promo']);
      expect(dataOf(await d.values(c, ALL))).toEqual({ ...EXPECTED, Settings: { difficulty: 'hard', lives: 3 } });
    });

    it('a mapping edit (same h) is picked up by the d revalidation; the next refresh is all 304', async () => {
      const d = await share();
      const c = await d.create({ storage: storage(), context: CONTEXT });
      await d.refresh(c);
      await admin(srv!, 'PUT', `environments/${live}/content/Promo/mapping`, JSON.stringify({ rules: [{ segment: 'vip2', when: { vip: true }, patch: { banner: 'silver' } }] }));

      const r = await d.refresh(c);
      expect(r).toEqual({ changed: ['Promo'], fromCache: false });
      const log = (await d.log(c)).slice(2);
      expect(log.map((e) => [e.kind, e.status])).toEqual([['catalog', 304], ['combine', 200]]);
      expect(log[1]!.tag).not.toBeNull();
      const values = await d.values(c, ['Promo']);
      expect(values.Promo).toMatchObject({ data: { banner: 'silver' }, meta: { seg: [{ n: 'vip2', v: null }] } });

      expect(await d.refresh(c)).toEqual({ changed: [], fromCache: false });
      expect((await d.log(c)).slice(4).map((e) => [e.kind, e.status])).toEqual([['catalog', 304], ['combine', 304]]);
    });

    it('server down at start: the cached values are served and the error is reported', async () => {
      const d = await share();
      const name = storage();
      const first = await d.create({ storage: name, context: CONTEXT });
      await d.refresh(first);
      await d.close(first);

      const gone = await down();
      const offline = await gone.create({ storage: name, context: CONTEXT, backoff: { baseMs: 60_000 } });
      const r = await gone.refresh(offline);
      expect(r.fromCache).toBe(true);
      expect(r.changed).toEqual([]);
      expect(r.error).toMatchObject({ code: 'network', status: 0 });
      expect(dataOf(await gone.values(offline, ALL))).toEqual(EXPECTED);
      // Within the backoff a refresh does not touch the network.
      const again = await gone.refresh(offline);
      expect(again.error?.code).toBe('backoff');
      expect((await gone.log(offline)).length).toBe(1);
      await gone.close(offline);
    });

    it('never more than one refresh in flight: two calls share one catalog request', async () => {
      const d = await share();
      const c = await d.create({ storage: storage(), context: CONTEXT });
      const [a, b] = await d.refreshTwice(c);
      expect(a).toEqual(b);
      expect((await d.log(c)).map((e) => e.kind)).toEqual(['catalog', 'combine']);
    });

    it('the change stream triggers a refresh that fetches exactly what changed', async () => {
      const d = await share();
      const c = await d.create({ storage: storage(), context: CONTEXT });
      await d.refresh(c);
      await d.subscribe(c);
      await expect.poll(async () => (await d.log(c)).some((e) => e.kind === 'events' && e.status === 200)).toBe(true);
      // The ready event names the catalog the client holds: nothing to fetch.
      expect((await d.log(c)).map((e) => e.kind)).toEqual(['catalog', 'combine', 'events']);

      await admin(srv!, 'PUT', `environments/${live}/content/Shop`, '{"items":["sword","shield"],"price":12}');
      await expect.poll(async () => (await d.results(c)).slice(1).some((r) => r.changed.includes('Shop')), { timeout: 10_000 }).toBe(true);
      const after = (await d.log(c)).slice(3);
      expect(after.map((e) => [e.kind, e.status])).toEqual([['catalog', 200], ['combine', 200]]);
      expect(after[1]!.ids).toEqual(['Shop', 'Promo']);
      expect(dataOf(await d.values(c, ['Shop']))).toEqual({ Shop: { items: ['sword', 'shield'], price: 12 } });

      // A mapping edit leaves the catalog as it was; the event names the id and the d revalidation fetches it.
      const seen = (await d.results(c)).length;
      await admin(srv!, 'PUT', `environments/${live}/content/Promo/mapping`, JSON.stringify({ rules: [{ segment: 'vip3', when: { vip: true }, patch: { banner: 'ruby' } }] }));
      await expect.poll(async () => (await d.results(c)).slice(seen).some((r) => r.changed.includes('Promo')), { timeout: 10_000 }).toBe(true);
      expect(dataOf(await d.values(c, ['Promo']))).toEqual({ Promo: { banner: 'ruby' } });
      await d.close(c);
    });

    it('first launch with client defaults: their values before any request, then only what changed since the export is fetched', async () => {
      const d = await share();
      const exported = await rcdExport(['--client-defaults', live, '--app-version', '1.5.0', '--admin-url', srv!.adminUrl!]);
      expect(exported.code, exported.stderr).toBe(0);
      const defaults = JSON.parse(exported.stdout) as unknown;
      await admin(srv!, 'PUT', `environments/${live}/content/Settings`, '{"difficulty":"easy","lives":9}');

      const c = await d.create({ storage: storage(), context: CONTEXT, defaults });
      const before = await d.values(c, ALL);
      expect(dataOf(before)).toEqual({ ...EXPECTED, Promo: { banner: 'none' } });
      expect(before.Settings!.meta).toMatchObject({ source: 'defaults', seg: [] });
      expect((await d.log(c)).length).toBe(0);

      const r = await d.refresh(c);
      expect(r).toEqual({ changed: ['Promo', 'Settings'], fromCache: false });
      const log = await d.log(c);
      expect(log.map((e) => [e.kind, e.status])).toEqual([['catalog', 200], ['combine', 200]]);
      expect(log[1]!.ids).toEqual(['Settings', 'Promo']);
      expect(dataOf(await d.values(c, ALL))).toEqual({ ...EXPECTED, Settings: { difficulty: 'easy', lives: 9 } });
    });

    it('first launch with client defaults and the server down: the defaults, and the error', async () => {
      await share();
      const exported = await rcdExport(['--client-defaults', live, '--app-version', '1.5.0', '--admin-url', srv!.adminUrl!]);
      const gone = await down();
      const c = await gone.create({ storage: storage(), context: CONTEXT, defaults: JSON.parse(exported.stdout) as unknown, backoff: { baseMs: 60_000 } });
      const r = await gone.refresh(c);
      expect(r).toMatchObject({ changed: [], fromCache: true, error: { code: 'network' } });
      expect(dataOf(await gone.values(c, ALL))).toEqual({ ...EXPECTED, Promo: { banner: 'none' } });
      await gone.close(c);
    });

    it('overload: 503 with Retry-After is honoured, then the client retries by itself and succeeds', async () => {
      // One job at a time (--max-pending 1): a slow render holds the slot while the client's combine arrives.
      const slow = { blob: Array.from({ length: 60_000 }, (_, i) => ({ i, s: 'x'.repeat(40) })) };
      const d = await start(['--max-pending', '1', '--max-combine-ids', '1', '--threads', '1'], { Slow: { json: slow } });
      const c = await d.create({
        storage: storage(),
        context: CONTEXT,
        maxCombineIds: 1,
        backoff: { baseMs: 50 },
        burstBeforeCombine: { url: `${srv!.url}/api/v1/config/Slow`, key: KEY, delayMs: 20 },
      });
      const r = await d.refresh(c);
      expect(r.fromCache).toBe(true);
      expect(r.error).toMatchObject({ code: 'overloaded', status: 503, retryAfterMs: 1000 });

      await expect.poll(async () => (await d.results(c)).some((x) => !x.fromCache), { timeout: 20_000 }).toBe(true);
      const log = await d.log(c);
      const refused = log.findIndex((e) => e.status === 503);
      expect(refused).toBeGreaterThan(-1);
      // Retry-After: 1 s is a floor over the 50 ms backoff step.
      expect(log[refused + 1]!.at - log[refused]!.at).toBeGreaterThanOrEqual(1000);
      const values = await d.values(c, ALL);
      expect(dataOf(values)).toEqual(EXPECTED);
    });
  });
}
