/**
 * What reply.ts puts on the wire. A real uWS app on an ephemeral loopback port routes each test path
 * to one reply function; a raw TCP client reads the answer byte for byte (status line, headers,
 * framing, body), so these tests see what a game client sees.
 */
import { connect } from 'node:net';
import type { HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import uWS from 'uWebSockets.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorResponse } from '../../../src/runtime/errors.js';
import { enterUwsCall, leaveUwsCall, send, sendContent, sendNotModified, sendPreflight, sendWrapped } from '../../../src/delivery/wire/reply.js';
import { CC_PRIVATE, CC_SHARED } from '../../../src/delivery/wire/header-values.js';
import { sendError, sendOverloaded } from '../../../src/delivery/wire/error-answers.js';
import { compileHttpPolicy } from '../../../src/delivery/http-policy.js';
import { Coding } from '../../../src/delivery/etag.js';
import { newRendered, type Rendered } from '../../../src/delivery/front-cache.js';
import { buildServeConfig, resolveOptions, SERVE_OPTIONS } from '../../../src/runtime/config.js';
import { compressPart, gzipMember } from '../../../src/shared/gzip.js';
import { gunzipSync } from 'node:zlib';
import { USER_PART_MAX } from '../../../src/delivery/wire/tail.js';
import { header, listenOnLoopback, parseAnswers, type Answer } from '../../helpers/http-answers.js';

/** The size up to which reply.ts once joined a wrapped head and its tail (larger ones went chunked). */
const JOIN_LIMIT = 64 * 1024;

const POLICY = compileHttpPolicy(buildServeConfig(resolveOptions(SERVE_OPTIONS, { 'cors-origins': 'https://game.example' }, {})));
const CORS_ORIGIN = Buffer.from('https://game.example', 'latin1');

/** A front-cache entry for `head`, compressed as a worker would when `gzip`. */
function item(head: Buffer, gzip: boolean): Rendered {
  if (!gzip) return newRendered(head, SEG, null, null, null);
  const part = compressPart(head);
  return newRendered(head, SEG, gzipMember(part), part, null);
}

/** One entry per head, with its gzip form (a front-cache entry answers identity and gzip requests alike). */
const keptItems = new Map<Buffer, Rendered>();
function keptItem(head: Buffer): Rendered {
  let kept = keptItems.get(head);
  if (kept === undefined) {
    kept = item(head, true);
    keptItems.set(head, kept);
  }
  return kept;
}

const ORIGIN = Buffer.from('https://game.example');

const SEG = Buffer.from('[{"n":"eu","v":"A","i":"é"}]', 'utf8');

/** A wrapped head of exactly `size` bytes: `{"data":"xxx…","hash":"h","meta":{"uid":`. */
function wrappedHead(size: number, fill = 'x'): Buffer {
  const prefix = '{"data":"';
  const suffix = '","hash":"h","meta":{"uid":';
  return Buffer.from(prefix + fill.repeat(size - prefix.length - suffix.length) + suffix, 'latin1');
}

/** What a head from wrappedHead followed by the tail of (uid, mod, SEG) must parse to. */
function wrappedValue(head: Buffer, uid: number, mod: number): unknown {
  return JSON.parse(head.toString('utf8') + `${uid},"mod":${mod},"seg":${SEG.toString('utf8')}}}`) as unknown;
}

const heads = new Map<number, Buffer>();
function headOf(size: number): Buffer {
  let head = heads.get(size);
  if (head === undefined) {
    head = wrappedHead(size);
    heads.set(size, head);
  }
  return head;
}

/** Routes: `/<what>?<args>`; `async` in the query answers after the handler returned, as pool results do. */
function route(res: HttpResponse, url: string, query: string): void {
  const args = new URLSearchParams(query);
  const close = args.get('close') === '1';
  switch (url) {
    case '/send':
      send(res, args.get('status') ?? '200 OK', args.get('body') ?? '', args.get('h') ?? '', args.get('hv') ?? '', close, null);
      return;
    case '/send-bytes':
      send(res, '200 OK', Buffer.from('{"ü":"日本"}', 'utf8'), '', '', close, null);
      return;
    case '/error':
      sendError(res, errorResponse('content_not_found', 'no such content'), close, args.get('cors') === '1' ? ORIGIN : null);
      return;
    case '/overloaded':
      sendOverloaded(res, close, null);
      return;
    case '/wrapped': {
      const size = Number(args.get('size'));
      const fill = args.get('fill');
      const head = fill === null ? headOf(size) : wrappedHead(size, fill);
      const gz = args.get('gzip') === '1';
      // kept=1: one front-cache entry per head answers every request, as the front cache's would (its
      // identity answers are written in place, front-cache.ts Rendered.answer).
      const entry = args.get('kept') === '1' ? keptItem(head) : item(head, gz);
      // tag: the item tag (default w1); built at run time, so that equal tags are distinct strings.
      const tag = args.get('tag') ?? 'w1';
      sendWrapped(res, POLICY, entry, Number(args.get('uid')), Number(args.get('mod')), gz ? Coding.Gzip : Coding.Identity, tag, null, close);
      return;
    }
    case '/content': {
      const gz = args.get('gzip') === '1';
      const cc = args.get('private') === '1' ? CC_PRIVATE : CC_SHARED;
      sendContent(res, POLICY, Buffer.from('{"a":1}'), gz ? Coding.Gzip : Coding.Identity, args.get('tag') ?? 'abc', cc, 'x-missing-content', 'b', ORIGIN, close);
      return;
    }
    case '/not-modified':
      sendNotModified(res, POLICY, '"abc.gz"', CC_SHARED, ORIGIN, close);
      return;
    case '/preflight':
      sendPreflight(res, POLICY, args.get('cors') === '1' ? ORIGIN : null, close);
      return;
    default:
      res.writeStatus('404 Not Found').end('');
  }
}

let app: TemplatedApp;
let listenSocket: us_listen_socket;
let port = 0;

beforeAll(async () => {
  app = uWS.App();
  app.any('/*', (res, req) => {
    const url = req.getUrl();
    const query = req.getQuery() ?? '';
    if (!new URLSearchParams(query).has('async')) {
      route(res, url, query);
      return;
    }
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
    });
    setImmediate(() => {
      if (!aborted) route(res, url, query);
    });
  });
  ({ socket: listenSocket, port } = await listenOnLoopback(app));
});

