/**
 * The OFREP routes on the wire, against a real server (docs/openfeature.md): an evaluation is the
 * wrapped answer of endpoint 1 in OFREP's envelope (its value byte for byte endpoint 1's data); a bulk
 * evaluation lists every item of the key's environment in one order, with strong tags that follow
 * the native rule (304 when nothing changed, the same tag after a restart, a new one after an edit
 * but not after a comment-only edit); every error answers the OFREP body with rcd's code; the
 * environment limit, isolation, CORS, and the change stream in OFREP's format.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startServer, type Reply, type ServerProcess } from '../helpers/server-process.js';
import { NodeStream } from '../helpers/sse.js';

const KEY = 'ofrep-wire-key-1';
const OTHER_KEY = 'ofrep-wire-key-2';
const BIG_KEY = 'ofrep-wire-key-3';
const AUTH = { authorization: 'Bearer test-admin-token' };
const SHOP = {
  json: { currency: 'USD', refreshHours: 8 },
  mapping: {
    rules: [
      { segment: 'eu', when: { country: 'DE' }, patch: { currency: 'EUR' }, info: 'euro' },
      { segment: 'refresh', variants: [{ name: 'A', mod: [0, 499], patch: { refreshHours: 6 } }, { name: 'B', mod: [500, 999], patch: { refreshHours: 12 } }] },
    ],
  },
};
const BUNDLE = {
  environments: {
    live: {
      keys: [KEY],
      content: {
        Settings: { text: '{ // tuned weekly\n "difficulty": "normal", "lives": 3 }' },
        Shop: SHOP,
        Promo: { json: { banner: 'none', note: 'quote " and \u00e9' }, mapping: { rules: [{ segment: 'vip', when: { vip: true }, patch: { banner: 'gold' } }] } },
        Levels: { revisions: [{ json: { level: 1 } }, { json: { level: 2 }, minAppVersion: '2.0.0' }] },
        Future: { revisions: [{ json: { soon: true }, minAppVersion: '3.0.0' }] },
        'Straße': { json: { ok: 1 } },
        'Ids/With/Slashes': { json: [1, 2, 3] },
      },
    },
    other: { keys: [OTHER_KEY], content: { Settings: { json: { other: true } } } },
    big: { keys: [BIG_KEY], content: Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`Item${i}`, { json: { i } }])) },
  },
};
/** The ids of `live` in a bulk answer's order: by the caseless lookup key. */
const LIVE_ORDER = ['Future', 'Ids/With/Slashes', 'Levels', 'Promo', 'Settings', 'Shop', 'Straße'];

let srv: ServerProcess;

beforeAll(async () => {
  srv = await startServer({ admin: true, bundle: BUNDLE, args: ['--ofrep-bulk-max-items', '7', '--cors-origins', '*'] });
}, 60_000);

afterAll(async () => {
  await srv?.dispose();
});

function evaluate(base: string, flag: string, context: unknown, headers: Record<string, string> = {}, key: string | null = KEY): Promise<Reply> {
  return call(base, '/ofrep/v1/evaluate/flags/' + flag, { key, body: JSON.stringify({ context }), headers });
}

function bulk(base: string, context: unknown, headers: Record<string, string> = {}, key: string | null = KEY): Promise<Reply> {
  return call(base, '/ofrep/v1/evaluate/flags', { key, body: JSON.stringify({ context }), headers });
}

async function admin(method: string, path: string, body?: string): Promise<unknown> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as unknown;
}

/** The native wrapped answer's body for the same context (endpoint 1). */
async function nativeText(base: string, id: string, context: Record<string, unknown>): Promise<string> {
  const { targetingKey, appVersion, ...p } = context;
  const body: Record<string, unknown> = { p };
  if (targetingKey !== undefined) body.u = targetingKey;
  if (appVersion !== undefined) body.v = appVersion;
  const r = await call(base, `/api/v1/config/${encodeURIComponent(id)}/dynamic`, { key: KEY, body: JSON.stringify(body) });
  expect(r.status).toBe(200);
  return r.text;
}

