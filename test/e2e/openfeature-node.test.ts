/**
 * The real OpenFeature server SDK for Node (@openfeature/server-sdk) with the OFREP provider from npm
 * (@openfeature/ofrep-provider, dynamic context: one evaluation request per call) against a real rcd
 * process: evaluation details equal to the native wrapped answer for the same context, sticky A/B
 * groups, every failure surfacing as the SDK's error code with the code default, and a 429 with
 * Retry-After pausing the provider. The provider's own fetch is wrapped only to record what went over
 * the wire.
 */
import { ErrorCode, OpenFeature, type Client, type EvaluationContext, type EvaluationDetails, type JsonValue } from '@openfeature/server-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'ofrep-node-key-1';
const SHOP_MAPPING = {
  rules: [
    { segment: 'eu', when: { country: { $in: ['DE', 'FR'] } }, patch: { currency: 'EUR' } },
    {
      segment: 'refresh',
      variants: [
        { name: 'A', mod: [0, 499], patch: { refreshHours: 6 } },
        { name: 'B', mod: [500, 999], patch: { refreshHours: 12 }, info: 'long' },
      ],
    },
  ],
};
const BUNDLE = {
  environments: {
    live: {
      keys: [KEY],
      content: {
        Settings: { json: { difficulty: 'normal', lives: 3 } },
        Shop: { json: { currency: 'USD', refreshHours: 8, items: ['sword'] }, mapping: SHOP_MAPPING },
        Promo: { json: { banner: 'none' }, mapping: { rules: [{ segment: 'vip', when: { vip: true }, patch: { banner: 'gold' }, info: 'vip-banner' }] } },
        Levels: { revisions: [{ json: { level: 1 } }, { json: { level: 2 }, minAppVersion: '2.0.0' }] },
        DarkMode: { json: true },
        Motd: { json: 'welcome back' },
        MaxLobby: { json: 16 },
      },
    },
  },
};

const silent = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

interface Sent {
  readonly url: string;
  readonly status: number;
  readonly retryAfter: string | null;
  readonly at: number;
}

/** A client on its own domain, its provider's fetch recording every exchange. */
async function clientFor(base: string, domain: string, headers: [string, string][]): Promise<{ client: Client; sent: Sent[] }> {
  const sent: Sent[] = [];
  const recording = async (input: Request | string | URL, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init);
    sent.push({ url: input instanceof Request ? input.url : String(input), status: res.status, retryAfter: res.headers.get('retry-after'), at: Date.now() });
    return res;
  };
  await OpenFeature.setProviderAndWait(domain, new OFREPProvider({ baseUrl: base, headers, fetchImplementation: recording }));
  return { client: OpenFeature.getClient(domain), sent };
}

interface Wrapped {
  data: JsonValue;
  hash: string;
  meta: { uid: number; mod: number; seg: { n: string; v: string | null; i?: string }[] };
}

async function native(base: string, id: string, body: Record<string, unknown>): Promise<Wrapped> {
  const r = await call(base, `/api/v1/config/${id}/dynamic`, { key: KEY, body: JSON.stringify(body) });
  expect(r.status).toBe(200);
  return r.json as Wrapped;
}

let srv: ServerProcess;
let tight: ServerProcess;
let client: Client;
let sent: Sent[];

beforeAll(async () => {
  OpenFeature.setLogger(silent);
  srv = await startServer({ bundle: BUNDLE });
  ({ client, sent } = await clientFor(srv.url, 'rcd', [['X-Api-Key', KEY]]));
}, 60_000);

afterAll(async () => {
  await OpenFeature.close();
  await srv?.dispose();
  await tight?.dispose();
});

/** What the native answer says the OFREP evaluation must be (docs/openfeature.md, "Mapping"). */
function expectedDetails(id: string, w: Wrapped): Partial<EvaluationDetails<JsonValue>> {
  const seg = w.meta.seg;
  return {
    flagKey: id,
    value: w.data,
    reason: seg.length === 0 ? 'STATIC' : seg.some((s) => s.v !== null) ? 'SPLIT' : 'TARGETING_MATCH',
    variant: seg.length === 0 ? 'default' : seg.map((s) => (s.v === null ? s.n : `${s.n}:${s.v}`)).join(','),
    flagMetadata: { hash: w.hash, seg: JSON.stringify(seg), uid: w.meta.uid, mod: w.meta.mod },
  };
}