afterAll(() => {
  uWS.us_listen_socket_close(listenSocket);
});

/**
 * Sends `requests` in one write on a fresh connection and reads until `count` answers are complete
 * and, when `expectClose`, the server has closed the connection. Rejects after 5 s.
 */
function exchange(requests: string, count: number, expectClose = false): Promise<{ answers: Answer[]; closed: boolean; extra: number }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let closed = false;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no complete answer in 5 s: ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`));
    }, 5000);
    const check = (): void => {
      const buf = Buffer.concat(chunks);
      const { answers, used } = parseAnswers(buf);
      if (answers.length < count || (expectClose && !closed)) return;
      clearTimeout(timer);
      socket.destroy();
      resolve({ answers, closed, extra: buf.length - used });
    };
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      check();
    });
    socket.on('close', () => {
      closed = true;
      check();
    });
    socket.on('error', reject);
    socket.write(requests);
  });
}

function get(path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: rcd\r\n\r\n`;
}

async function one(path: string, expectClose = false): Promise<Answer & { closed: boolean }> {
  const { answers, closed, extra } = await exchange(get(path), 1, expectClose);
  expect(answers).toHaveLength(1);
  expect(extra).toBe(0);
  return { ...answers[0]!, closed };
}

describe('send', () => {
  it.each(['', '&async=1'])('200 with the JSON content type once, Content-Length and the body as given (%s)', async (mode) => {
    const a = await one('/send?body=' + encodeURIComponent('{"a":1}') + mode);
    expect(a.statusLine).toBe('HTTP/1.1 200 OK');
    expect(header(a, 'content-type')).toEqual(['application/json']);
    expect(header(a, 'content-length')).toEqual(['7']);
    expect(header(a, 'connection')).toEqual([]);
    expect(a.chunked).toBe(false);
    expect(a.body.toString('utf8')).toBe('{"a":1}');
    expect(a.closed).toBe(false);
  });

  it('another status line and one extra header', async () => {
    const a = await one('/send?status=' + encodeURIComponent('404 Not Found') + '&h=x-missing-content&hv=a%252Cb&body=%7B%7D&async=1');
    expect(a.statusLine).toBe('HTTP/1.1 404 Not Found');
    expect(header(a, 'content-type')).toEqual(['application/json']);
    expect(header(a, 'x-missing-content')).toEqual(['a%2Cb']);
    expect(a.body.toString('utf8')).toBe('{}');
  });

  it('a byte body is sent as is; Content-Length counts bytes', async () => {
    const a = await one('/send-bytes?async=1');
    const expected = Buffer.from('{"ü":"日本"}', 'utf8');
    expect(header(a, 'content-length')).toEqual([String(expected.length)]);
    expect(a.body.equals(expected)).toBe(true);
  });

  it('closeConnection: Connection: close, then the server closes the socket', async () => {
    const a = await one('/send?body=x&close=1&async=1', true);
    expect(header(a, 'connection')).toEqual(['close']);
    expect(a.body.toString('latin1')).toBe('x');
    expect(a.closed).toBe(true);
  });
});

