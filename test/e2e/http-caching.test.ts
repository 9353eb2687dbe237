/**
 * What HTTP clients rely on, against the real server: entity tags and 304 on all four endpoints (from
 * Node's fetch, node:http and curl), tags that stay the same across restarts and nodes of one store and
 * change exactly when the answer does, Cache-Control and Content-Length on every answer, and every
 * content-coding decoding byte for byte to the uncompressed answer.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { decoded, rawCall, type RawReply } from '../helpers/http-raw.js';

const KEY = 'http-caching-key-1';
const AUTH = { authorization: 'Bearer test-admin-token' };

/** A game config of about `size` bytes of minified JSON. */
function bigConfig(size: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let length = 2;
  for (let i = 0; length < size; i++) {
    const item = { name: `Item number ${i}`, price: (i * 37) % 1000, tags: [`a${i % 7}`, `b${i % 13}`], enabled: i % 3 === 0 };
    out[`item${i}`] = item;
    length += JSON.stringify(item).length + `"item${i}":,`.length;
  }
  return out;
}

const MAPPING = {
  rules: [
    { segment: 'vip', when: { level: { $gte: 10 } }, patch: { bonus: 5 } },
    { segment: 'ab', variants: [{ name: 'A', mod: [0, 499], patch: { color: 'red' } }, { name: 'B', mod: [500, 999], patch: { color: 'blue' } }] },
  ],
};

function bundle(): unknown {
  const content: Record<string, unknown> = {
    Small: { json: { a: 1 } },
    Big: { json: bigConfig(512 * 1024) },
    Mapped: { json: { color: 'grey', ...bigConfig(4000) }, mapping: MAPPING },
  };
  for (let i = 0; i < 40; i++) content[`Filler${i}`] = { json: { i } };
  return { environments: { web: { keys: [KEY], content } } };
}

const COMBINE = '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(['Big', 'Small', 'Mapped', 'Nope']));
/** Every endpoint and option, with a body that makes the mapping apply. */
const ENDPOINTS: readonly { name: string; path: string; method: string; personal: boolean }[] = [
  { name: 'plain', path: '/api/v1/config/Big', method: 'POST', personal: false },
  { name: 'plain small', path: '/api/v1/config/small', method: 'POST', personal: false },
  { name: 'wrapped', path: '/api/v1/config/Mapped/dynamic', method: 'POST', personal: true },
  { name: 'wrapped big', path: '/api/v1/config/Big/dynamic', method: 'POST', personal: true },
  { name: 'serialized', path: '/api/v1/config/Mapped/dynamic?responseType=serialized', method: 'POST', personal: true },
  { name: 'combine', path: COMBINE, method: 'POST', personal: false },
  { name: 'combine dynamic', path: COMBINE + '&dynamic=true', method: 'POST', personal: true },
  { name: 'combine serialized', path: COMBINE + '&dynamic=true&responseType=serialized', method: 'POST', personal: true },
  { name: 'catalog', path: '/api/v1/env/catalog', method: 'GET', personal: false },
];
const BODY = '{"u":"player-7","p":{"level":12},"v":"1.0.0"}';

function get(srv: ServerProcess, e: { path: string; method: string }, headers: Record<string, string> = {}, body = BODY): Promise<RawReply> {
  return rawCall(srv.url, e.path, { method: e.method, key: KEY, body, headers });
}

async function adm(srv: ServerProcess, method: string, path: string, body?: string): Promise<void> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
}

let dir: string;
let srv: ServerProcess;

beforeAll(async () => {
  dir = tempDir();
  srv = await startServer({ dir, admin: true, bundle: bundle() });
});

afterAll(async () => {
  await srv?.dispose();
});

