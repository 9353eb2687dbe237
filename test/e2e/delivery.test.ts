/**
 * The delivery API end to end: the real server process, a real SQLite file, real HTTP.
 * Every assertion on a failure checks the stable error code, never the message text.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentHash } from '../../src/shared/identity.js';
import { xxh32String } from '../../src/shared/xxh32.js';
import { BIN, call, errorCode, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

const PLAYER_SETTINGS_TEXT = `{
  // difficulty for new players
  "difficulty": "normal", /* inline */
  "motd": "see http://example.com // not a comment",
  "limits": { "lives": 3 }
}`;
const PLAYER_SETTINGS = { difficulty: 'normal', motd: 'see http://example.com // not a comment', limits: { lives: 3 } };
const PLAYER_SETTINGS_MIN = JSON.stringify(PLAYER_SETTINGS);

const BUNDLE = {
  environments: {
    prod: {
      keys: ['key-prod-1'],
      content: {
        PlayerSettings: { text: PLAYER_SETTINGS_TEXT },
        Shop: { json: { items: ['sword', 'shield'], sale: false } },
        'Odd Id/é': { json: { odd: true } },
        Versioned: {
          revisions: [
            { json: { gen: 1 } },
            { json: { gen: 2 }, minAppVersion: '2.0.0' },
            { json: { gen: 3 }, minAppVersion: '3.1.0' },
            // Patch-level: 3.1.4 and 3.1.5 differ only in the last part (once packed into one
            // inexact double, they compared equal and 3.1.4 got this revision).
            { json: { gen: 4 }, minAppVersion: '3.1.5' },
          ],
        },
      },
    },
    dev: {
      keys: ['key-dev-01'],
      content: { PlayerSettings: { json: { dev: true } }, DevOnly: { json: 1 } },
    },
  },
};

let server: ServerProcess;
const prod = { key: 'key-prod-1' };

beforeAll(async () => {
  server = await startServer({ bundle: BUNDLE, args: ['--max-body', '1024', '--max-combine-ids', '5'] });
});
afterAll(async () => {
  await server?.dispose();
});

describe('routing and methods', () => {
  it('answers /healthz without a key', async () => {
    const r = await call(server.url, '/healthz', { method: 'GET', key: null, contentType: null });
    expect(r.status).toBe(200);
    // The applied change-log seq: the import that created this store's content is in it.
    expect(r.json).toEqual({ status: 'ok', seq: expect.any(Number) as unknown, loop: expect.any(Number) as unknown });
    expect((r.json as { seq: number }).seq).toBeGreaterThan(0);
  });

  it('answers 404 not_found for unknown paths', async () => {
    const r = await call(server.url, '/api/v1/nope', prod);
    expect(r.status).toBe(404);
    expect(errorCode(r)).toBe('not_found');
    expect(r.headers.get('content-type')).toBe('application/json');
  });

  it('answers 405 with Allow for a known path with another method', async () => {
    const get = await call(server.url, '/api/v1/config/PlayerSettings', { ...prod, method: 'GET' });
    expect(get.status).toBe(405);
    expect(errorCode(get)).toBe('method_not_allowed');
    expect(get.headers.get('allow')).toBe('POST');
    const post = await call(server.url, '/api/v1/env/catalog', { ...prod, method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    const put = await call(server.url, '/api/v1/combine?c=["Shop"]', { ...prod, method: 'PUT' });
    expect(put.status).toBe(405);
  });

  it('matches the method before anything else, on every route and with the trailing slash', async () => {
    // uWS's router picks the method-specific route; everything else on the path lands on the 405 handler.
    const cases: [string, string, string][] = [
      ['/api/v1/config/Shop', 'GET', 'POST'],
      ['/api/v1/config/Shop/', 'DELETE', 'POST'],
      ['/api/v1/config/Shop/dynamic', 'GET', 'POST'],
      ['/api/v1/config/Shop/dynamic/', 'PATCH', 'POST'],
      ['/api/v1/combine/', 'GET', 'POST'],
      ['/api/v1/env/catalog/', 'PUT', 'GET'],
      ['/healthz', 'POST', 'GET'],
      ['/healthz/', 'DELETE', 'GET'],
    ];
    for (const [path, method, allow] of cases) {
      // No key and no content type: the method is judged first.
      const r = await call(server.url, path, { method, key: null, contentType: null });
      expect([path, method, r.status, errorCode(r), r.headers.get('allow')]).toEqual([path, method, 405, 'method_not_allowed', allow]);
    }
    const head = await fetch(`${server.url}/healthz`, { method: 'HEAD' });
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('GET');
  });

  it('accepts the trailing slash', async () => {
    expect((await call(server.url, '/api/v1/combine/?c=%5B%22Shop%22%5D', prod)).status).toBe(200);
    expect((await call(server.url, '/api/v1/config/Shop/', prod)).status).toBe(200);
    expect((await call(server.url, '/api/v1/config/Shop/dynamic/', prod)).status).toBe(200);
  });
});

describe('checks in the documented order', () => {
  it('401 missing_api_key and invalid_api_key', async () => {
    const missing = await call(server.url, '/api/v1/config/Shop', { key: null });
    expect(missing.status).toBe(401);
    expect(errorCode(missing)).toBe('missing_api_key');
    const wrong = await call(server.url, '/api/v1/config/Shop', { key: 'nope' });
    expect(wrong.status).toBe(401);
    expect(errorCode(wrong)).toBe('invalid_api_key');
    const catalog = await call(server.url, '/api/v1/env/catalog', { method: 'GET', key: 'nope' });
    expect(errorCode(catalog)).toBe('invalid_api_key');
  });

  it('checks the key before the Content-Type', async () => {
    const r = await call(server.url, '/api/v1/config/Shop', { key: null, contentType: 'text/plain' });
    expect(errorCode(r)).toBe('missing_api_key');
  });

  it('400 unsupported_content_type, also on the catalog GET; parameters are allowed', async () => {
    for (const ct of [null, 'text/plain', 'application/jsonx']) {
      const r = await call(server.url, '/api/v1/config/Shop', { ...prod, contentType: ct });
      expect(r.status).toBe(400);
      expect(errorCode(r)).toBe('unsupported_content_type');
    }
    const cat = await call(server.url, '/api/v1/env/catalog', { ...prod, method: 'GET', contentType: null });
    expect(errorCode(cat)).toBe('unsupported_content_type');
    const ok = await call(server.url, '/api/v1/config/Shop', { ...prod, contentType: 'Application/JSON; charset=utf-8' });
    expect(ok.status).toBe(200);
  });

  it('413 payload_too_large over the configured limit, before JSON checks', async () => {
    const body = JSON.stringify({ u: 'x'.repeat(2000) });
    const r = await call(server.url, '/api/v1/config/Shop', { ...prod, body });
    expect(r.status).toBe(413);
    expect(errorCode(r)).toBe('payload_too_large');
    const bad = await call(server.url, '/api/v1/config/Shop', { ...prod, body: '{' + ' '.repeat(2000) });
    expect(errorCode(bad)).toBe('payload_too_large');
  });

  it('checks the body before the query, and the query before the content', async () => {
    const badBodyBadQuery = await call(server.url, '/api/v1/config/Missing/dynamic?responseType=x', { ...prod, body: '[]' });
    expect(errorCode(badBodyBadQuery)).toBe('invalid_body');
    const badQueryMissing = await call(server.url, '/api/v1/config/Missing/dynamic?responseType=x', prod);
    expect(errorCode(badQueryMissing)).toBe('invalid_query');
    const missing = await call(server.url, '/api/v1/config/Missing/dynamic', prod);
    expect(missing.status).toBe(404);
    expect(errorCode(missing)).toBe('content_not_found');
  });
});

describe('body validity (spec list and issue decisions)', () => {
  const accepted: [string, string][] = [
    ['an empty root object', '{}'],
    ['only u', '{"u":"x"}'],
    ['the minimum form', '{"u":"","p":{}}'],
    ['u, v and p', '{"u":"player","p":{"country":"DE","level":7,"tags":["a","b"]},"v":"1.2.3"}'],
    ['unknown top-level fields', '{"u":"x","extra":[1,2]}'],
    ['prototype keys inside p', '{"u":"x","p":{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}}'],
  ];
  for (const [name, body] of accepted) {
    it(`accepts ${name}`, async () => {
      const r = await call(server.url, '/api/v1/config/PlayerSettings/dynamic', { ...prod, body });
      expect(r.status).toBe(200);
      expect((r.json as { data: unknown }).data).toEqual(PLAYER_SETTINGS);
    });
  }

  const refused: [string, string, string][] = [
    ['an empty body', '', 'invalid_json'],
    ['malformed JSON', '{"u":', 'invalid_json'],
    ['a JSON array', '[]', 'invalid_body'],
    ['a JSON scalar', '42', 'invalid_body'],
    ['null', 'null', 'invalid_body'],
    ['p as an array', '{"u":"","p":[]}', 'invalid_body'],
    ['p as a number', '{"u":"","p":5}', 'invalid_body'],
    ['p as null', '{"u":"","p":null}', 'invalid_body'],
    ['u as a number', '{"u":5}', 'invalid_body'],
    ['v as a number', '{"u":"","v":1}', 'invalid_body'],
    ['v with two parts', '{"v":"1.2"}', 'invalid_body'],
    ['v with a pre-release', '{"v":"1.2.3-beta"}', 'invalid_body'],
    ['v with a leading zero', '{"v":"1.02.3"}', 'invalid_body'],
  ];
  for (const [name, body, code] of refused) {
    it(`refuses ${name} with ${code}`, async () => {
      const r = await call(server.url, '/api/v1/config/PlayerSettings/dynamic', { ...prod, body });
      expect(r.status).toBe(400);
      expect(errorCode(r)).toBe(code);
    });
  }

  it('does not let prototype keys in p alter the server (later requests still answer normally)', async () => {
    const r = await call(server.url, '/api/v1/config/Shop/dynamic', { ...prod, body: '{}' });
    expect(r.status).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('endpoint 1: wrapped', () => {
  it('returns data, hash and meta with documented identity values', async () => {
    const r = await call(server.url, '/api/v1/config/PlayerSettings/dynamic', { ...prod, body: '{"u":""}' });
    expect(r.status).toBe(200);
    // XXH32("", seed 0) = 0x02CC5D05 = 46947589 (docs/api.md test vector).
    expect(r.json).toEqual({
      data: PLAYER_SETTINGS,
      hash: contentHash(PLAYER_SETTINGS_MIN),
      meta: { uid: 46947589, mod: 589, seg: [] },
    });
    expect((r.json as { hash: string }).hash).toMatch(/^[0-9a-f]{32}$/);
    // One body with a length, not a chunked stream.
    expect(r.headers.get('content-length')).toBe(String(Buffer.byteLength(r.text)));
    expect(r.headers.get('transfer-encoding')).toBeNull();
  });

  it('gives the same u the same uid, and different u different uids', async () => {
    const a1 = await call(server.url, '/api/v1/config/Shop/dynamic', { ...prod, body: '{"u":"player-42"}' });
    const a2 = await call(server.url, '/api/v1/config/Shop/dynamic', { ...prod, body: '{"u":"player-42","p":{"x":1}}' });
    const b = await call(server.url, '/api/v1/config/Shop/dynamic', { ...prod, body: '{"u":"player-43"}' });
    const meta = (r: { json: unknown }): { uid: number; mod: number } => (r.json as { meta: { uid: number; mod: number } }).meta;
    expect(meta(a1)).toEqual(meta(a2));
    expect(meta(a1).uid).not.toBe(meta(b).uid);
    expect(meta(a1).mod).toBe(meta(a1).uid % 1000);
  });

  it('writes each user\'s uid in the body and the ETag whatever its length, users of every length through one kept answer', async () => {
    // The body's uid is copied from the ETag's digits for 8 digits or more and written for fewer
    // (src/delivery/tail.ts): users whose uids have 6 to 10 digits, found by their XXH32, take turns.
    const byLength = new Map<number, string>();
    for (let i = 0; byLength.size < 5 && i < 5_000_000; i++) {
      const u = `len-${i}`;
      const digits = String(xxh32String(u)).length;
      if (digits >= 6 && !byLength.has(digits)) byLength.set(digits, u);
    }
    expect([...byLength.keys()].sort((a, b) => a - b)).toEqual([6, 7, 8, 9, 10]);
    const order = [10, 6, 9, 7, 8, 10, 8, 6, 9, 7].map((d) => byLength.get(d)!);
    for (const u of order) {
      const r = await call(server.url, '/api/v1/config/Shop/dynamic', { ...prod, body: JSON.stringify({ u }) });
      const uid = xxh32String(u);
      expect(r.json).toEqual({ data: { items: ['sword', 'shield'], sale: false }, hash: expect.any(String) as string, meta: { uid, mod: uid % 1000, seg: [] } });
      expect(r.headers.get('etag')).toMatch(new RegExp(`\\.${uid}"$`));
      expect(r.headers.get('content-length')).toBe(String(Buffer.byteLength(r.text)));
    }
  });

  it('responseType=serialized makes data the minified JSON text; hash and meta unchanged', async () => {
    const plain = await call(server.url, '/api/v1/config/PlayerSettings/dynamic', { ...prod, body: '{"u":"z"}' });
    const ser = await call(server.url, '/api/v1/config/PlayerSettings/dynamic?responseType=serialized', { ...prod, body: '{"u":"z"}' });
    expect(ser.status).toBe(200);
    const s = ser.json as { data: string; hash: string; meta: unknown };
    expect(s.data).toBe(PLAYER_SETTINGS_MIN);
    expect(s.hash).toBe((plain.json as { hash: string }).hash);
    expect(s.meta).toEqual((plain.json as { meta: unknown }).meta);
  });

  it('responseType is case sensitive', async () => {
    for (const q of ['Serialized', 'json', '']) {
      const r = await call(server.url, `/api/v1/config/PlayerSettings/dynamic?responseType=${q}`, prod);
      expect(errorCode(r)).toBe('invalid_query');
    }
  });
});