describe('sendError and sendOverloaded', () => {
  it('sendError: the error status line and its prebuilt JSON body', async () => {
    const a = await one('/error?async=1');
    expect(a.statusLine).toBe('HTTP/1.1 404 Not Found');
    expect(header(a, 'content-type')).toEqual(['application/json']);
    expect(JSON.parse(a.body.toString('utf8'))).toEqual({ error: { status: 404, code: 'content_not_found', message: 'no such content' } });
    expect(a.closed).toBe(false);
  });

  it('sendError with closeConnection closes after the answer', async () => {
    const a = await one('/error?close=1', true);
    expect(a.statusLine).toBe('HTTP/1.1 404 Not Found');
    expect(header(a, 'connection')).toEqual(['close']);
    expect(a.closed).toBe(true);
  });

  it.each([false, true])('sendOverloaded: 503 overloaded with Retry-After: 1 (close %s)', async (close) => {
    const a = await one('/overloaded?async=1' + (close ? '&close=1' : ''), close);
    expect(a.statusLine).toBe('HTTP/1.1 503 Service Unavailable');
    expect(header(a, 'retry-after')).toEqual(['1']);
    expect(header(a, 'content-type')).toEqual(['application/json']);
    expect((JSON.parse(a.body.toString('utf8')) as { error: { code: string; status: number } }).error).toMatchObject({ code: 'overloaded', status: 503 });
    expect(header(a, 'connection')).toEqual(close ? ['close'] : []);
    expect(a.closed).toBe(close);
  });
});