describe('ETag and 304', () => {
  it.each(ENDPOINTS)('$name: a strong ETag; If-None-Match with it answers 304 with no body', async (e) => {
    const first = await get(srv, e);
    expect(first.status).toBe(200);
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[!#-~]+"$/);
    const again = await get(srv, e, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.wire.length).toBe(0);
    expect(again.headers.etag).toBe(etag);
    expect(again.headers['cache-control']).toBe(first.headers['cache-control']);
    expect(again.headers['content-length']).toBeUndefined();
    // Another tag, a list holding it, W/.
    expect((await get(srv, e, { 'if-none-match': '"nope"' })).status).toBe(200);
    expect((await get(srv, e, { 'if-none-match': `"nope", W/${etag}` })).status).toBe(304);
    // `*` (any current answer): 304 on the catalog GET (RFC 9110 13.2.2); a content POST ignores it
    // and answers as without it (docs/api.md, "If-None-Match: *").
    const star = await get(srv, e, { 'if-none-match': '*' });
    expect(star.status).toBe(e.method === 'GET' ? 304 : 200);
    expect(star.headers.etag).toBe(etag);
    expect(star.wire.length).toBe(e.method === 'GET' ? 0 : first.wire.length);
  });

  it.each(ENDPOINTS)('$name: the tag of one coding revalidates the answer in every coding', async (e) => {
    const identity = await get(srv, e, { 'accept-encoding': 'identity' });
    const gzip = await get(srv, e, { 'accept-encoding': 'gzip' });
    const etag = identity.headers.etag as string;
    const r = await get(srv, e, { 'accept-encoding': 'gzip', 'if-none-match': etag });
    expect(r.status).toBe(304);
    // The 304 names the representation the client holds.
    expect(r.headers.etag).toBe(etag);
    if (gzip.headers['content-encoding'] === 'gzip') {
      expect(gzip.headers.etag).toBe(etag.slice(0, -1) + '.gz"');
      expect((await get(srv, e, { 'accept-encoding': 'identity', 'if-none-match': gzip.headers.etag as string })).status).toBe(304);
    } else {
      expect(gzip.headers.etag).toBe(etag);
    }
  });

  it('the tag follows what the answer is made of: the user, the app version, the query shape', async () => {
    const wrapped = ENDPOINTS.find((e) => e.name === 'wrapped')!;
    const tagOf = async (e: { path: string; method: string }, body: string): Promise<string> => (await get(srv, e, {}, body)).headers.etag as string;
    const base = await tagOf(wrapped, BODY);
    expect(await tagOf(wrapped, BODY)).toBe(base);
    expect(await tagOf(wrapped, '{"u":"player-8","p":{"level":12},"v":"1.0.0"}')).not.toBe(base);
    expect(await tagOf(wrapped, '{"u":"player-7","p":{"level":1},"v":"1.0.0"}')).not.toBe(base);
    // Attributes no rule reads do not change the answer, so they do not change the tag.
    expect(await tagOf(wrapped, '{"u":"player-7","p":{"level":12,"other":true},"v":"1.0.0"}')).toBe(base);
    const plain = ENDPOINTS.find((e) => e.name === 'plain small')!;
    expect(await tagOf(plain, '{"u":"a"}')).toBe(await tagOf(plain, '{"u":"b","p":{"level":3}}'));
    const combine = { path: '/api/v1/combine?c=' + encodeURIComponent('["Small","Big"]'), method: 'POST' };
    const reordered = { path: '/api/v1/combine?c=' + encodeURIComponent('["Big","Small"]'), method: 'POST' };
    const respelled = { path: '/api/v1/combine?c=' + encodeURIComponent('["SMALL","Big"]'), method: 'POST' };
    const c = await tagOf(combine, BODY);
    expect(await tagOf(reordered, BODY)).not.toBe(c);
    expect(await tagOf(respelled, BODY)).not.toBe(c);
    expect(await tagOf(combine, '{"u":"someone else"}')).toBe(c);
  });

  it("Node's fetch hands the 304 to the caller, on a POST as on the catalog GET", async () => {
    for (const e of [ENDPOINTS[0]!, ENDPOINTS.find((x) => x.name === 'catalog')!]) {
      const init = { method: e.method, headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: e.method === 'POST' ? BODY : undefined };
      const first = await fetch(srv.url + e.path, init);
      await first.arrayBuffer();
      const etag = first.headers.get('etag')!;
      const second = await fetch(srv.url + e.path, { ...init, headers: { ...init.headers, 'if-none-match': etag } });
      expect(second.status).toBe(304);
      expect((await second.arrayBuffer()).byteLength).toBe(0);
    }
  });

  it('curl gets the 304 too', async () => {
    const first = await get(srv, ENDPOINTS[2]!);
    const run = (args: string[]): string =>
      spawnSync('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-H', `X-Api-Key: ${KEY}`, '-H', 'Content-Type: application/json', ...args], { encoding: 'utf8' }).stdout;
    expect(run(['-X', 'POST', '--data', BODY, '-H', `If-None-Match: ${first.headers.etag as string}`, srv.url + ENDPOINTS[2]!.path])).toBe('304');
    expect(run(['-X', 'POST', '--data', BODY, srv.url + ENDPOINTS[2]!.path])).toBe('200');
    const catalog = await get(srv, { path: '/api/v1/env/catalog', method: 'GET' });
    expect(run(['--compressed', '-H', `If-None-Match: ${catalog.headers.etag as string}`, srv.url + '/api/v1/env/catalog'])).toBe('304');
  });
});

describe('Cache-Control, Vary and Content-Length', () => {
  it.each(ENDPOINTS)('$name: private when personalised, revalidated always; Content-Length, never chunked', async (e) => {
    for (const coding of ['identity', 'gzip', 'br']) {
      const r = await get(srv, e, { 'accept-encoding': coding });
      expect(r.headers['cache-control']).toBe(e.personal ? 'private, no-cache' : 'no-cache');
      expect(r.headers.vary).toBe('accept-encoding, x-api-key');
      expect(r.headers['transfer-encoding']).toBeUndefined();
      expect(r.headers['content-length']).toBe(String(r.wire.length));
    }
  });

  it('errors are not stored', async () => {
    const r = await rawCall(srv.url, '/api/v1/config/nope', { key: KEY });
    expect(r.status).toBe(404);
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.headers['content-length']).toBe(String(r.wire.length));
  });
});