describe('endpoint 2: content only', () => {
  it('returns the content with comments stripped and comment markers inside strings kept', async () => {
    const r = await call(server.url, '/api/v1/config/PlayerSettings', prod);
    expect(r.status).toBe(200);
    expect(r.text).toBe(PLAYER_SETTINGS_MIN);
  });

  it('ids are not case sensitive, percent-encoded ids work', async () => {
    const a = await call(server.url, '/api/v1/config/playersettings', prod);
    const b = await call(server.url, '/api/v1/config/PLAYERSETTINGS', prod);
    expect(a.text).toBe(PLAYER_SETTINGS_MIN);
    expect(b.text).toBe(PLAYER_SETTINGS_MIN);
    const odd = await call(server.url, `/api/v1/config/${encodeURIComponent('odd id/É')}`, prod);
    expect(odd.status).toBe(200);
    expect(odd.json).toEqual({ odd: true });
  });

  it('refuses responseType on the plain endpoint', async () => {
    const r = await call(server.url, '/api/v1/config/Shop?responseType=serialized', prod);
    expect(errorCode(r)).toBe('invalid_query');
  });
});

describe('app-version revisions', () => {
  const cases: [string, number][] = [
    ['', 4],
    ['"v":"0.0.1"', 1],
    ['"v":"1.99.99"', 1],
    ['"v":"2.0.0"', 2],
    ['"v":"3.0.999"', 2],
    ['"v":"3.1.0"', 3],
    ['"v":"3.1.4"', 3],
    ['"v":"3.1.5"', 4],
    ['"v":"3.1.999999999"', 4],
    ['"v":"10.0.0"', 4],
    ['"v":"999999999.999999999.999999999"', 4],
  ];
  for (const [v, gen] of cases) {
    it(`${v || 'no v'} gets revision ${gen}`, async () => {
      const r = await call(server.url, '/api/v1/config/Versioned/dynamic', { ...prod, body: `{${v}}` });
      expect((r.json as { data: unknown; hash: string }).data).toEqual({ gen });
      expect((r.json as { hash: string }).hash).toBe(contentHash(JSON.stringify({ gen })));
      const plain = await call(server.url, '/api/v1/config/Versioned', { ...prod, body: `{${v}}` });
      expect(plain.json).toEqual({ gen });
    });
  }
});