describe('sendWrapped', () => {
  it.each([
    [200, 0, 0],
    [200, 4_294_967_295, 999],
    [JOIN_LIMIT, 123_456, 456],
  ])('a head of %i bytes is joined with its tail: one body with Content-Length', async (size, uid, mod) => {
    const a = await one(`/wrapped?size=${size}&uid=${uid}&mod=${mod}&async=1`);
    expect(a.statusLine).toBe('HTTP/1.1 200 OK');
    expect(header(a, 'content-type')).toEqual(['application/json']);
    expect(a.chunked).toBe(false);
    expect(header(a, 'content-length')).toEqual([String(a.body.length)]);
    expect(a.body.subarray(0, size).equals(headOf(size))).toBe(true);
    expect(JSON.parse(a.body.toString('utf8'))).toEqual(wrappedValue(headOf(size), uid, mod));
    expect(JSON.parse(a.body.toString('utf8'))).toMatchObject({ meta: { uid, mod, seg: [{ n: 'eu', v: 'A', i: 'é' }] } });
  });

  it.each([JOIN_LIMIT + 1, 1024 * 1024])('a head of %i bytes (once chunked) is joined too: Content-Length on every answer', async (size) => {
    const a = await one(`/wrapped?size=${size}&uid=77&mod=77&async=1`);
    expect(a.statusLine).toBe('HTTP/1.1 200 OK');
    expect(header(a, 'etag')).toEqual(['"w1.77"']);
    expect(a.chunked).toBe(false);
    expect(header(a, 'content-length')).toEqual([String(a.body.length)]);
    expect(JSON.parse(a.body.toString('utf8'))).toEqual(wrappedValue(headOf(size), 77, 77));
  });

  it.each([200, JOIN_LIMIT + 1, 1024 * 1024])('gzip: the compressed head and the tail as a stored block decode to the identity answer (%i bytes)', async (size) => {
    const plain = await one(`/wrapped?size=${size}&uid=4294967295&mod=295&async=1`);
    const a = await one(`/wrapped?size=${size}&uid=4294967295&mod=295&gzip=1&async=1`);
    expect(header(a, 'content-encoding')).toEqual(['gzip']);
    expect(header(a, 'content-length')).toEqual([String(a.body.length)]);
    // The item tag, the uid, the coding (etag.ts wrappedTag, etagValue).
    expect(header(a, 'etag')).toEqual(['"w1.4294967295.gz"']);
    expect(header(a, 'cache-control')).toEqual(['private, no-cache']);
    expect(gunzipSync(a.body).equals(plain.body)).toBe(true);
  });

  it('closeConnection: joined even over the join limit, so Connection: close is a header and not inside the body', async () => {
    const size = 1024 * 1024;
    const a = await one(`/wrapped?size=${size}&uid=5&mod=5&close=1&async=1`, true);
    expect(a.chunked).toBe(false);
    expect(header(a, 'connection')).toEqual(['close']);
    expect(header(a, 'content-length')).toEqual([String(a.body.length)]);
    expect(JSON.parse(a.body.toString('utf8'))).toEqual(wrappedValue(headOf(size), 5, 5));
    expect(a.closed).toBe(true);
  });

  it('pipelined answers of every framing stay in order and in frame on one connection', async () => {
    // Answered in the handler: uWS closes a connection whose next request arrives while an answer is
    // pending (docs/api.md, "Pipelining"), so pipelining is only served for immediate answers.
    const paths = [
      '/wrapped?size=300&uid=1&mod=1',
      `/wrapped?size=${JOIN_LIMIT + 10}&uid=2&mod=2`,
      '/error',
      `/wrapped?size=${JOIN_LIMIT}&uid=3&mod=3`,
      '/overloaded',
      '/wrapped?size=400&uid=4&mod=4',
    ];
    const { answers, extra } = await exchange(paths.map(get).join(''), paths.length);
    expect(extra).toBe(0);
    expect(answers.map((a) => a.statusLine)).toEqual([
      'HTTP/1.1 200 OK',
      'HTTP/1.1 200 OK',
      'HTTP/1.1 404 Not Found',
      'HTTP/1.1 200 OK',
      'HTTP/1.1 503 Service Unavailable',
      'HTTP/1.1 200 OK',
    ]);
    expect(answers.map((a) => a.chunked)).toEqual([false, false, false, false, false, false]);
    expect(JSON.parse(answers[0]!.body.toString('utf8'))).toEqual(wrappedValue(headOf(300), 1, 1));
    expect(JSON.parse(answers[1]!.body.toString('utf8'))).toEqual(wrappedValue(headOf(JOIN_LIMIT + 10), 2, 2));
    expect(JSON.parse(answers[3]!.body.toString('utf8'))).toEqual(wrappedValue(headOf(JOIN_LIMIT), 3, 3));
    expect(JSON.parse(answers[5]!.body.toString('utf8'))).toEqual(wrappedValue(headOf(400), 4, 4));
  });

  it('the reused join buffer is free once sendWrapped returns: a client that reads late still gets its own bytes', async () => {
    // 8 MiB joined answers (closeConnection joins at any size) are more than loopback socket buffers
    // take, so uWS keeps the rest of the first answer while the second one overwrites the join buffer.
    const size = 8 * 1024 * 1024;
    const { late, fast } = await lateThenFast(`/wrapped?size=${size}&fill=a&uid=1&mod=1&close=1`, `/wrapped?size=${size}&fill=b&uid=2&mod=2&close=1`);
    expect(JSON.parse(fast.body.toString('utf8'))).toEqual(wrappedValue(wrappedHead(size, 'b'), 2, 2));
    expect(late.body.length).toBe(size + wrappedTailBytes(1, 1));
    expect(JSON.parse(late.body.toString('utf8'))).toEqual(wrappedValue(wrappedHead(size, 'a'), 1, 1));
  });
});

/**
 * `latePath` on a connection that reads nothing until `fastPath` was answered on another: the late
 * answer is held by uWS meanwhile (when larger than the socket buffers). Both answers, parsed.
 */