/** The OFREP evaluation text the mapping of docs/openfeature.md makes of a native wrapped answer. */
function expectedText(id: string, native: string): string {
  const w = JSON.parse(native) as { hash: string; meta: { uid: number; mod: number; seg: { n: string; v: string | null }[] } };
  const data = native.slice('{"data":'.length, native.indexOf(`,"hash":"${w.hash}","meta":`));
  const segText = native.slice(native.indexOf(',"seg":') + ',"seg":'.length, -2);
  const seg = w.meta.seg;
  const reason = seg.length === 0 ? 'STATIC' : seg.some((s) => s.v !== null) ? 'SPLIT' : 'TARGETING_MATCH';
  const variant = seg.length === 0 ? 'default' : seg.map((s) => (s.v === null ? s.n : `${s.n}:${s.v}`)).join(',');
  return `{"key":${JSON.stringify(id)},"value":${data},"reason":"${reason}","variant":${JSON.stringify(variant)},"metadata":{"hash":"${w.hash}","seg":${JSON.stringify(segText)},"uid":${w.meta.uid},"mod":${w.meta.mod}}}`;
}

const CONTEXTS: Record<string, unknown>[] = [
  { targetingKey: 'player-1', country: 'DE', appVersion: '1.5.0' },
  { targetingKey: 'player-2', country: 'US', vip: true },
  { targetingKey: 'joueur-é', appVersion: '2.0.0' },
  { targetingKey: '' },
];

describe('single-flag evaluation', () => {
  it('is endpoint 1 in OFREP\'s envelope: the value byte for byte the wrapped data, reason/variant/metadata from meta', async () => {
    for (const context of CONTEXTS) {
      for (const id of ['Settings', 'Shop', 'Promo', 'Levels', 'Straße', 'Ids/With/Slashes']) {
        const r = await evaluate(srv.url, encodeURIComponent(id), context);
        expect(r.status, r.text).toBe(200);
        expect(r.text).toBe(expectedText(id, await nativeText(srv.url, id, context)));
        expect(r.headers.get('content-type')).toBe('application/json');
        expect(r.headers.get('cache-control')).toBe('private, no-cache');
        expect(r.headers.get('vary')).toBe('accept-encoding, x-api-key, authorization');
        expect(r.headers.get('etag')).toMatch(/^"o\d+\.w[0-9a-f]{32}\.\d+\..*\.\d+"$/);
      }
    }
  });

  it('keys follow the id rule and are echoed as created; an id holding / may be sent unencoded', async () => {
    const r = await evaluate(srv.url, 'STRASSE', { targetingKey: 'a' });
    expect(r.status).toBe(200);
    expect((r.json as { key: string }).key).toBe('Straße');
    const slashes = await evaluate(srv.url, 'ids/with/slashes', { targetingKey: 'a' });
    expect(slashes.json).toMatchObject({ key: 'Ids/With/Slashes', value: [1, 2, 3], reason: 'STATIC' });
  });

  it('answers 304 to its own ETag, and the same tag for the same user every time', async () => {
    const first = await evaluate(srv.url, 'Shop', { targetingKey: 'p', country: 'DE' });
    const tag = first.headers.get('etag')!;
    expect((await evaluate(srv.url, 'Shop', { targetingKey: 'p', country: 'DE' })).headers.get('etag')).toBe(tag);
    const again = await evaluate(srv.url, 'Shop', { targetingKey: 'p', country: 'DE' }, { 'if-none-match': tag });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(tag);
    expect((await evaluate(srv.url, 'Shop', { targetingKey: 'q', country: 'DE' }, { 'if-none-match': tag })).status).toBe(200);
  });

  it('ignores If-None-Match: * (a POST names no copy by it): the answer, as without it, single and bulk', async () => {
    const first = await evaluate(srv.url, 'Shop', { targetingKey: 'p', country: 'DE' });
    const star = await evaluate(srv.url, 'Shop', { targetingKey: 'p', country: 'DE' }, { 'if-none-match': '*' });
    expect(star.status).toBe(200);
    expect(star.text).toBe(first.text);
    expect(star.headers.get('etag')).toBe(first.headers.get('etag'));
    const all = await bulk(srv.url, { targetingKey: 'p' });
    const allStar = await bulk(srv.url, { targetingKey: 'p' }, { 'if-none-match': '*' });
    expect(allStar.status).toBe(200);
    expect(allStar.text).toBe(all.text);
  });
});