describe('compression', () => {
  it.each(ENDPOINTS)('$name: gzip and br decode byte for byte to the uncompressed answer', async (e) => {
    const identity = await get(srv, e, { 'accept-encoding': 'identity' });
    expect(identity.headers['content-encoding']).toBeUndefined();
    const large = identity.wire.length >= 1024;
    for (const coding of ['gzip', 'br', 'gzip, deflate, br, zstd']) {
      const r = await get(srv, e, { 'accept-encoding': coding });
      expect(decoded(r).equals(identity.wire)).toBe(true);
      if (!large) expect(r.headers['content-encoding']).toBeUndefined();
    }
    const gzip = await get(srv, e, { 'accept-encoding': 'gzip' });
    if (large && e.name !== 'plain small') expect(gzip.headers['content-encoding']).toBe('gzip');
  });

  it('512 KiB content: gzip well under 20% of the raw size, br smaller still; br only on whole answers', async () => {
    const plain = ENDPOINTS[0]!;
    const identity = await get(srv, plain, { 'accept-encoding': 'identity' });
    const gzip = await get(srv, plain, { 'accept-encoding': 'gzip' });
    const br = await get(srv, plain, { 'accept-encoding': 'br' });
    expect(identity.wire.length).toBeGreaterThanOrEqual(512 * 1024);
    expect(gzip.wire.length).toBeLessThan(identity.wire.length * 0.2);
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.wire.length).toBeLessThan(gzip.wire.length);
    // A wrapped answer carries a per-user tail: gzip when offered, never br.
    const wrapped = await get(srv, ENDPOINTS[3]!, { 'accept-encoding': 'br, gzip' });
    expect(wrapped.headers['content-encoding']).toBe('gzip');
    expect(wrapped.wire.length).toBeLessThan(identity.wire.length * 0.2);
    expect((await get(srv, ENDPOINTS[3]!, { 'accept-encoding': 'br' })).headers['content-encoding']).toBeUndefined();
  });

  it.each([
    ['gzip;q=0, br', 'br'],
    ['br;q=0.5, gzip', 'gzip'],
    ['*', 'br'],
    ['*;q=0.1, gzip', 'gzip'],
    ['gzip;q=0', undefined],
    ['br;q=0, gzip;q=0', undefined],
    ['identity', undefined],
    ['GZIP', 'gzip'],
  ])('Accept-Encoding %s → %s', async (accept, expected) => {
    const r = await get(srv, ENDPOINTS[0]!, { 'accept-encoding': accept });
    expect(r.headers['content-encoding']).toBe(expected);
  });
});

describe('tags across restarts, nodes and edits', () => {
  async function tags(s: ServerProcess): Promise<string[]> {
    const out: string[] = [];
    for (const e of ENDPOINTS) out.push(`${e.name} ${(await get(s, e)).headers.etag as string}`);
    return out;
  }

  it('the same on a second node of the store and after a restart; changed by an edit that changes the answer, and by nothing else', async () => {
    const before = await tags(srv);
    let after: string[] = [];
    const other = await startServer({ dir, admin: true });
    try {
      expect(await tags(other)).toEqual(before);
      // A comment-only edit adds a revision with the same text: same answers, same tags.
      const bigText = JSON.stringify((bundle() as { environments: { web: { content: { Big: { json: unknown } } } } }).environments.web.content.Big.json);
      await adm(srv, 'PUT', 'environments/web/content/Big', '// a comment\n' + bigText);
      expect(await tags(other)).toEqual(before);
      // Another environment, a new key: nothing this key reads changes.
      await adm(srv, 'PUT', 'environments/other');
      await adm(srv, 'PUT', 'environments/other/content/Small', '{"a":2}');
      await adm(srv, 'POST', 'environments/web/keys');
      expect(await tags(srv)).toEqual(before);
      // Small changes: its own tag, the combines holding it and the catalog change; nothing else does.
      await adm(srv, 'PUT', 'environments/web/content/Small', '{"a":3}');
      after = await tags(other);
      const changed = ENDPOINTS.filter((_, i) => after[i] !== before[i]).map((e) => e.name);
      expect(changed).toEqual(['plain small', 'combine', 'combine dynamic', 'combine serialized', 'catalog']);
      expect(await tags(srv)).toEqual(after);
    } finally {
      await other.dispose();
    }
    await srv.stop();
    srv = await startServer({ dir, admin: true });
    expect(await tags(srv)).toEqual(after);
  }, 60_000);
});