async function lateThenFast(latePath: string, fastPath: string): Promise<{ late: Answer; fast: Answer }> {
  const slow = connect(port, '127.0.0.1');
  const slowChunks: Buffer[] = [];
  await new Promise<void>((resolve) => slow.once('connect', resolve));
  slow.pause();
  slow.on('data', (d: Buffer) => slowChunks.push(d));
  const slowClosed = new Promise<void>((resolve) => slow.once('close', () => resolve()));
  slow.write(get(latePath));
  // Let the server answer (and fill the socket buffers) before the second request overwrites.
  await new Promise((r) => setTimeout(r, 200));
  const fast = await exchange(get(fastPath), 1, true);
  slow.resume();
  await slowClosed;
  const { answers } = parseAnswers(Buffer.concat(slowChunks));
  expect(answers).toHaveLength(1);
  return { late: answers[0]!, fast: fast.answers[0]! };
}

describe('sendWrapped: one front-cache entry answering user after user (answers written in place)', () => {
  // User parts of every length class in an order that grows, shrinks and repeats them: the tail's
  // end moves with each change and stays put on a repeat.
  const users: [uid: number, mod: number][] = [
    [4_294_967_295, 999],
    [1_000_000_000, 100],
    [7, 3],
    [7, 3],
    [123_456, 45],
    [4_294_967_295, 999],
    [9, 0],
    [3_000_000_000, 12],
    [3_000_000_000, 999],
    [55, 5],
  ];

  it("pipelined on one connection: every body, Content-Length and ETag is that user's", async () => {
    const paths = users.map(([uid, mod]) => `/wrapped?size=300&kept=1&uid=${uid}&mod=${mod}`);
    const { answers, extra } = await exchange(paths.map(get).join(''), paths.length);
    expect(extra).toBe(0);
    expect(answers.map((a) => header(a, 'etag')[0])).toEqual(users.map(([uid]) => `"w1.${uid}"`));
    for (let i = 0; i < users.length; i++) {
      const [uid, mod] = users[i]!;
      const a = answers[i]!;
      expect(header(a, 'content-length')).toEqual([String(a.body.length)]);
      expect(a.body.toString('utf8')).toBe(headOf(300).toString('latin1') + `${uid},"mod":${mod},"seg":${SEG.toString('utf8')}}}`);
    }
  });

  it('the identity and gzip answers of one entry alternate without disturbing each other', async () => {
    for (const [uid, mod] of users.slice(0, 6)) {
      const plain = await one(`/wrapped?size=500&kept=1&uid=${uid}&mod=${mod}`);
      expect(JSON.parse(plain.body.toString('utf8'))).toEqual(wrappedValue(headOf(500), uid, mod));
      const gz = await one(`/wrapped?size=500&kept=1&gzip=1&uid=${uid}&mod=${mod}`);
      expect(header(gz, 'etag')).toEqual([`"w1.${uid}.gz"`]);
      expect(gunzipSync(gz.body).equals(plain.body)).toBe(true);
    }
  });

  it('the views kept on the entry for ten-digit uids serve only answers of their own length, whatever the coding', async () => {
    // A ten-digit uid's identity ETag ends where a seven-digit uid's gzip ETag (`.gz"`) ends: one
    // length, one view. Then shorter and longer parts around the kept ones.
    const steps: [uid: number, mod: number, gzip: boolean][] = [
      [4_000_000_001, 123, false],
      [1_234_567, 8, true],
      [4_000_000_001, 123, false],
      [3_999_999_999, 5, false],
      [2_000_000_000, 999, true],
      [123_456_789, 42, false],
      [4_294_967_295, 999, false],
    ];
    for (const [uid, mod, gzip] of steps) {
      const a = await one(`/wrapped?size=600&kept=1&uid=${uid}&mod=${mod}${gzip ? '&gzip=1' : ''}`);
      expect(header(a, 'etag')).toEqual([gzip ? `"w1.${uid}.gz"` : `"w1.${uid}"`]);
      const body = gzip ? gunzipSync(a.body) : a.body;
      expect(JSON.parse(body.toString('utf8'))).toEqual(wrappedValue(headOf(600), uid, mod));
      if (!gzip) expect(header(a, 'content-length')).toEqual([String(a.body.length)]);
    }
    const entry = keptItem(headOf(600)).scratch!;
    expect(entry.answerViewEnd - entry.headLength).toBe(USER_PART_MAX);
    expect(entry.blockViewEnd).toBeGreaterThan(entry.blockStart);
  });

  it('an entry answered only gzip copies no head; the first identity answer copies it and moves the header block behind it', async () => {
    const head = headOf(700);
    for (let i = 0; i < 2; i++) await one(`/wrapped?size=700&kept=1&gzip=1&uid=${i}&mod=${i}`);
    const item = keptItem(head);
    const entry = item.scratch!;
    expect(entry.answer.length).toBe(0);
    const blockBefore = Buffer.from(entry.block);
    const startBefore = entry.blockStart;
    expect(entry.blockFrom).toBe(0);
    const plain = await one('/wrapped?size=700&kept=1&uid=77&mod=7');
    expect(JSON.parse(plain.body.toString('utf8'))).toEqual(wrappedValue(head, 77, 7));
    expect(header(plain, 'etag')).toEqual(['"w1.77"']);
    expect(entry.answer.length).toBeGreaterThan(700);
    // The entry's content is not touched: its head stays the worker's bytes.
    expect(Buffer.from(item.head).equals(head)).toBe(true);
    expect(item.head.buffer).not.toBe(entry.answer.buffer);
    expect(Buffer.from(entry.answer.subarray(0, 700)).equals(head)).toBe(true);
    // One buffer and one DataView for the answer and the header block (uWS takes each argument's
    // backing store), the block behind the answer's room.
    expect(entry.block).toBe(entry.answer);
    expect(entry.blockWords).toBe(entry.answerWords);
    expect(entry.blockFrom).toBeGreaterThan(700);
    expect(entry.blockStart - entry.blockFrom).toBe(startBefore);
    expect(Buffer.from(entry.block).subarray(entry.blockFrom, entry.blockStart).equals(blockBefore.subarray(0, startBefore))).toBe(true);
    // Both codings keep answering from the moved block.
    const gz = await one('/wrapped?size=700&kept=1&gzip=1&uid=4294967295&mod=999');
    expect(header(gz, 'etag')).toEqual(['"w1.4294967295.gz"']);
    expect(JSON.parse(gunzipSync(gz.body).toString('utf8'))).toEqual(wrappedValue(head, 4_294_967_295, 999));
    const again = await one('/wrapped?size=700&kept=1&uid=5&mod=55');
    expect(header(again, 'etag')).toEqual(['"w1.5"']);
    expect(JSON.parse(again.body.toString('utf8'))).toEqual(wrappedValue(head, 5, 55));
  });

  it("an entry answered under another item tag (one entry shared by two mappings' items) sends each answer's own tag", async () => {
    // w1, then w2, then w1 again as another string of the same text, in both codings: the header
    // block is rebuilt when the tag differs and kept when only the string object does.
    const tags = ['w1', 'w2x', 'w1', 'w2x', 'w2x'];
    for (let i = 0; i < tags.length; i++) {
      const tag = tags[i]!;
      const plain = await one(`/wrapped?size=900&kept=1&uid=${1000 + i}&mod=${i}&tag=${tag}`);
      expect(header(plain, 'etag')).toEqual([`"${tag}.${1000 + i}"`]);
      expect(JSON.parse(plain.body.toString('utf8'))).toEqual(wrappedValue(headOf(900), 1000 + i, i));
      const gz = await one(`/wrapped?size=900&kept=1&gzip=1&uid=${7 + i}&mod=${i}&tag=${tag}`);
      expect(header(gz, 'etag')).toEqual([`"${tag}.${7 + i}.gz"`]);
    }
  });

  it('a client that reads late still gets its own bytes after the entry answered another user', async () => {
    // 8 MiB is more than loopback socket buffers take: uWS holds the rest of the first answer while
    // the entry's bytes are rewritten for the second user.
    const size = 8 * 1024 * 1024;
    const { late, fast } = await lateThenFast(
      `/wrapped?size=${size}&fill=k&kept=1&uid=4294967295&mod=999&close=1`,
      `/wrapped?size=${size}&fill=k&kept=1&uid=1&mod=2&close=1`,
    );
    expect(JSON.parse(fast.body.toString('utf8'))).toEqual(wrappedValue(wrappedHead(size, 'k'), 1, 2));
    expect(JSON.parse(late.body.toString('utf8'))).toEqual(wrappedValue(wrappedHead(size, 'k'), 4_294_967_295, 999));
  });
});

