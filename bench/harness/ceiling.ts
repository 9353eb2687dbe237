/**
 * The ceiling: bare uWebSockets.js answering the server's routes with a precomputed body (taken from a
 * real server answer of the scenario being measured, so the bytes on the wire are the same). It reads the
 * request body to the end like the server must, but parses and validates nothing. Whatever the real
 * server costs above this is the price of its own work, which is what `ratio` and CPU efficiency report.
 *
 * Runs as its own child process (forked by bench/load/run.ts, IPC channel) so its CPU time is measured
 * separately from the bench client's. Protocol:
 *   child -> parent  {type:'listening', port}
 *   parent -> child  {type:'set', config: CeilingConfig}   answered by {type:'ok'}
 * It exits when the parent goes away (IPC disconnect) or on SIGTERM/SIGINT.
 *
 * `node ceiling.js N [CERT KEY]` runs N apps on one port, like `rcd serve --http-threads N`: this
 * thread's and N - 1 in worker threads, all bound with SO_REUSEPORT, so a server with N delivery
 * loops is compared with a ceiling of N loops. A new answer goes to every loop before `ok`. With
 * CERT and KEY every app serves HTTPS (SSLApp with the files as they are and the server's TLS 1.2
 * cipher list), for bench/http/tls.ts.
 *
 * `--floor` (anywhere after N) makes it the floor instead (`npm run bench -- --target floor`): before
 * answering, every request also pays for the uWS calls and the parsing that any server answering the
 * delivery API on this uWS build must make whatever its own logic, as rcd makes them (src/delivery/
 * routes.ts; the head's read and the body's decoding are rcd's own functions, request-head.ts and
 * body.ts): one pass over every header (forEach) for the ambiguous-framing check and the values read
 * (Content-Type, Content-Length, If-None-Match, Accept-Encoding), the route parameter and the query, and for a POST
 * the body copied whole, decoded and parsed as JSON (body.ts parseBodyJson; a body that is not JSON is answered 400);
 * a 200 is then written the cheapest way uWS allows (one header block, default status line), as rcd
 * writes it, so the floor is an upper bound for a server and not the ceiling's write path plus work.
 * Its ratio to the ceiling is therefore the most a server on this stack can reach in that scenario:
 * a target above it cannot be met by any change to the server's own work.
 */
import uWS from 'uWebSockets.js';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { statusLine } from '../../src/runtime/errors.js';
import { TLS12_CIPHERS } from '../../src/runtime/tls.js';
import { bodyText, keptChunk, parseBodyJson } from '../../src/delivery/body.js';
import { hasAmbiguousFraming, readHead } from '../../src/delivery/wire/request-head.js';
import { freePort } from './processes.js';
import type { CeilingAnswer, CeilingConfig, CeilingMessage, CeilingReply } from './ceiling-protocol.js';

interface Prepared {
  status: number;
  statusLine: string;
  body: Buffer;
  headers: readonly (readonly [Buffer, Buffer])[];
  /** 304: headers only, no body and no Content-Length (as the server answers it). */
  empty: boolean;
  /**
   * The floor's way to write a 200 (as rcd does, src/delivery/header-block.ts): Content-Type's value
   * with the other headers appended after CRLFs, one native call, and uWS's default status line.
   */
  block: Buffer;
}

/**
 * `text`'s bytes in an ArrayBuffer of their own. Buffer.from packs short strings into shared 8 KiB
 * slabs; rcd keeps each answer and header block in its own, and the floor's pool answers are laid out
 * the same way, so neither side's bytes sit closer together in memory than the other's.
 */
function ownBytes(text: string, encoding: BufferEncoding): Buffer {
  const packed = packedBytes(text, encoding);
  const own = Buffer.allocUnsafeSlow(packed.length);
  packed.copy(own);
  return own;
}

/** `text`'s bytes as Buffer.from lays them out (short ones packed into a shared slab). */
function packedBytes(text: string, encoding: BufferEncoding): Buffer {
  return Buffer.from(text, encoding);
}

function prepare(a: CeilingAnswer, bytesOf: (text: string, encoding: BufferEncoding) => Buffer = packedBytes): Prepared {
  // Encoded once: the real server also sends ready bytes, so the ceiling must not pay UTF-8 encoding per request.
  const headers = Object.entries(a.headers ?? {});
  return {
    status: a.status,
    statusLine: statusLine(a.status),
    body: bytesOf(a.body, 'utf8'),
    headers: headers.map(([k, v]) => [Buffer.from(k, 'latin1'), Buffer.from(v, 'latin1')] as const),
    empty: a.status === 304,
    block: bytesOf(['application/json', ...headers.map(([k, v]) => `${k}: ${v}`)].join('\r\n'), 'latin1'),
  };
}

