/**
 * The supported deployment: a real nginx (Debian package) with docs/nginx/rcd.conf, exactly as
 * docs/deployment.md tells operators to install it, in front of the real rcd. The delivery API works
 * through it for HTTP/1.0 and HTTP/1.1 clients, heads up to 16 KiB however split, and every input
 * rcd's own parser leaves unanswered gets an answer (or a close) at once. A request on an upstream
 * connection idle past rcd's 10 s idle timeout is checked by idle-timeout.test.ts (npm run test:slow).
 *
 * nginx is required: `.ci/run` installs it; a machine without it fails here with a clear message.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS } from '../../src/runtime/errors.js';
import { rawExchange, responsesIn, type RawOutcome } from '../helpers/raw.js';
import { CLOSED_INPUTS, UNANSWERED_INPUTS, combinePath, contentPost, healthHead, splitInto } from '../helpers/http-inputs.js';
import { RECOMMENDED_CONF, findNginx, startBehindNginx, type NginxProcess } from '../helpers/nginx.js';
import { call, errorCode, type ServerProcess } from '../helpers/server-process.js';
import { decoded, rawCall } from '../helpers/http-raw.js';
import { request } from 'node:http';

const KEY = 'nginx-test-key-1';
const OTHER_KEY = 'nginx-other-key-1';
/** 100 distinct ids of exactly 40 characters. */
const LONG_IDS = Array.from({ length: 100 }, (_, i) => `Item-${String(i).padStart(3, '0')}-`.padEnd(40, 'abcdefghij'));
const content: Record<string, unknown> = {
  PlayerSettings: { json: { difficulty: 'normal', lives: 3 }, mapping: { rules: [{ segment: 'pro', when: { level: { $gte: 10 } }, patch: { difficulty: 'hard' } }] } },
  Shop: { json: { items: ['sword'] } },
  Big: { json: { rows: Array.from({ length: 300 }, (_, i) => ({ row: i, label: `row ${i}` })) } },
};
for (const id of LONG_IDS) content[id] = { json: { id } };
const BUNDLE = {
  environments: {
    prod: { keys: [KEY], content },
    other: { keys: [OTHER_KEY], content: { Shop: { json: { other: true } } } },
  },
};

const NGINX = findNginx();
let server: ServerProcess;
let nginx: NginxProcess;
let port: number;

beforeAll(async () => {
  // --max-body at its default (65536), which the recommended client_max_body_size (64k) matches.
  ({ server, nginx } = await startBehindNginx(BUNDLE));
  port = nginx.port;
}, 60_000);
afterAll(async () => {
  await nginx?.stop();
  await server?.dispose();
});

const prod = { key: KEY };

function bodyJson(o: RawOutcome, index = 0): { error?: { status: number; code: string } } & Record<string, unknown> {
  return JSON.parse(responsesIn(o.bytes)[index]!.body.toString('utf8')) as { error?: { status: number; code: string } };
}

describe('setup', () => {
  it('nginx is installed (.ci/run installs the Debian package)', () => {
    expect(NGINX, 'nginx not found; apt-get install nginx').not.toBeNull();
  });

  it('every code nginx answers with is one of src/runtime/errors.ts, with the same status', () => {
    const conf = readFileSync(RECOMMENDED_CONF, 'utf8');
    const bodies = [...conf.matchAll(/return (\d{3}) '(\{.*\})';/g)];
    expect(bodies.length).toBeGreaterThanOrEqual(7);
    for (const [, status, body] of bodies) {
      const err = (JSON.parse(body!) as { error: { status: number; code: keyof typeof ERROR_STATUS } }).error;
      expect([err.code, err.status, Number(status)]).toEqual([err.code, ERROR_STATUS[err.code], ERROR_STATUS[err.code]]);
    }
  });
});