function wrappedTailBytes(uid: number, mod: number): number {
  return Buffer.byteLength(`${uid},"mod":${mod},"seg":${SEG.toString('utf8')}}}`, 'utf8');
}

/** The few HttpResponse methods reply.ts calls, recording whether each ran inside cork(). */
class RecordingResponse {
  readonly calls: string[] = [];
  private corked = false;

  cork(cb: () => void): this {
    this.corked = true;
    cb();
    this.corked = false;
    return this;
  }

  private record(name: string, ...args: unknown[]): this {
    const shown = args.map((a) => (typeof a === 'string' || typeof a === 'boolean' ? String(a) : Buffer.from(a as Uint8Array).toString('latin1')));
    this.calls.push(`${this.corked ? 'corked' : 'UNCORKED'} ${name}(${shown.join(', ')})`);
    return this;
  }

  writeStatus(status: string): this {
    return this.record('writeStatus', status);
  }

  writeHeader(name: string | Uint8Array, value: string | Uint8Array): this {
    return this.record('writeHeader', name, value);
  }

  write(chunk: Uint8Array): this {
    this.record('write', chunk.byteLength > 100 ? `<${chunk.byteLength} bytes>` : chunk);
    return this;
  }

  end(body: string | Uint8Array, close: boolean): this {
    return this.record('end', typeof body !== 'string' && body.byteLength > 100 ? `<${body.byteLength} bytes>` : body, close);
  }