let ok: Prepared = prepare({ status: 503, body: '{"error":"ceiling not configured"}' });
let validKey: string | null = null;
let unauthorized: Prepared | null = null;
/** A pool's answers (PoolAnswers), prepared; empty when every request gets `ok`. */
let poolAnswers: Prepared[] = [];
let poolOrder = new Int32Array(0);
/** The position in poolOrder of the next request's answer. */
let poolAt = 0;
const notFound: Prepared = prepare({ status: 404, body: '{"error":{"status":404,"code":"not_found","message":"Not found"}}' });

/** Set by `--floor` (for every loop): requests pay for the work of floorRequest/floorBody first. */
let floor = false;
const notJson = prepare({ status: 400, body: '{"error":{"status":400,"code":"invalid_json","message":"the floor could not parse the body"}}' });
/** Read by nothing: keeps the header reads from being optimized away. */
const floorSink = { bytes: 0 };

/**
 * The floor's request-side work before the body: the X-Api-Key value, or null when the request was
 * refused (connection closed).
 */
function floorRequest(res: uWS.HttpResponse, req: uWS.HttpRequest, hasParameter: boolean): string | null {
  // rcd's own read of the head (src/delivery/wire/request-head.ts), with the framing check on as rcd's default.
  const head = readHead(req, true, 0);
  if (hasAmbiguousFraming(head)) {
    res.close();
    return null;
  }
  // What rcd reads of every content request (src/delivery/routes.ts) beside the key.
  floorSink.bytes += head.contentType.length + head.contentLength.length + head.ifNoneMatch.length + head.acceptEncoding.length;
  if (hasParameter) floorSink.bytes += req.getParameter(0)?.length ?? 0;
  floorSink.bytes += req.getQuery()?.length ?? 0;
  return head.apiKey;
}

/** The floor's body work, rcd's own (src/delivery/body.ts: its text, then its JSON): null when it is not JSON. */
function floorBody(kept: Buffer[] | null, last: ArrayBuffer): unknown {
  try {
    return parseBodyJson(bodyText(kept, last));
  } catch {
    return null;
  }
}

function choose(apiKey: string): Prepared {
  if (validKey !== null && unauthorized !== null && apiKey !== validKey) return unauthorized;
  if (poolAnswers.length === 0) return ok;
  // What any server answering many users must do at the least: pick the answer, here by position.
  const answer = poolAnswers[poolOrder[poolAt]!]!;
  poolAt = poolAt + 1 === poolOrder.length ? 0 : poolAt + 1;
  return answer;
}

const H_CONTENT_TYPE = Buffer.from('content-type', 'latin1');

function send(res: uWS.HttpResponse, answer: Prepared): void {
  if (floor && answer.status === 200) {
    // The cheapest answer uWS allows for these bytes: the floor must not charge a server for writes.
    res.writeHeader(H_CONTENT_TYPE, answer.block);
    res.end(answer.body);
    return;
  }
  res.writeStatus(answer.statusLine);
  if (!answer.empty) res.writeHeader('content-type', 'application/json');
  for (const [name, value] of answer.headers) res.writeHeader(name, value);
  if (answer.empty) res.endWithoutBody();
  else res.end(answer.body);
}

interface BodyState {
  aborted: boolean;
  answer: Prepared;
}

function onPost(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  if (floor) {
    onPostFloor(res, req, true);
    return;
  }
  const state: BodyState = { aborted: false, answer: choose(req.getHeader('x-api-key')) };
  res.onAborted(() => {
    state.aborted = true;
  });
  // uWS corks the socket around its data callback (src/delivery/reply.ts): no res.cork needed there.
  res.onData((_chunk, isLast) => {
    if (!isLast || state.aborted) return;
    send(res, state.answer);
  });
}

function onPostFloor(res: uWS.HttpResponse, req: uWS.HttpRequest, hasParameter: boolean): void {
  const apiKey = floorRequest(res, req, hasParameter);
  if (apiKey === null) return;
  const state: BodyState = { aborted: false, answer: choose(apiKey) };
  let chunks: Buffer[] | null = null;
  res.onAborted(() => {
    state.aborted = true;
  });
  res.onData((chunk, isLast) => {
    if (!isLast) {
      (chunks ??= []).push(keptChunk(chunk));
      return;
    }
    if (state.aborted) return;
    // The key is checked before the body (as rcd does): a refused key's answer stands whatever the body.
    const parsed = floorBody(chunks, chunk);
    const answer = parsed === null && state.answer !== unauthorized ? notJson : state.answer;
    send(res, answer);
  });
}

function onPostCombine(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  if (floor) onPostFloor(res, req, false);
  else onPost(res, req);
}

function onGet(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  if (!floor) {
    send(res, choose(req.getHeader('x-api-key')));
    return;
  }
  const apiKey = floorRequest(res, req, false);
  if (apiKey !== null) send(res, choose(apiKey));
}

function onOther(res: uWS.HttpResponse): void {
  send(res, notFound);
}

/** Certificate and key files when the ceiling serves HTTPS. */
interface CeilingTls {
  readonly cert: string;
  readonly key: string;
}