describe('combine', () => {
  const q = (ids: unknown, extra = ''): string => `/api/v1/combine?c=${encodeURIComponent(JSON.stringify(ids))}${extra}`;

  it('keys entries by the ids as written, duplicates once, missing ids in X-Missing-Content', async () => {
    const r = await call(server.url, q(['shop', 'PlayerSettings', 'shop', 'Nope', 'a,b']), prod);
    expect(r.status).toBe(200);
    expect(Object.keys(r.json as object)).toEqual(['shop', 'PlayerSettings']);
    expect(r.headers.get('x-missing-content')).toBe('Nope,a%2Cb');
  });

  it('has no X-Missing-Content header when everything exists', async () => {
    const r = await call(server.url, q(['Shop']), prod);
    expect(r.headers.get('x-missing-content')).toBeNull();
  });

  for (const [name, extra, single] of [
    ['plain', '', ''],
    ['dynamic', '&dynamic=true', '/dynamic'],
    ['dynamic serialized', '&dynamic=true&responseType=serialized', '/dynamic?responseType=serialized'],
  ] as const) {
    it(`each ${name} entry is byte-for-byte the single response`, async () => {
      const body = '{"u":"abc","v":"2.5.0","p":{"a":1}}';
      const r = await call(server.url, q(['PlayerSettings', 'Versioned', 'SHOP'], extra), { ...prod, body });
      expect(r.status).toBe(200);
      const combined = r.json as Record<string, unknown>;
      for (const id of ['PlayerSettings', 'Versioned', 'SHOP']) {
        const one = await call(server.url, `/api/v1/config/${id}${single}`, { ...prod, body });
        expect(JSON.stringify(combined[id])).toBe(one.text);
      }
    });
  }

  const bad: [string, string][] = [
    ['no c', '/api/v1/combine'],
    ['c not JSON', '/api/v1/combine?c=abc'],
    ['c not an array', q({ a: 1 })],
    ['c empty', q([])],
    ['c with a number', q(['Shop', 1])],
    ['c with an empty string', q([''])],
    ['c over the limit', q(['a', 'b', 'c', 'd', 'e', 'f'])],
    ['dynamic not a boolean', q(['Shop'], '&dynamic=yes')],
    ['serialized without dynamic', q(['Shop'], '&responseType=serialized')],
    ['serialized with dynamic=false', q(['Shop'], '&dynamic=false&responseType=serialized')],
    ['responseType wrong case', q(['Shop'], '&dynamic=true&responseType=Serialized')],
  ];
  for (const [name, path] of bad) {
    it(`refuses ${name} with invalid_query`, async () => {
      const r = await call(server.url, path, prod);
      expect(r.status).toBe(400);
      expect(errorCode(r)).toBe('invalid_query');
    });
  }

  it('answers {} when no id exists', async () => {
    const r = await call(server.url, q(['Nope']), prod);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({});
    expect(r.headers.get('x-missing-content')).toBe('Nope');
  });
});