describe('the delivery API through nginx (HTTP/1.1 clients)', () => {
  it('answers all four endpoints and /healthz byte for byte as rcd does', async () => {
    const body = JSON.stringify({ u: 'player-1', p: { level: 12 }, v: '1.0.0' });
    const paths: [string, string][] = [
      ['POST', '/api/v1/config/PlayerSettings/dynamic'],
      ['POST', '/api/v1/config/PlayerSettings/dynamic?responseType=serialized'],
      ['POST', '/api/v1/config/PlayerSettings'],
      ['POST', `/api/v1/combine?c=${encodeURIComponent('["PlayerSettings","Shop","Nope"]')}&dynamic=true`],
      ['GET', '/api/v1/env/catalog'],
    ];
    for (const [method, path] of paths) {
      const direct = await call(server.url, path, { ...prod, method, body });
      const proxied = await call(nginx.url, path, { ...prod, method, body });
      expect([path, proxied.status, proxied.text]).toEqual([path, 200, direct.text]);
      expect(proxied.headers.get('content-type')).toBe('application/json');
      expect(proxied.headers.get('x-missing-content')).toBe(direct.headers.get('x-missing-content'));
    }
    // OpenFeature (OFREP), with the key in X-Api-Key or as a bearer token (a malformed one is dropped).
    const context = JSON.stringify({ context: { targetingKey: 'player-1', level: 12 } });
    // (prod holds more items than a bulk evaluation may: its bulk is read with the other key.)
    for (const [path, key] of [['/ofrep/v1/evaluate/flags/PlayerSettings', KEY], ['/ofrep/v1/evaluate/flags', OTHER_KEY]] as const) {
      const direct = await call(server.url, path, { key, body: context });
      expect(direct.status).toBe(200);
      expect((await call(nginx.url, path, { key, body: context })).text).toBe(direct.text);
      expect((await call(nginx.url, path, { key: null, headers: { authorization: `Bearer ${key}` }, body: context })).text).toBe(direct.text);
      const mangled = await call(nginx.url, path, { key: null, headers: { authorization: `Bearer ${KEY}\u00e9` }, body: context });
      expect([mangled.status, errorCode(mangled)]).toEqual([401, 'missing_api_key']);
    }
    const dyn = await call(nginx.url, '/api/v1/config/PlayerSettings/dynamic', { ...prod, body });
    expect((dyn.json as { data: unknown }).data).toEqual({ difficulty: 'hard', lives: 3 });
    const health = await call(nginx.url, '/healthz', { method: 'GET', key: null, contentType: null });
    expect([health.status, health.json]).toEqual([200, { status: 'ok', seq: expect.any(Number) as unknown, loop: expect.any(Number) as unknown }]);
  });

  it('passes If-None-Match, Accept-Encoding and Last-Event-ID: 304s, compressed answers and streams through nginx', async () => {
    const path = `/api/v1/combine?c=${encodeURIComponent(JSON.stringify(['Big', ...LONG_IDS.slice(0, 20)]))}`;
    const identity = await rawCall(nginx.url, path, { key: KEY, headers: { 'accept-encoding': 'identity' } });
    const gzip = await rawCall(nginx.url, path, { key: KEY, headers: { 'accept-encoding': 'gzip' } });
    expect(identity.status).toBe(200);
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(decoded(gzip).equals(identity.wire)).toBe(true);
    const revalidated = await rawCall(nginx.url, path, { key: KEY, headers: { 'if-none-match': gzip.headers.etag as string } });
    expect(revalidated.status).toBe(304);
    // The stream is not buffered by nginx: the replayed event and `ready` arrive while it stays open.
    const text = await new Promise<string>((resolve, reject) => {
      const req = request(nginx.url + '/api/v1/env/events', { headers: { 'x-api-key': KEY, 'last-event-id': '0' } }, (res) => {
        let got = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          got += d;
          if (got.includes('event: ready')) {
            req.destroy();
            resolve(got);
          }
        });
      });
      req.on('error', reject);
      req.end();
    });
    expect(text).toContain('"all":true');
  });

  it('keeps environments apart', async () => {
    const r = await call(nginx.url, '/api/v1/config/Shop', { key: OTHER_KEY });
    expect(r.json).toEqual({ other: true });
    const missing = await call(nginx.url, '/api/v1/config/PlayerSettings', { key: OTHER_KEY });
    expect([missing.status, errorCode(missing)]).toEqual([404, 'content_not_found']);
  });

  it('passes rcd errors through with their codes', async () => {
    const cases: [string, Parameters<typeof call>[2], number, string][] = [
      ['/api/v1/config/Shop', { key: null }, 401, 'missing_api_key'],
      ['/api/v1/config/Shop', { key: 'not-a-key-at-all' }, 401, 'invalid_api_key'],
      ['/api/v1/config/Shop', { ...prod, contentType: 'text/plain' }, 400, 'unsupported_content_type'],
      ['/api/v1/config/Shop', { ...prod, body: '{' }, 400, 'invalid_json'],
      ['/api/v1/config/Shop', { ...prod, body: '{"p":5}' }, 400, 'invalid_body'],
      ['/api/v1/config/Shop/dynamic?responseType=x', prod, 400, 'invalid_query'],
      ['/api/v1/combine?c=5', prod, 400, 'invalid_query'],
      ['/api/v1/config/Nope', prod, 404, 'content_not_found'],
      ['/api/v1/nope', prod, 404, 'not_found'],
      ['/api/v1/config/Shop', { ...prod, method: 'GET' }, 405, 'method_not_allowed'],
    ];
    for (const [path, opts, status, code] of cases) {
      const r = await call(nginx.url, path, opts);
      expect([path, r.status, errorCode(r)]).toEqual([path, status, code]);
    }
    const wrong = await call(nginx.url, '/api/v1/env/catalog', { ...prod, method: 'POST' });
    expect(wrong.headers.get('allow')).toBe('GET');
    // nginx's own 404 (its internal error locations are not reachable from outside) is JSON too.
    const internal = await call(nginx.url, '/.rcd-error/502', prod);
    expect([internal.status, errorCode(internal)]).toEqual([404, 'not_found']);
  });

  it('refuses a body over --max-body with 413 payload_too_large, and accepts one just under it', async () => {
    const big = await call(nginx.url, '/api/v1/config/Shop', { ...prod, body: JSON.stringify({ u: 'x'.repeat(70_000) }) });
    expect([big.status, errorCode(big)]).toEqual([413, 'payload_too_large']);
    const fits = await call(nginx.url, '/api/v1/config/Shop', { ...prod, body: JSON.stringify({ u: 'x'.repeat(65_000) }) });
    expect(fits.status).toBe(200);
  });

  it('hands rcd a chunked request body as one body with a Content-Length', async () => {
    const head = `POST /api/v1/config/Shop HTTP/1.1\r\nHost: a\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const o = await rawExchange(port, [head, '3\r\n{"u\r\n', '5\r\n":"x"\r\n', '1\r\n}\r\n0\r\n\r\n'], { untilResponses: 1 });
    expect(o.status).toBe(200);
    expect(bodyJson(o)).toEqual({ items: ['sword'] });
  });

  it('answers pipelined requests in order', async () => {
    const three = Buffer.concat([contentPost('Shop', KEY), Buffer.from(healthHead()), contentPost('Nope', KEY)]);
    const o = await rawExchange(port, [three], { untilResponses: 3 });
    expect(responsesIn(o.bytes).map((r) => r.status)).toEqual([200, 200, 404]);
  });

  it('answers a combine of 100 forty-character ids split across several writes', async () => {
    const head = `POST ${combinePath(LONG_IDS)} HTTP/1.1\r\nHost: a\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
    expect(head.length).toBeGreaterThan(5000);
    const o = await rawExchange(port, splitInto(head, 6), { untilResponses: 1, gapMs: 30 });
    expect(o.status).toBe(200);
    const answer = bodyJson(o);
    expect(Object.keys(answer)).toEqual(LONG_IDS);
    expect(answer[LONG_IDS[99]!]).toEqual({ id: LONG_IDS[99] });
  });

  it('answers a ~16 KiB head split across several writes; a larger request line or header gets 431 header_too_large', async () => {
    const pad = 16 * 1024 - 400;
    const path = `/api/v1/config/Shop?pad=${'p'.repeat(pad)}`;
    const head = `POST ${path} HTTP/1.1\r\nHost: a\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`;
    expect(head.length).toBeGreaterThan(15 * 1024);
    const o = await rawExchange(port, splitInto(head, 12), { untilResponses: 1, gapMs: 20 });
    expect(o.status).toBe(200);
    const header = `GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: ${'b'.repeat(16 * 1024 - 200)}\r\n\r\n`;
    expect((await rawExchange(port, splitInto(header, 12), { untilResponses: 1, gapMs: 20 })).status).toBe(200);
    for (const tooBig of [`GET /healthz?${'q'.repeat(17 * 1024)} HTTP/1.1\r\nHost: a\r\n\r\n`, `GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: ${'b'.repeat(17 * 1024)}\r\n\r\n`]) {
      const refused = await rawExchange(port, splitInto(tooBig, 8), { untilResponses: 1, gapMs: 20 });
      expect([refused.status, bodyJson(refused).error?.code]).toEqual([431, 'header_too_large']);
    }
  });
});