function createApp(tls: CeilingTls | null): uWS.TemplatedApp {
  return (tls === null ? uWS.App() : uWS.SSLApp({ cert_file_name: tls.cert, key_file_name: tls.key, ssl_ciphers: TLS12_CIPHERS }))
    .post('/api/v1/config/:id', onPost)
    .post('/api/v1/config/:id/dynamic', onPost)
    .post('/api/v1/combine', onPostCombine)
    .post('/api/v1/combine/', onPostCombine)
    .get('/api/v1/env/catalog', onGet)
    .post('/ofrep/v1/evaluate/flags', onPostCombine)
    .post('/ofrep/v1/evaluate/flags/*', onPostCombine)
    .any('/*', onOther);
}

function apply(config: CeilingConfig): void {
  ok = prepare(config.ok);
  validKey = config.validKey;
  unauthorized = config.unauthorized === null ? null : prepare(config.unauthorized);
  poolAnswers = config.pool === undefined ? [] : config.pool.answers.map((a) => prepare(a, ownBytes));
  poolOrder = Int32Array.from(config.pool?.order ?? []);
  poolAt = 0;
}

/** uSockets' LIBUS_LISTEN_DEFAULT: SO_REUSEPORT, so every loop can bind the one port. */
const LISTEN_SHARED = 0;
type ListenWithOptions = (host: string, port: number, options: number, cb: (socket: uWS.us_listen_socket | false) => void) => uWS.TemplatedApp;

function listen(app: uWS.TemplatedApp, port: number): Promise<uWS.us_listen_socket | false> {
  return new Promise((resolve) => (app.listen as unknown as ListenWithOptions).call(app, '127.0.0.1', port, LISTEN_SHARED, resolve));
}

type LoopMessage = { type: 'set'; config: CeilingConfig } | { type: 'stop' };

/** A further loop: binds the main loop's port, takes every new answer, closes its sockets on stop. */
async function loopThread(): Promise<void> {
  const data = workerData as { port: number; tls: CeilingTls | null; floor: boolean };
  floor = data.floor;
  const app = createApp(data.tls);
  const socket = await listen(app, data.port);
  parentPort!.on('message', (m: LoopMessage) => {
    if (m.type === 'set') {
      apply(m.config);
      parentPort!.postMessage('ok');
      return;
    }
    // A worker thread that ends with uWS sockets open aborts the process: close them first.
    if (socket !== false) uWS.us_listen_socket_close(socket);
    (app as unknown as { close(): void }).close();
    parentPort!.close();
  });
  parentPort!.postMessage(socket === false ? 'failed' : 'listening');
}

async function main(): Promise<void> {
  if (process.send === undefined) {
    process.stderr.write('bench/harness/ceiling.js is started by bench/load/run.js (needs an IPC channel)\n');
    process.exit(2);
  }
  const args = process.argv.slice(2);
  floor = args.includes('--floor');
  const [loopArg, cert, key] = args.filter((a) => a !== '--floor');
  const loops = Number(loopArg ?? '1');
  const tls = cert !== undefined && key !== undefined ? { cert, key } : null;
  const reply = (m: CeilingReply): void => {
    process.send?.(m);
  };
  const app = createApp(tls);
  // uSockets sets SO_REUSEPORT only when a port is named (port 0 binds exclusively): name a free one.
  const listenSocket = await listen(app, loops > 1 ? await freePort() : 0);
  if (listenSocket === false) {
    reply({ type: 'error', message: 'ceiling could not listen on 127.0.0.1' });
    process.exit(1);
  }
  const port = uWS.us_socket_local_port(listenSocket);
  const workers: Worker[] = [];
  for (let i = 1; i < loops; i++) {
    const w = new Worker(new URL(import.meta.url), { workerData: { port, tls, floor } });
    const started = await new Promise<unknown>((resolve) => w.once('message', resolve));
    if (started !== 'listening') {
      reply({ type: 'error', message: `ceiling loop ${i} could not listen on 127.0.0.1:${port}` });
      process.exit(1);
    }
    workers.push(w);
  }
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    uWS.us_listen_socket_close(listenSocket);
    (app as unknown as { close(): void }).close();
    const exits = workers.map((w) => new Promise((resolve) => w.once('exit', resolve)));
    for (const w of workers) w.postMessage({ type: 'stop' } satisfies LoopMessage);
    void Promise.all(exits).then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  process.on('message', (raw: CeilingMessage) => {
    if (raw.type !== 'set') return;
    apply(raw.config);
    const acks = workers.map((w) => new Promise((resolve) => w.once('message', resolve)));
    for (const w of workers) w.postMessage({ type: 'set', config: raw.config } satisfies LoopMessage);
    void Promise.all(acks).then(() => reply({ type: 'ok' }));
  });
  reply({ type: 'listening', port });
}

if (isMainThread) void main();
else void loopThread();
