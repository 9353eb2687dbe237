/**
 * What rcd's own delivery listener (the uWebSockets.js build in package.json) does with each HTTP
 * input, exactly as docs/security.md ("HTTP layer") states it, over raw sockets. The parser is
 * native code rcd cannot change from JavaScript; this file pins its behaviour so that a change of
 * build that alters any line of that table fails here and the table is brought up to date. The
 * supported deployment, nginx in front, is proved by nginx.test.ts. The inputs it holds without an
 * answer until its 10 s idle timeout are checked by idle-timeout.test.ts (npm run test:slow).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAnswer } from '../helpers/answers.js';
import { rawExchange, responsesIn } from '../helpers/raw.js';
import { CLOSED_INPUTS, contentPost, headOfSize, healthHead, rawPost, splitInto } from '../helpers/http-inputs.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'http-layer-key-1';
const BUNDLE = { environments: { env: { keys: [KEY], content: { A: { json: { a: 1 } } } } } };

let server: ServerProcess;
let port: number;

beforeAll(async () => {
  server = await startServer({ bundle: BUNDLE });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server?.dispose();
});

async function expectHealthy(): Promise<void> {
  const o = await rawExchange(port, [healthHead()], { untilResponses: 1 });
  expect(o.status).toBe(200);
  expect(server.child.exitCode).toBeNull();
}

describe('inputs the direct listener answers', () => {
  it('answers a well-formed request at once, with 48 header fields, and trims spaces and tabs around values', async () => {
    const lines = Array.from({ length: 47 }, (_, i) => `X-H${i}: v\r\n`).join('');
    const cases = [healthHead(), healthHead(lines), healthHead('X-A: a\x7fb\r\n')];
    for (const head of cases) {
      const o = await rawExchange(port, [head], { untilResponses: 1 });
      expect(o.status).toBe(200);
      expect(o.firstByteMs).toBeLessThan(1000);
    }
    const spaced = await rawExchange(port, [contentPost('A', ` \t${KEY}\t `)], { untilResponses: 1 });
    expect(spaced.status).toBe(200);
  });

  it('answers a POST with Content-Length: 0 whose head arrives in pieces (400 invalid_json), as in one piece', async () => {
    // uWS calls no data handler for an empty body when the head came in more than one read: rcd must
    // not wait for one.
    const text = `POST /api/v1/config/A HTTP/1.1\r\nHost: a\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n`;
    for (const parts of [[text], splitInto(text, 2), [text.slice(0, -2), '\r\n']]) {
      const o = await rawExchange(port, parts, { untilResponses: 1 });
      expect([parts.length, o.status]).toEqual([parts.length, 400]);
      expect(parseAnswer(responsesIn(o.bytes)[0]!.body.toString()).error?.code).toBe('invalid_json');
    }
  });

  it('routes the nine methods of RFC 9110 and RFC 5789 (405 method_not_allowed on /healthz but for GET)', async () => {
    for (const method of ['HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']) {
      const o = await rawExchange(port, [healthHead('', `${method} /healthz HTTP/1.1`)], { untilResponses: 1 });
      expect([method, o.status]).toEqual([method, 405]);
      if (method !== 'HEAD') expect(parseAnswer(responsesIn(o.bytes)[0]!.body.toString()).error?.code).toBe('method_not_allowed');
    }
  });
});

describe('answers written inside the cork uWS holds', () => {
  // rcd writes an answer straight from a route handler or a body callback, where uWS has corked the
  // socket itself, and through res.cork anywhere else (src/delivery/reply.ts). A write outside any
  // cork makes uWS print a warning on stderr: every path below must leave none.
  it('answers from the handler, from the body in the same read and in a later one, from the pool, and 304s, with no cork warning', async () => {
    const json = { 'X-Api-Key': KEY, 'Content-Type': 'application/json' };
    const body = '{"u":"cork-user","p":{}}';
    const cases: [parts: (string | Buffer)[], status: number][] = [
      // A pool render first (the answer comes back from a worker), then the front cache's.
      [[rawPost('/api/v1/config/A/dynamic', json, body)], 200],
      [[rawPost('/api/v1/config/A/dynamic', json, body)], 200],
      [[rawPost('/api/v1/config/A', json, body)], 200],
      [splitInto(rawPost('/api/v1/config/A/dynamic', json, body), 2), 200],
      [[rawPost('/api/v1/combine?c=%5B%22A%22%5D&dynamic=true', json, body)], 200],
      [[rawPost('/api/v1/config/A', { 'X-Api-Key': 'nope', 'Content-Type': 'application/json' }, body)], 401],
      [[rawPost('/api/v1/config/A', json, '{"u":')], 400],
      [[rawPost('/api/v1/config/B', json, body)], 404],
      [[`GET /api/v1/env/catalog HTTP/1.1\r\nHost: a\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\n\r\n`], 200],
      [[rawPost('/ofrep/v1/evaluate/flags/A', json, '{"context":{"targetingKey":"cork-user"}}')], 200],
    ];
    for (const [parts, status] of cases) {
      const o = await rawExchange(port, parts, { untilResponses: 1 });
      expect(o.status, o.bytes.toString('latin1')).toBe(status);
    }
    const first = await rawExchange(port, [rawPost('/api/v1/config/A', json, body)], { untilResponses: 1 });
    const etag = /etag: ("[^"]+")/i.exec(first.bytes.toString('latin1'))![1]!;
    const revalidated = await rawExchange(port, [rawPost('/api/v1/config/A', { ...json, 'If-None-Match': etag }, body)], { waitMs: 500 });
    expect(revalidated.status).toBe(304);
    expect(server.stderr()).not.toMatch(/cork/i);
  });
});

describe('inputs the direct listener does not answer', () => {
  it('closes the connection at once, without an answer, on these framing errors', async () => {
    const outcomes = await Promise.all(CLOSED_INPUTS.map((input) => rawExchange(port, [input.bytes], { waitMs: 3000 })));
    for (let i = 0; i < CLOSED_INPUTS.length; i++) {
      const o = outcomes[i]!;
      expect([CLOSED_INPUTS[i]!.name, o.bytes.length, o.closed]).toEqual([CLOSED_INPUTS[i]!.name, 0, true]);
      expect(o.closeMs).toBeLessThan(1000);
    }
    await expectHealthy();
  });
});

// The three sweeps run at once: each waits out the second its unanswered bytes are given.
describe.concurrent('bytes, one by one', () => {
  /** The bytes 0..255 for which `make(byte)` is answered within 1 s. */
  async function answeredBytes(make: (byte: number) => Buffer): Promise<number[]> {
    const all = Array.from({ length: 256 }, (_, i) => i);
    const outcomes = await Promise.all(all.map((c) => rawExchange(port, [make(c)], { untilResponses: 1, waitMs: 1000 })));
    return all.filter((c) => outcomes[c]!.status !== 0);
  }
  const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const b = (text: string): Buffer => Buffer.from(text, 'latin1');

  it('request target: 0x21-0xFF answered; 0x00-0x20 not', async () => {
    const ok = await answeredBytes((c) => Buffer.concat([b('GET /api/v1/nope?x='), Buffer.from([c]), b(' HTTP/1.1\r\nHost: a\r\n\r\n')]));
    expect(ok).toEqual(range(0x21, 0xff));
  });

  it('header value: HTAB and 0x20-0xFF answered; 0x00-0x08 and 0x0A-0x1F not', async () => {
    const ok = await answeredBytes((c) => Buffer.concat([b('GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: a'), Buffer.from([c]), b('b\r\n\r\n')]));
    expect(ok).toEqual([0x09, ...range(0x20, 0xff)]);
  });

  it('header name: only A-Z a-z 0-9 and "-" answered (a ":" ends the name)', async () => {
    const ok = await answeredBytes((c) => Buffer.concat([b('GET /healthz HTTP/1.1\r\nHost: a\r\nX'), Buffer.from([c]), b('A: v\r\n\r\n')]));
    expect(ok).toEqual([0x2d, ...range(0x30, 0x3a), ...range(0x41, 0x5a), ...range(0x61, 0x7a)]);
  });
});