describe('@openfeature/server-sdk with @openfeature/ofrep-provider', () => {
  it('object evaluations carry the native answer: value, variant, reason and flag metadata, for every kind of context', async () => {
    const contexts: EvaluationContext[] = [
      { targetingKey: 'player-1', country: 'DE', appVersion: '1.5.0' },
      { targetingKey: 'player-2', country: 'US' },
      { targetingKey: 'player-3', vip: true, appVersion: '2.1.0' },
      { targetingKey: '' },
      { targetingKey: 'joueur-é-4', country: 'FR', vip: false },
    ];
    for (const ctx of contexts) {
      const { targetingKey, appVersion, ...p } = ctx;
      const body = appVersion === undefined ? { u: targetingKey, p } : { u: targetingKey, p, v: appVersion };
      for (const id of ['Settings', 'Shop', 'Promo', 'Levels']) {
        const details = await client.getObjectDetails(id, {}, ctx);
        expect(details.errorCode, `${id} ${JSON.stringify(ctx)}: ${details.errorMessage ?? ''}`).toBeUndefined();
        expect(details).toMatchObject(expectedDetails(id, await native(srv.url, id, body)));
      }
    }
    // The Levels revision follows appVersion as v does.
    expect((await client.getObjectValue('Levels', {}, { targetingKey: 'x', appVersion: '2.0.0' })) as unknown).toEqual({ level: 2 });
    expect((await client.getObjectValue('Levels', {}, { targetingKey: 'x', appVersion: '1.9.9' })) as unknown).toEqual({ level: 1 });
    // Flag keys follow the id rule (caseless): the answer names the id as created.
    expect((await client.getObjectDetails('sHoP', {}, { targetingKey: 'player-1' })).value).toEqual((await native(srv.url, 'Shop', { u: 'player-1' })).data);
  });

  it('content that is a boolean, a string or a number evaluates as that type; another type is TYPE_MISMATCH', async () => {
    expect(await client.getBooleanDetails('DarkMode', false, { targetingKey: 'a' })).toMatchObject({ value: true, reason: 'STATIC', variant: 'default' });
    expect(await client.getStringValue('Motd', '', { targetingKey: 'a' })).toBe('welcome back');
    expect(await client.getNumberValue('MaxLobby', 0, { targetingKey: 'a' })).toBe(16);
    expect(await client.getBooleanDetails('Settings', false, { targetingKey: 'a' })).toMatchObject({ value: false, errorCode: 'TYPE_MISMATCH' });
  });

  it('A/B groups are sticky per targeting key, and spread over the variants by mod', async () => {
    for (let i = 0; i < 40; i++) {
      const ctx = { targetingKey: `sticky-${i}` };
      const first = await client.getObjectDetails('Shop', {}, ctx);
      const mod = first.flagMetadata.mod as number;
      const want = mod <= 499 ? 'A' : 'B';
      expect(first.variant).toBe(`refresh:${want}`);
      expect((first.value as { refreshHours: number }).refreshHours).toBe(want === 'A' ? 6 : 12);
      for (let again = 0; again < 3; again++) expect((await client.getObjectDetails('Shop', {}, ctx)).variant).toBe(first.variant);
    }
    const variants = new Set<string>();
    for (let i = 0; i < 40; i++) variants.add((await client.getObjectDetails('Shop', {}, { targetingKey: `spread-${i}` })).variant!);
    expect([...variants].sort()).toEqual(['refresh:A', 'refresh:B']);
  });

  it('a flag that does not exist is FLAG_NOT_FOUND with the code default', async () => {
    const details = await client.getObjectDetails('NoSuchFlag', { fallback: true }, { targetingKey: 'a' });
    expect(details).toMatchObject({ value: { fallback: true }, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
    expect(sent.at(-1)?.status).toBe(404);
  });

  it('a bad context is INVALID_CONTEXT; an A/B test without a targeting key is TARGETING_KEY_MISSING; both with the default', async () => {
    const bad = await client.getObjectDetails('Settings', { d: 1 }, { targetingKey: 'a', appVersion: '1.2' });
    expect(bad).toMatchObject({ value: { d: 1 }, reason: 'ERROR', errorCode: 'INVALID_CONTEXT' });
    expect(sent.at(-1)?.status).toBe(400);
    const untargeted = await client.getObjectDetails('Shop', { d: 2 }, { country: 'DE' });
    expect(untargeted).toMatchObject({ value: { d: 2 }, reason: 'ERROR', errorCode: 'TARGETING_KEY_MISSING' });
    // Content whose answer does not depend on the key needs none.
    expect(await client.getObjectDetails('Promo', {}, { vip: true })).toMatchObject({ value: { banner: 'gold' }, reason: 'TARGETING_MATCH', variant: 'vip' });
  });

  it('a wrong or missing API key answers 401: the SDK returns the default with GENERAL, it never throws', async () => {
    const wrong = await clientFor(srv.url, 'wrong-key', [['X-Api-Key', 'not-a-key-at-all']]);
    expect(await wrong.client.getObjectDetails('Settings', { d: 3 }, { targetingKey: 'a' })).toMatchObject({ value: { d: 3 }, reason: 'ERROR', errorCode: 'GENERAL' });
    const none = await clientFor(srv.url, 'no-key', []);
    expect(await none.client.getObjectDetails('Settings', { d: 4 }, { targetingKey: 'a' })).toMatchObject({ value: { d: 4 }, errorCode: 'GENERAL' });
    expect([...wrong.sent, ...none.sent].map((s) => s.status)).toEqual([401, 401]);
  });

  it('the key may come as Authorization: Bearer (the specification\'s BearerAuth)', async () => {
    const bearer = await clientFor(srv.url, 'bearer', [['Authorization', `Bearer ${KEY}`]]);
    expect(await bearer.client.getObjectDetails('Promo', {}, { targetingKey: 'a', vip: true })).toMatchObject({ value: { banner: 'gold' }, variant: 'vip' });
  });

  it('at capacity the server answers 429 with Retry-After: the provider pauses (no request) until then, then evaluates again', async () => {
    // One pool job at a time and 60 items that all miss the cache: a burst is refused in part.
    const many = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`Item${i}`, { json: { i, blob: 'y'.repeat(20_000) } }]));
    tight = await startServer({ bundle: { environments: { live: { keys: [KEY], content: many } } }, args: ['--max-pending', '1', '--max-combine-ids', '1', '--threads', '1'] });
    const limited = await clientFor(tight.url, 'tight', [['X-Api-Key', KEY]]);
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => limited.client.getObjectDetails(`Item${i}`, { d: 0 }, { targetingKey: 'a' })));
    const refused = limited.sent.filter((s) => s.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]!.retryAfter).toBe('1');
    expect(results.filter((r) => r.errorCode === ErrorCode.GENERAL).length).toBe(refused.length);
    for (const r of results) if (r.errorCode === undefined) expect((r.value as { i: number }).i).toBe(Number(r.flagKey.slice(4)));
    const lastRefusal = Math.max(...refused.map((s) => s.at));

    // Within Retry-After the provider answers the default without asking the server.
    const before = limited.sent.length;
    const paused = await limited.client.getObjectDetails('Item0', { d: 1 }, { targetingKey: 'a' });
    if (Date.now() - lastRefusal < 900) {
      expect(paused).toMatchObject({ value: { d: 1 }, errorCode: 'GENERAL' });
      expect(paused.errorMessage).toMatch(/TooManyRequests/);
      expect(limited.sent.length).toBe(before);
    }
    await new Promise((resolve) => setTimeout(resolve, 1100 - Math.min(1100, Date.now() - lastRefusal)));
    const after = await limited.client.getObjectDetails('Item1', { d: 2 }, { targetingKey: 'a' });
    expect(after.errorCode).toBeUndefined();
    expect((after.value as { i: number }).i).toBe(1);
  }, 60_000);
});