describe('catalog and isolation', () => {
  it('lists every id as created with the hash of the newest revision', async () => {
    const r = await call(server.url, '/api/v1/env/catalog', { ...prod, method: 'GET' });
    expect(r.status).toBe(200);
    const catalog = (r.json as { catalog: Record<string, { h: string; d: boolean }> }).catalog;
    expect(Object.keys(catalog).sort()).toEqual(['Odd Id/é', 'PlayerSettings', 'Shop', 'Versioned']);
    expect(catalog.Versioned).toEqual({ h: contentHash('{"gen":4}'), d: false });
    const wrapped = await call(server.url, '/api/v1/config/PlayerSettings/dynamic', prod);
    expect(catalog.PlayerSettings!.h).toBe((wrapped.json as { hash: string }).hash);
  });

  it('never shows content of another environment', async () => {
    const dev = await call(server.url, '/api/v1/config/PlayerSettings', { key: 'key-dev-01' });
    expect(dev.json).toEqual({ dev: true });
    const prodOnly = await call(server.url, '/api/v1/config/Shop', { key: 'key-dev-01' });
    expect(errorCode(prodOnly)).toBe('content_not_found');
    const devOnly = await call(server.url, '/api/v1/config/DevOnly', prod);
    expect(errorCode(devOnly)).toBe('content_not_found');
    const cat = await call(server.url, '/api/v1/env/catalog', { key: 'key-dev-01', method: 'GET' });
    expect(Object.keys((cat.json as { catalog: object }).catalog).sort()).toEqual(['DevOnly', 'PlayerSettings']);
  });
});