describe('head size', () => {
  it('answers heads up to 4 KiB however they are split', async () => {
    for (const parts of [1, 2, 8, 64]) {
      const o = await rawExchange(port, splitInto(headOfSize(4096), parts), { untilResponses: 1, gapMs: 20 });
      expect([parts, o.status]).toEqual([parts, 200]);
    }
  });

  it('closes the connection without an answer when a head over 4 KiB arrives in more than one read', async () => {
    for (const size of [4097, 5 * 1024, 16 * 1024, 64 * 1024]) {
      for (const parts of [2, 8]) {
        const o = await rawExchange(port, splitInto(headOfSize(size), parts), { waitMs: 3000, gapMs: 40 });
        expect([size, parts, o.bytes.length, o.closed]).toEqual([size, parts, 0, true]);
        expect(o.closeMs).toBeLessThan(1000);
      }
    }
    await expectHealthy();
  });

  it('answers a 16 KiB head that arrives in one read (one write on loopback)', async () => {
    const o = await rawExchange(port, [headOfSize(16 * 1024)], { untilResponses: 1 });
    expect(o.status).toBe(200);
  });
});

describe('bytes >= 0x80 around a header value', () => {
  it('are trimmed by the parser before rcd sees the value: the key authenticates (refused by the recommended nginx)', async () => {
    const key = Buffer.from(KEY, 'latin1');
    const wrapped = [
      Buffer.concat([Buffer.from([0xe9]), key]),
      Buffer.concat([key, Buffer.from([0xff])]),
      Buffer.concat([Buffer.from([0x80, 0xa0]), key, Buffer.from([0xc3, 0xa9])]),
    ];
    for (const k of wrapped) {
      const o = await rawExchange(port, [contentPost('A', k)], { untilResponses: 1 });
      expect(o.status).toBe(200);
    }
    // Inside the value they are kept: the key no longer matches.
    const inner = Buffer.concat([key.subarray(0, 4), Buffer.from([0xe9]), key.subarray(4)]);
    const o = await rawExchange(port, [contentPost('A', inner)], { untilResponses: 1 });
    expect(o.status).toBe(401);
    expect(parseAnswer(responsesIn(o.bytes)[0]!.body.toString()).error?.code).toBe('invalid_api_key');
  });
});