  endWithoutBody(): this {
    return this.record('endWithoutBody');
  }
}

describe('every write happens inside one cork (one syscall for status, headers and body)', () => {
  function calls(fn: (res: HttpResponse) => void): string[] {
    const res = new RecordingResponse();
    fn(res as unknown as HttpResponse);
    return res.calls;
  }

  it('send: the default status is left to uWS, the headers and body corked', () => {
    expect(calls((res) => send(res, '200 OK', '{}', '', '', false, null))).toEqual([
      'corked writeHeader(content-type, application/json)',
      'corked writeHeader(cache-control, no-store)',
      'corked end({}, false)',
    ]);
    expect(calls((res) => send(res, '404 Not Found', 'b', 'x-missing-content', 'a', true, null))).toEqual([
      'corked writeStatus(404 Not Found)',
      'corked writeHeader(content-type, application/json)',
      'corked writeHeader(cache-control, no-store)',
      'corked writeHeader(x-missing-content, a)',
      'corked end(b, true)',
    ]);
  });

  it('sendWrapped over the old join limit: one end() inside the cork', () => {
    const c = calls((res) => sendWrapped(res, POLICY, item(headOf(JOIN_LIMIT + 1), false), 9, 9, Coding.Identity, 't', null, false));
    expect(c.every((line) => line.startsWith('corked '))).toBe(true);
    expect(c.filter((line) => line.includes(' write(') || line.includes(' end('))).toHaveLength(1);
  });

  it('inside a uWS call (which uWS corked itself) every answer makes the same writes with no cork of its own', () => {
    const wrappedItem = item(headOf(64), false);
    const answers: ((res: HttpResponse) => void)[] = [
      (res) => send(res, '404 Not Found', 'b', 'x-missing-content', 'a', true, CORS_ORIGIN),
      (res) => sendContent(res, POLICY, Buffer.from('{"a":1}'), Coding.Identity, 'r1', CC_SHARED, '', '', null, false),
      (res) => sendWrapped(res, POLICY, wrappedItem, 4_294_967_295, 295, Coding.Identity, 'w1', CORS_ORIGIN, false),
      (res) => sendNotModified(res, POLICY, '"abc"', CC_PRIVATE, null, true),
      (res) => sendPreflight(res, POLICY, CORS_ORIGIN, false),
    ];
    for (const answer of answers) {
      const corked = calls(answer);
      enterUwsCall();
      let direct: string[];
      try {
        direct = calls(answer);
      } finally {
        leaveUwsCall();
      }
      expect(corked.length).toBeGreaterThan(1);
      expect(corked.every((line) => line.startsWith('corked '))).toBe(true);
      expect(direct).toEqual(corked.map((line) => line.replace(/^corked /, 'UNCORKED ')));
    }
  });
});