describe('bulk evaluation', () => {
  it('lists every item of the environment in one order, each the single evaluation, failures per flag', async () => {
    const context = { targetingKey: 'player-1', country: 'DE', appVersion: '1.5.0' };
    const r = await bulk(srv.url, context);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('cache-control')).toBe('private, no-cache');
    const body = r.json as { flags: { key: string }[]; eventStreams: { type: string; endpoint: { requestUri: string } }[] };
    expect(body.flags.map((f) => f.key)).toEqual(LIVE_ORDER);
    for (const flag of body.flags) {
      if (flag.key === 'Future') continue;
      expect(flag).toEqual((await evaluate(srv.url, encodeURIComponent(flag.key), context)).json);
    }
    expect(body.flags[0]).toEqual({ key: 'Future', errorCode: 'FLAG_NOT_FOUND', errorDetails: 'no revision of this content is available for app version 1.5.0' });
    expect(body.eventStreams).toEqual([{ type: 'sse', endpoint: { requestUri: expect.stringMatching(/^\/api\/v1\/env\/events\?format=ofrep&token=key_[0-9a-f]{16}\.\d+\.[\w-]+$/) as string } }]);

    // Without a targeting key the A/B item fails alone; the others are evaluated.
    const untargeted = (await bulk(srv.url, { country: 'DE' })).json as { flags: { key: string; errorCode?: string; value?: unknown }[] };
    expect(untargeted.flags.find((f) => f.key === 'Shop')).toMatchObject({ errorCode: 'TARGETING_KEY_MISSING' });
    expect(untargeted.flags.find((f) => f.key === 'Settings')).toMatchObject({ value: { difficulty: 'normal', lives: 3 } });
  });

  it('each key reads its own environment only', async () => {
    const r = await bulk(srv.url, { targetingKey: 'a' }, {}, OTHER_KEY);
    expect((r.json as { flags: unknown[] }).flags).toEqual([expect.objectContaining({ key: 'Settings', value: { other: true } })]);
    expect((await evaluate(srv.url, 'Shop', { targetingKey: 'a' }, {}, OTHER_KEY)).status).toBe(404);
  });

  it('a larger environment than --ofrep-bulk-max-items is refused, naming the limit and the native alternative', async () => {
    const r = await bulk(srv.url, { targetingKey: 'a' }, {}, BIG_KEY);
    expect(r.status).toBe(400);
    const body = r.json as { errorCode: string; errorDetails: string; error: { code: string } };
    expect(body.errorCode).toBe('GENERAL');
    expect(body.error.code).toBe('ofrep_bulk_too_large');
    expect(body.errorDetails).toContain('--ofrep-bulk-max-items 7');
    expect(body.errorDetails).toContain('/api/v1/env/catalog');
    expect(body.errorDetails).toContain('/api/v1/combine');
    // Its flags are still evaluated one by one.
    expect((await evaluate(srv.url, 'Item3', { targetingKey: 'a' }, {}, BIG_KEY)).json).toMatchObject({ value: { i: 3 } });
  });

  it('a strong tag: 304 while nothing changed, new after an edit of any item, unchanged by a comment-only edit', async () => {
    const context = { targetingKey: 'tagger', country: 'US' };
    const first = await bulk(srv.url, context);
    const tag = first.headers.get('etag')!;
    expect(tag).toMatch(/^"c[\w-]{27}"$/);
    const same = await bulk(srv.url, context, { 'if-none-match': tag });
    expect(same.status).toBe(304);
    expect(same.headers.get('etag')).toBe(tag);
    // Another user: other uids in the answer, another tag.
    expect((await bulk(srv.url, { ...context, targetingKey: 'other' }, { 'if-none-match': tag })).status).toBe(200);

    await admin('PUT', 'environments/live/content/Settings', '{ // a comment changes nothing delivered\n "difficulty": "normal", "lives": 3 }');
    expect((await bulk(srv.url, context, { 'if-none-match': tag })).status).toBe(304);

    await admin('PUT', 'environments/live/content/Promo', JSON.stringify({ banner: 'none', note: 'edited' }));
    const edited = await bulk(srv.url, context, { 'if-none-match': tag });
    expect(edited.status).toBe(200);
    expect(edited.headers.get('etag')).not.toBe(tag);
    expect((edited.json as { flags: { key: string; value: unknown }[] }).flags.find((f) => f.key === 'Promo')!.value).toEqual({ banner: 'none', note: 'edited' });
  });
});

