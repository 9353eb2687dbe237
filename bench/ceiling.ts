/**
 * The ceiling: bare uWebSockets.js answering the server's routes with a precomputed body (taken from a
 * real server answer of the scenario being measured, so the bytes on the wire are the same). It reads the
 * request body to the end like the server must, but parses and validates nothing. Whatever the real
 * server costs above this is the price of its own work, which is what `ratio` and CPU efficiency report.
 *
 * Runs as its own child process (forked by bench/run.ts, IPC channel) so its CPU time is measured
 * separately from the bench client's. Protocol:
 *   child -> parent  {type:'listening', port}
 *   parent -> child  {type:'set', config: CeilingConfig}   answered by {type:'ok'}
 * It exits when the parent goes away (IPC disconnect) or on SIGTERM/SIGINT.
 */
import uWS from 'uWebSockets.js';
import { statusLine } from '../src/runtime/errors.js';

export interface CeilingAnswer {
  readonly status: number;
  readonly body: string;
  /** Extra headers sent as the server sends them (a 304 is all headers); none when absent. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface CeilingConfig {
  /** The answer to every request on a known route, unless the key check below says otherwise. */
  readonly ok: CeilingAnswer;
  /** When set, a request whose X-Api-Key differs gets `unauthorized` (scenario 8's 401s). */
  readonly validKey: string | null;
  readonly unauthorized: CeilingAnswer | null;
}

export type CeilingMessage = { type: 'set'; config: CeilingConfig };
export type CeilingReply = { type: 'listening'; port: number } | { type: 'ok' } | { type: 'error'; message: string };

interface Prepared {
  statusLine: string;
  body: Buffer;
  headers: readonly (readonly [Buffer, Buffer])[];
  /** 304: headers only, no body and no Content-Length (as the server answers it). */
  empty: boolean;
}

function prepare(a: CeilingAnswer): Prepared {
  // Encoded once: the real server also sends ready bytes, so the ceiling must not pay UTF-8 encoding per request.
  return {
    statusLine: statusLine(a.status),
    body: Buffer.from(a.body, 'utf8'),
    headers: Object.entries(a.headers ?? {}).map(([k, v]) => [Buffer.from(k, 'latin1'), Buffer.from(v, 'latin1')] as const),
    empty: a.status === 304,
  };
}

let ok: Prepared = prepare({ status: 503, body: '{"error":"ceiling not configured"}' });
let validKey: string | null = null;
let unauthorized: Prepared | null = null;
const notFound: Prepared = prepare({ status: 404, body: '{"error":{"status":404,"code":"not_found","message":"Not found"}}' });

function choose(apiKey: string): Prepared {
  if (validKey !== null && unauthorized !== null && apiKey !== validKey) return unauthorized;
  return ok;
}

function send(res: uWS.HttpResponse, answer: Prepared): void {
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
  const state: BodyState = { aborted: false, answer: choose(req.getHeader('x-api-key')) };
  res.onAborted(() => {
    state.aborted = true;
  });
  res.onData((_chunk, isLast) => {
    if (!isLast || state.aborted) return;
    res.cork(() => send(res, state.answer));
  });
}

function onGet(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
  send(res, choose(req.getHeader('x-api-key')));
}

function onOther(res: uWS.HttpResponse): void {
  send(res, notFound);
}

function main(): void {
  if (process.send === undefined) {
    process.stderr.write('bench/ceiling.js is started by bench/run.js (needs an IPC channel)\n');
    process.exit(2);
  }
  const reply = (m: CeilingReply): void => {
    process.send?.(m);
  };
  const app = uWS
    .App()
    .post('/api/v1/config/:id', onPost)
    .post('/api/v1/config/:id/dynamic', onPost)
    .post('/api/v1/combine', onPost)
    .post('/api/v1/combine/', onPost)
    .get('/api/v1/env/catalog', onGet)
    .any('/*', onOther);
  let listenSocket: uWS.us_listen_socket | null = null;
  const stop = (): void => {
    if (listenSocket !== null) uWS.us_listen_socket_close(listenSocket);
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('disconnect', stop);
  process.on('message', (raw: CeilingMessage) => {
    if (raw.type !== 'set') return;
    ok = prepare(raw.config.ok);
    validKey = raw.config.validKey;
    unauthorized = raw.config.unauthorized === null ? null : prepare(raw.config.unauthorized);
    reply({ type: 'ok' });
  });
  app.listen('127.0.0.1', 0, (socket) => {
    if (socket === false) {
      reply({ type: 'error', message: 'ceiling could not listen on 127.0.0.1' });
      process.exit(1);
    }
    listenSocket = socket;
    reply({ type: 'listening', port: uWS.us_socket_local_port(socket) });
  });
}

main();