describe('content, 304 and preflight headers', () => {
  it('sendContent: ETag, Cache-Control, Vary, the CORS headers and the extra header', async () => {
    const a = await one('/content?async=1');
    expect(header(a, 'etag')).toEqual(['"abc"']);
    expect(header(a, 'cache-control')).toEqual(['no-cache']);
    expect(header(a, 'vary')).toEqual(['accept-encoding, x-api-key, origin']);
    expect(header(a, 'access-control-allow-origin')).toEqual(['https://game.example']);
    expect(header(a, 'access-control-expose-headers')).toEqual(['ETag, X-Missing-Content, Retry-After']);
    expect(header(a, 'x-missing-content')).toEqual(['b']);
    expect(header(a, 'content-length')).toEqual(['7']);
  });

  it('the header block of a shared answer is kept only while its tag, coding and headers stay the same', async () => {
    const seen: string[][] = [];
    for (const q of ['tag=r1', 'tag=r1', 'tag=r1&gzip=1', 'tag=r2', 'tag=w9.1&private=1', 'tag=r2', 'tag=r1']) {
      const a = await one(`/content?async=1&${q}`);
      seen.push([...header(a, 'etag'), ...header(a, 'cache-control')]);
    }
    expect(seen).toEqual([
      ['"r1"', 'no-cache'],
      ['"r1"', 'no-cache'],
      ['"r1.gz"', 'no-cache'],
      ['"r2"', 'no-cache'],
      ['"w9.1"', 'private, no-cache'],
      ['"r2"', 'no-cache'],
      ['"r1"', 'no-cache'],
    ]);
  });

  it.each([false, true])('sendNotModified: 304 with the tag, no body and no Content-Length (close %s)', async (close) => {
    const a = await one('/not-modified?async=1' + (close ? '&close=1' : ''));
    expect(a.statusLine).toBe('HTTP/1.1 304 Not Modified');
    expect(header(a, 'etag')).toEqual(['"abc.gz"']);
    expect(header(a, 'cache-control')).toEqual(['no-cache']);
    expect(header(a, 'content-length')).toEqual([]);
    expect(header(a, 'connection')).toEqual(close ? ['close'] : []);
    expect(a.body.length).toBe(0);
  });

  it('a pipelined 304 keeps the connection in frame', async () => {
    const { answers, extra } = await exchange(get('/not-modified') + get('/content') + get('/preflight?cors=1'), 3);
    expect(extra).toBe(0);
    expect(answers.map((a) => a.statusLine)).toEqual(['HTTP/1.1 304 Not Modified', 'HTTP/1.1 200 OK', 'HTTP/1.1 204 No Content']);
    expect(answers[1]!.body.toString()).toBe('{"a":1}');
  });

  it('sendPreflight: 204 with methods, headers and max-age for an allowed origin; none of them otherwise', async () => {
    const a = await one('/preflight?cors=1&async=1');
    expect(a.statusLine).toBe('HTTP/1.1 204 No Content');
    expect(header(a, 'access-control-allow-origin')).toEqual(['https://game.example']);
    expect(header(a, 'access-control-allow-methods')).toEqual(['GET, POST']);
    expect(header(a, 'access-control-allow-headers')).toEqual(['X-Api-Key, Authorization, Content-Type, If-None-Match, Last-Event-ID']);
    expect(header(a, 'access-control-max-age')).toEqual(['600']);
    expect(header(a, 'vary')).toEqual(['origin']);
    const refused = await one('/preflight?async=1');
    expect(refused.statusLine).toBe('HTTP/1.1 204 No Content');
    expect(header(refused, 'access-control-allow-origin')).toEqual([]);
    expect(header(refused, 'access-control-allow-methods')).toEqual([]);
  });

  it('errors carry the CORS headers so a page can read the code', async () => {
    const a = await one('/error?cors=1&async=1');
    expect(header(a, 'access-control-allow-origin')).toEqual(['https://game.example']);
    expect(header(a, 'cache-control')).toEqual(['no-store']);
  });
});