describe('errors', () => {
  it.each([
    ['no key', { key: null }, 401, 'GENERAL', 'missing_api_key'],
    ['an unknown key', { key: 'not-a-key-at-all' }, 401, 'GENERAL', 'invalid_api_key'],
    ['an unknown bearer key', { key: null, headers: { authorization: 'Bearer not-a-key-at-all' } }, 401, 'GENERAL', 'invalid_api_key'],
    ['a bearer key', { key: null, headers: { authorization: `Bearer ${KEY}` } }, 200, undefined, undefined],
    ['another Content-Type', { contentType: 'text/plain' }, 400, 'GENERAL', 'unsupported_content_type'],
    ['a Content-Type that only starts as JSON', { contentType: 'application/jsonx' }, 400, 'GENERAL', 'unsupported_content_type'],
    ['a JSON Content-Type with a suffix after its parameters', { contentType: 'application/json-seq; charset=utf-8' }, 400, 'GENERAL', 'unsupported_content_type'],
    ['a JSON Content-Type in another letter case, with a charset', { contentType: 'Application/JSON; charset=UTF-8' }, 200, undefined, undefined],
    ['a body that is not JSON', { body: '{"context":' }, 400, 'PARSE_ERROR', 'invalid_json'],
    ['an empty body', { body: '' }, 400, 'PARSE_ERROR', 'invalid_json'],
    ['a context that is not an object', { body: '{"context":[1]}' }, 400, 'INVALID_CONTEXT', 'invalid_body'],
    ['a targetingKey that is not a string', { body: '{"context":{"targetingKey":7}}' }, 400, 'INVALID_CONTEXT', 'invalid_body'],
    ['an appVersion that is not X.Y.Z', { body: '{"context":{"appVersion":"1.2"}}' }, 400, 'INVALID_CONTEXT', 'invalid_body'],
    ['an unknown flag', { flag: 'Nope' }, 404, 'FLAG_NOT_FOUND', 'content_not_found'],
    ['a key that does not decode', { flag: 'bad%E0%A4%A' }, 404, 'FLAG_NOT_FOUND', 'content_not_found'],
    ['a body over --max-body', { body: JSON.stringify({ context: { targetingKey: 'x'.repeat(70_000) } }) }, 413, 'GENERAL', 'payload_too_large'],
  ] as const)('%s', async (_name, o: { key?: string | null; headers?: Record<string, string>; contentType?: string; body?: string; flag?: string }, status, errorCode, code) => {
    const flag = o.flag ?? 'Settings';
    const opts = { key: o.key === undefined ? KEY : o.key, headers: o.headers, contentType: o.contentType, body: o.body ?? '{"context":{"targetingKey":"a"}}' };
    const single = await call(srv.url, '/ofrep/v1/evaluate/flags/' + flag, opts);
    expect(single.status, single.text).toBe(status);
    if (code === undefined) return;
    expect(single.json).toMatchObject({ key: flag.includes('%E0') ? flag : decodeURIComponent(flag), errorCode, error: { status, code } });
    expect(single.headers.get('cache-control')).toBe('no-store');
    if (o.flag !== undefined) return;
    const all = await call(srv.url, '/ofrep/v1/evaluate/flags', opts);
    expect(all.status).toBe(status);
    expect(all.json).toMatchObject({ errorCode, error: { status, code } });
    expect((all.json as { key?: string }).key).toBeUndefined();
  });

  it('another method is 405 with Allow; OPTIONS is the CORS preflight, allowing Authorization', async () => {
    for (const path of ['/ofrep/v1/evaluate/flags', '/ofrep/v1/evaluate/flags/Settings']) {
      const get = await call(srv.url, path, { method: 'GET', key: KEY });
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST');
      const pre = await fetch(srv.url + path, { method: 'OPTIONS', headers: { origin: 'https://game.example', 'access-control-request-method': 'POST' } });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-headers')).toContain('Authorization');
    }
  });
});