describe('writing answers', () => {
  it('writes every kind of answer inside a corked uWS callback (uWS warns on stderr otherwise)', async () => {
    // Pool results arrive after uWS's callbacks returned: a write there without res.cork makes uWS
    // print a warning (and send the status, headers and body in separate syscalls).
    const body = JSON.stringify({ u: 'cork-check', p: {}, v: '1.0.0' });
    for (let i = 0; i < 2; i++) {
      // The first of each is a render miss (a pool result), the second a front-cache hit.
      expect((await call(server.url, '/api/v1/config/Shop/dynamic', { ...prod, body })).status).toBe(200);
      expect((await call(server.url, '/api/v1/config/Versioned', { ...prod, body })).status).toBe(200);
      expect((await call(server.url, '/api/v1/combine?c=["Shop","PlayerSettings","nope"]', { ...prod, body })).status).toBe(200);
    }
    expect((await call(server.url, '/api/v1/env/catalog', { ...prod, method: 'GET' })).status).toBe(200);
    expect((await call(server.url, '/api/v1/config/Shop', { ...prod, body: '{"u":1}' })).status).toBe(400);
    expect((await call(server.url, '/api/v1/config/Shop', { key: 'nope' })).status).toBe(401);
    expect(server.stderr()).not.toContain('corked');
  });
});

describe('persistence and the store', () => {
  it('keeps data across a restart, keeps the hash on a comment-only edit, and exits 0 on SIGTERM', async () => {
    const dir = tempDir();
    const first = await startServer({ dir, bundle: BUNDLE });
    const before = await call(first.url, '/api/v1/config/PlayerSettings/dynamic', prod);
    expect(await first.stop()).toBe(0);

    const edited = structuredClone(BUNDLE);
    edited.environments.prod.content.PlayerSettings = { text: PLAYER_SETTINGS_TEXT.replace('difficulty for new players', 'edited comment') };
    const file = join(dir, 'edited.json');
    writeFileSync(file, JSON.stringify(edited));
    execFileSync(process.execPath, [BIN, 'import', file, '--store', `sqlite:${join(dir, 'rcd.db')}`]);

    const second = await startServer({ dir });
    try {
      const after = await call(second.url, '/api/v1/config/PlayerSettings/dynamic', prod);
      expect(after.status).toBe(200);
      expect(after.json).toEqual(before.json);
    } finally {
      await second.dispose();
    }
  });
});