describe('HTTP/1.0 clients of nginx', () => {
  it('get every endpoint answered, with or without Host and keep-alive', async () => {
    const post = (path: string, extra = ''): string =>
      `POST ${path} HTTP/1.0\r\n${extra}X-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{"u":"p1"}`;
    const cases: [string, number, unknown][] = [
      [post('/api/v1/config/Shop'), 200, { items: ['sword'] }],
      [post('/api/v1/config/Shop', 'Host: config.example\r\n'), 200, { items: ['sword'] }],
      [post(`/api/v1/combine?c=${encodeURIComponent('["Shop"]')}`), 200, { Shop: { items: ['sword'] } }],
      [`GET /api/v1/env/catalog HTTP/1.0\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\n\r\n`, 200, undefined],
      ['GET /healthz HTTP/1.0\r\n\r\n', 200, { status: 'ok', seq: expect.any(Number) as unknown, loop: expect.any(Number) as unknown }],
      [post('/api/v1/config/Nope'), 404, undefined],
    ];
    for (const [text, status, json] of cases) {
      const o = await rawExchange(port, [text], { untilResponses: 1 });
      expect([text.split('\r\n')[0], o.status]).toEqual([text.split('\r\n')[0], status]);
      expect(o.firstByteMs).toBeLessThan(1000);
      if (json !== undefined) expect(bodyJson(o)).toEqual(json);
    }
    const dyn = await rawExchange(port, [post('/api/v1/config/PlayerSettings/dynamic')], { untilResponses: 1 });
    expect(Object.keys(bodyJson(dyn))).toEqual(['data', 'hash', 'meta']);
    const keepAlive = `GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`;
    const two = await rawExchange(port, [keepAlive, keepAlive], { untilResponses: 2, gapMs: 50 });
    expect(responsesIn(two.bytes).map((r) => r.status)).toEqual([200, 200]);
  });
});