describe('the change stream in OFREP format (eventStreams)', () => {
  it('an edit is a refetchEvaluation event; a client that resumes from before it hears one at once; a revoked key ends it', async () => {
    const created = (await admin('POST', 'environments/other/keys', '{}')) as { key: string; id: string };
    const first = (await bulk(srv.url, { targetingKey: 'a' }, {}, created.key)).json as { eventStreams: { endpoint: { requestUri: string } }[] };
    const url = srv.url + first.eventStreams[0]!.endpoint.requestUri;
    const s = new NodeStream(url, {});
    try {
      await s.until(() => s.events.length > 0);
      expect(s.status).toBe(200);
      expect(s.headers['content-type']).toBe('text/event-stream');
      // The opening frame carries only the current id: EventSource dispatches nothing, but resumes from it.
      const health = (): Promise<number> => call(srv.url, '/healthz', { method: 'GET' }).then((r) => (r.json as { seq: number }).seq);
      expect(s.events[0]).toEqual({ id: String(await health()), event: 'message', data: '' });
      await admin('PUT', 'environments/other/content/Settings', '{"other":"edited"}');
      await s.until(() => s.events.length > 1);
      // Its id is the store's change-log sequence of the edit, as on the native stream.
      expect(s.events[1]).toEqual({ id: String(await health()), event: 'message', data: '{"type":"refetchEvaluation"}' });
      // Resuming from before the edit: one refetch right away.
      const resumed = new NodeStream(url, { 'last-event-id': s.events[0]!.id! });
      await resumed.until(() => resumed.events.length > 0);
      expect(resumed.events[0]!.data).toBe('{"type":"refetchEvaluation"}');
      resumed.close();
      // The same answer, the same token: the bulk answer stays 304 within the token's window.
      const tag = (await bulk(srv.url, { targetingKey: 'a' }, {}, created.key)).headers.get('etag')!;
      expect((await bulk(srv.url, { targetingKey: 'a' }, { 'if-none-match': tag }, created.key)).status).toBe(304);

      await admin('DELETE', `environments/other/keys/${created.id}`);
      await s.until(() => s.ended);
      const refused = new NodeStream(url, {});
      await refused.until(() => refused.status !== 0);
      expect(refused.status).toBe(401);
      refused.close();
    } finally {
      s.close();
    }
  });
});

describe('across a restart and with a broken mapping', () => {
  it('the same answers carry the same tags after a restart; a mapping that no longer compiles fails its own flag only', async () => {
    // A bulk answer names a change-stream token of the current window (--stream-token-ttl), which is
    // part of its tag: with day-long windows, and away from a window's end, both answers share one.
    const args = ['--ofrep-bulk-max-items', '7', '--stream-token-ttl', '86400'];
    const msToWindowEnd = 86_400_000 - (Date.now() % 86_400_000);
    if (msToWindowEnd < 60_000) await new Promise((r) => setTimeout(r, msToWindowEnd + 1000));
    const server = await startServer({ bundle: BUNDLE, args });
    try {
      const context = { targetingKey: 'restart', country: 'DE' };
      const before = await bulk(server.url, context);
      const single = await evaluate(server.url, 'Shop', context);
      await server.stop();
      const db = new Database(join(server.dir, 'rcd.db'));
      const restarted = await startServer({ dir: server.dir, args });
      try {
        expect((await bulk(restarted.url, context, { 'if-none-match': before.headers.get('etag')! })).status).toBe(304);
        expect((await evaluate(restarted.url, 'Shop', context, { 'if-none-match': single.headers.get('etag')! })).status).toBe(304);
      } finally {
        await restarted.stop();
      }
      // A stored mapping this version cannot compile (as one stored by an older version could be).
      db.prepare(`UPDATE mappings SET json = '{"rules":[{"segment":"s","when":{"name":{"$regex":"(?=x)"}},"patch":{"a":1}}]}' WHERE mapping_id = (SELECT mapping_id FROM contents WHERE id = 'Promo' AND env_id = 'live')`).run();
      db.close();
      const broken = await startServer({ dir: server.dir, args: ['--ofrep-bulk-max-items', '7'] });
      try {
        const r = await bulk(broken.url, context);
        expect(r.status).toBe(200);
        const flags = (r.json as { flags: { key: string; errorCode?: string; value?: unknown }[] }).flags;
        expect(flags.find((f) => f.key === 'Promo')).toMatchObject({ errorCode: 'GENERAL' });
        expect(flags.find((f) => f.key === 'Settings')).toMatchObject({ value: { difficulty: 'normal', lives: 3 } });
        const one = await evaluate(broken.url, 'Promo', context);
        expect(one.status).toBe(500);
        expect(one.json).toMatchObject({ key: 'Promo', errorCode: 'GENERAL', error: { code: 'internal' } });
      } finally {
        await broken.dispose();
      }
    } finally {
      await server.dispose();
    }
  }, 60_000);
});
