/**
 * CORS as a non-browser client sees it: off by default (OPTIONS is a 405 like any other method a
 * route does not take), and with `--cors-origins '*'` a preflight on every delivery path and the
 * allow-origin header on every answer. Real Chromium is in browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server-process.js';
import { rawCall } from '../helpers/http-raw.js';

const KEY = 'cors-test-key-123';
const BUNDLE = { environments: { web: { keys: [KEY], content: { Small: { json: { a: 1 } } } } } };
const PATHS = ['/api/v1/config/Small', '/api/v1/config/Small/dynamic', '/api/v1/combine', '/api/v1/env/catalog/'];
const PREFLIGHT = { origin: 'https://anywhere.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key,content-type,if-none-match' };

let off: ServerProcess;
let any: ServerProcess;

beforeAll(async () => {
  [off, any] = await Promise.all([startServer({ bundle: BUNDLE }), startServer({ bundle: BUNDLE, args: ['--cors-origins', '*'] })]);
});

afterAll(async () => {
  await Promise.all([off?.dispose(), any?.dispose()]);
});

describe('CORS', () => {
  it.each(PATHS)('off by default: OPTIONS %s is 405 and answers carry no CORS header', async (path) => {
    const r = await rawCall(off.url, path, { method: 'OPTIONS', headers: PREFLIGHT });
    expect(r.status).toBe(405);
    const ok = await rawCall(off.url, '/api/v1/config/Small', { key: KEY, headers: { origin: 'https://anywhere.example' } });
    expect(ok.headers['access-control-allow-origin']).toBeUndefined();
  });

  it.each(PATHS)('--cors-origins *: OPTIONS %s is a 204 preflight', async (path) => {
    const r = await rawCall(any.url, path, { method: 'OPTIONS', headers: PREFLIGHT });
    expect(r.status).toBe(204);
    expect(r.wire.length).toBe(0);
    expect(r.headers['access-control-allow-origin']).toBe('*');
    expect(r.headers['access-control-allow-methods']).toBe('GET, POST');
    expect(r.headers['access-control-allow-headers']).toBe('X-Api-Key, Authorization, Content-Type, If-None-Match, Last-Event-ID');
    expect(r.headers['access-control-max-age']).toBe('600');
  });

  it('--cors-origins *: answers and errors carry the allow-origin and expose headers', async () => {
    for (const r of [
      await rawCall(any.url, '/api/v1/config/Small', { key: KEY, headers: { origin: 'https://a.example' } }),
      await rawCall(any.url, '/api/v1/config/Small', { key: 'wrong-key-123', headers: { origin: 'https://a.example' } }),
      await rawCall(any.url, '/api/v1/env/catalog', { method: 'GET', key: KEY }),
    ]) {
      expect(r.headers['access-control-allow-origin']).toBe('*');
      expect(r.headers['access-control-expose-headers']).toBe('ETag, X-Missing-Content, Retry-After');
    }
  });
});