describe('inputs rcd does not answer itself get an answer from nginx, or a close, at once', () => {
  it('answers or closes each malformed input within 1 s, never with a 5xx other than 501/505', async () => {
    const inputs = [...UNANSWERED_INPUTS, ...CLOSED_INPUTS];
    const outcomes = await Promise.all(inputs.map((i) => rawExchange(port, [i.bytes], { untilResponses: 1, waitMs: 1000 })));
    const rows: string[] = [];
    for (let i = 0; i < inputs.length; i++) {
      const o = outcomes[i]!;
      const answered = o.status !== 0 || (o.bytes.length > 0 && o.closed);
      expect(answered || o.closed, `${inputs[i]!.name}: neither answered nor closed within 1 s`).toBe(true);
      if (o.status !== 0) {
        expect([inputs[i]!.name, [200, 400, 401, 404, 405, 431, 501, 505].includes(o.status)]).toEqual([inputs[i]!.name, true]);
      }
      rows.push(`${inputs[i]!.name}: ${o.status}`);
    }
    // Those rcd cannot see are refused by nginx with its JSON codes; a request nginx repairs (header
    // names it drops, a missing HTTP/1.1) reaches rcd and gets rcd's answer.
    const byName = new Map(inputs.map((input, i) => [input.name, outcomes[i]!]));
    const expectCode = (name: string, status: number, code: string): void => {
      const o = byName.get(name)!;
      expect([name, o.status, bodyJson(o).error?.code]).toEqual([name, status, code]);
    };
    expectCode('HTTP/1.1 without Host', 400, 'invalid_request');
    expectCode('header line without a colon', 400, 'invalid_request');
    expectCode('folded header line (SP)', 400, 'invalid_request');
    expectCode('space in a header name', 400, 'invalid_request');
    expectCode('NUL byte in a value', 400, 'invalid_request');
    expectCode('OPTIONS *', 400, 'invalid_request');
    expectCode('HTTP/2.0 in the request line', 505, 'http_version_not_supported');
    expectCode('Transfer-Encoding other than chunked', 501, 'not_implemented');
    expectCode('Content-Length and Transfer-Encoding', 400, 'invalid_request');
    expectCode('method other than the nine of RFC 9110 and 5789 (PROPFIND)', 405, 'method_not_allowed');
    expect(byName.get('HTTP/1.0 request')!.status).toBe(200);
    expect(byName.get('49 header fields')!.status).toBe(200);
    expect(byName.get('_ in a header name')!.status).toBe(200);
    expect(byName.get('bare LF line endings')!.status).toBe(200);
    expect(byName.get('0x01 byte in a value')!.status).toBe(200);
    expect(server.child.exitCode).toBeNull();
  });

  it('refuses two different Content-Length headers with 400 invalid_request', async () => {
    const text = `POST /api/v1/config/Shop HTTP/1.1\r\nHost: a\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 45\r\n\r\n{}`;
    const o = await rawExchange(port, [text], { untilResponses: 1 });
    expect([o.status, bodyJson(o).error?.code]).toEqual([400, 'invalid_request']);
  });

  it('lets only the exact key authenticate: bytes >= 0x80 or controls around it are 401 invalid_api_key', async () => {
    const key = Buffer.from(KEY, 'latin1');
    const variants = [
      Buffer.concat([Buffer.from([0xe9]), key]),
      Buffer.concat([key, Buffer.from([0xff])]),
      Buffer.concat([Buffer.from([0xc3, 0xa9]), key, Buffer.from([0x80])]),
      Buffer.concat([key, Buffer.from([0x01])]),
      Buffer.from('k'.repeat(257), 'latin1'),
    ];
    for (const k of variants) {
      const o = await rawExchange(port, [contentPost('Shop', k)], { untilResponses: 1 });
      expect([k.toString('hex').slice(0, 12), o.status, bodyJson(o).error?.code]).toEqual([k.toString('hex').slice(0, 12), 401, 'invalid_api_key']);
    }
    const exact = await rawExchange(port, [contentPost('Shop', key)], { untilResponses: 1 });
    expect(exact.status).toBe(200);
  });

  it('refuses a Content-Type with a control byte with 400 invalid_request', async () => {
    const text = `POST /api/v1/config/Shop HTTP/1.1\r\nHost: a\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\x01\r\nContent-Length: 2\r\n\r\n{}`;
    const o = await rawExchange(port, [text], { untilResponses: 1 });
    expect([o.status, bodyJson(o).error?.code]).toEqual([400, 'invalid_request']);
  });
});
