/**
 * Route handlers of the delivery API. Checks run in the documented order: route and method (matched
 * by uWS's router, app.ts) → X-Api-Key (401) → Content-Type (400) → body size (413) → JSON and
 * schema (400) → query (400) → content lookup (404). The last three run once the body is in
 * (request.ts, single.ts, combine.ts).
 *
 * HOT PATH: change with care. Everything a handler needs from `req` is read synchronously here:
 * uWS invalidates `req` when the handler returns.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errorResponse } from '../runtime/errors.js';
import type { KeyView } from './directory.js';
import { contentIdKey } from '../store/ids.js';
import { enterUwsCall, leaveUwsCall, send, sendContent, sendNotModified, sendPreflight } from './wire/reply.js';
import { CC_SHARED, JSON_TYPE, STATUS_OK } from './wire/header-values.js';
import { joinPieces } from './wire/answer-buffer.js';
import { sendError, sendStarting } from './wire/error-answers.js';
import * as httpPolicy from './http-policy.js';
import { corsOriginOf } from './http-policy.js';
import { H_API_KEY, H_LAST_EVENT_ID, H_RETRY_AFTER } from './wire/header-names.js';
import * as encoding from './encoding.js';
import { ACCEPT_GZIP } from './encoding.js';
import { Coding, etagValue, matchIfNoneMatch } from './etag.js';
import { mintStreamToken, verifyStreamToken } from './stream-token.js';
import { StreamFormat } from './events.js';
import { EMPTY_BODY } from './context.js';
import * as requestHead from './wire/request-head.js';
import { WANT_LENGTH, WANT_ORIGIN, type RequestHead } from './wire/request-head.js';
import * as keyUse from './key-use.js';
import { ContentRequest } from './request.js';
import { Route } from './content-fields.js';
import type { FrontEndState } from './state.js';
import { ERROR_STATUS } from '../runtime/errors.js';
import { MetricRoute, Outcome, Phase, S_PHASE, S_STORE_DOWN_SINCE, countRequest } from '../metrics/layout.js';
import * as request from './request.js';

// The functions a content request's head goes through, as this module's own consts: folded into the
// handlers that inline them, where an import is a cell read and compared before each call.
const { corsOriginFor } = httpPolicy;
const { acceptedCodings } = encoding;
const { declaresBodyLength, hasAmbiguousFraming, readHead } = requestHead;
const { noteKeyUse } = keyUse;
const { metricRouteOf } = request;

const MISSING_KEY = errorResponse('missing_api_key', 'the X-Api-Key header is required');
const INVALID_KEY = errorResponse('invalid_api_key', 'the API key is unknown or revoked');
const BAD_TYPE = errorResponse('unsupported_content_type', 'Content-Type must be application/json');
const NOT_FOUND = errorResponse('not_found', 'no such endpoint; see docs/api.md');
const POST_ONLY = errorResponse('method_not_allowed', 'this endpoint accepts POST only');
const GET_ONLY = errorResponse('method_not_allowed', 'this endpoint accepts GET only');
// The applied change-log seq follows the status: nodes of one store can be compared at a glance.
const HEALTH_OK = '{"status":"ok","seq":';
const HEALTH_LOOP = ',"loop":';
const HEALTH_DRAINING = '{"status":"shutting_down"}';
// 200 still: delivery answers from the last good state, and a restart would not bring the store back.
const HEALTH_STORE_UNAVAILABLE = '{"status":"degraded","store":"unavailable","seq":';
const TOO_MANY_STREAMS = errorResponse('too_many_streams', 'this server holds as many event streams as it may (--max-streams); retry later');
const BAD_STREAM_TOKEN = errorResponse('invalid_stream_token', 'the stream token is malformed, expired or its key was revoked; get a new one');
/** Seconds a client refused a stream waits before trying again (spread further by its own jitter). */
const STREAM_RETRY_AFTER = Buffer.from('5', 'latin1');
const EMPTY_BODY_ERROR = errorResponse('invalid_json', EMPTY_BODY);
const TOO_LARGE_STATUS = ERROR_STATUS.payload_too_large;
const NOT_READY_STARTING = errorResponse('starting', 'the server is starting: routing is not loaded yet');
const NOT_READY_DRAINING = errorResponse('draining', 'the server is shutting down');
const NOT_READY_STORE = errorResponse('store_unavailable', 'the store has been unreachable for longer than --ready-store-outage: this node cannot follow its changes');
const READY_OK = '{"status":"ready","seq":';

/** `application/json`, optionally with parameters (`; charset=utf-8`), any letter case. */
export function isJsonContentType(value: string): boolean {
  if (value === JSON_TYPE) return true;
  const semi = value.indexOf(';');
  const type = (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
  return type === JSON_TYPE;
}

/** 401 for a key the directory does not hold; 503 `starting` while the keys may still be loading. */
function refuseUnknownKey(state: FrontEndState, res: HttpResponse, origin: Uint8Array | null, route: MetricRoute): void {
  if (state.server[S_PHASE] === Phase.Starting) {
    sendStarting(res, state.shuttingDown, origin);
    countRequest(state.counters, route, 503, Outcome.None);
    return;
  }
  sendError(res, INVALID_KEY, state.shuttingDown, origin);
  countRequest(state.counters, route, 401, Outcome.None);
}

/** Key then Content-Type; answers and returns undefined when either fails. */
const authorize = (state: FrontEndState, res: HttpResponse, head: RequestHead, origin: Uint8Array | null, route: MetricRoute): KeyView | undefined => {
  const key = head.apiKey;
  if (key === '') {
    sendError(res, MISSING_KEY, state.shuttingDown, origin);
    countRequest(state.counters, route, 401, Outcome.None);
    return undefined;
  }
  const directory = state.directory;
  const view = key === directory.lastKey ? directory.lastView : directory.lookupKey(key);
  if (view === undefined) {
    refuseUnknownKey(state, res, origin, route);
    return undefined;
  }
  if (!isJsonContentType(head.contentType)) {
    sendError(res, BAD_TYPE, state.shuttingDown, origin);
    countRequest(state.counters, route, 400, Outcome.None);
    return undefined;
  }
  noteKeyUse(state.keyUse, view);
  return view;
};

/** The last URL id decodeId decoded (lastDecodedId), and its content-map key. */
interface LastDecodedId {
  raw: string;
  key: string;
}

// Owned by decodeId, for its next call: a URL parameter is a new string per request, and comparing
// it with the last costs less than lowercasing it and hashing the result for the content map, which
// is what a repeated id (every client of a game asks for the same few) would otherwise pay each time.
const lastDecodedId: LastDecodedId = { raw: '', key: '' };

const decodeId = (raw: string): string | undefined => {
  const last = lastDecodedId;
  if (raw === last.raw) return last.key;
  let key: string;
  if (raw.indexOf('%') === -1) key = contentIdKey(raw);
  else {
    try {
      key = contentIdKey(decodeURIComponent(raw));
    } catch {
      return undefined;
    }
  }
  last.raw = raw;
  last.key = key;
  return key;
};

/**
 * An ambiguous framing (request-head.ts) is refused by closing the connection at once (returns true: the
 * caller stops): uWS keeps parsing the bytes that follow this head in the same read before it sends
 * anything, so a 400 could only go out after the smuggled request was handled; a closed socket stops
 * the parser there. Every route checks (a GET may carry a body too) unless
 * --reject-ambiguous-framing false: safe only behind a proxy that re-frames requests itself (the
 * recommended nginx refuses such requests).
 */
export function refusedAmbiguousFraming(state: FrontEndState, res: HttpResponse, req: HttpRequest): boolean {
  return state.http.rejectAmbiguousFraming && headOf(state, res, req, false) === null;
}

/**
 * The head of a request whose route reads its headers (request-head.ts), or null when its framing is
 * ambiguous and refused (the connection is closed; see refusedAmbiguousFraming). `body`: the route
 * reads one (its Content-Length and Transfer-Encoding are wanted).
 */
export function headOf(state: FrontEndState, res: HttpResponse, req: HttpRequest, body: boolean): RequestHead | null {
  const http = state.http;
  const reject = http.rejectAmbiguousFraming;
  const head = readHead(req, reject, (http.corsOrigins !== null ? WANT_ORIGIN : 0) | (body ? WANT_LENGTH : 0));
  if (!reject || !hasAmbiguousFraming(head)) return head;
  res.close();
  return null;
}

/** Called when a route handler threw: the connection is closed (it may hold part of an answer). */
export function handlerFailed(state: FrontEndState, res: HttpResponse, err: unknown): void {
  state.onInternalError(err);
  countRequest(state.counters, MetricRoute.Other, 0, Outcome.Aborted);
  try {
    res.close();
  } catch {
    // Already closed or aborted: nothing is left to clean up.
  }
}

/** A route handler with one argument of its own (a route, or none: `undefined`). */
export type RouteHandler<A> = (state: FrontEndState, res: HttpResponse, req: HttpRequest, arg: A) => void;

/**
 * Runs a route handler as uWS calls it. An exception escaping a uWS handler ends the process:
 * handlerFailed contains it to the connection. uWS corked the socket around the handler, so answers
 * are written straight (enterUwsCall, wire/reply.ts).
 */
export function runHandler<A>(handle: RouteHandler<A>, arg: A, state: FrontEndState, res: HttpResponse, req: HttpRequest): void {
  enterUwsCall();
  try {
    handle(state, res, req, arg);
  } catch (err) {
    handlerFailed(state, res, err);
  } finally {
    leaveUwsCall();
  }
}

/** 10^n for n = 0..15: a value of n characters is below 10^n when they are all digits. */
const POWERS_OF_TEN = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/**
 * Whether a Content-Length value says more than `max` bytes. uWS refuses a request whose
 * Content-Length is not digits (optionally with spaces around them) by closing the connection
 * before a handler runs (test/e2e/request-head.test.ts), so a value this short cannot reach `max`:
 * the common body of a few hundred bytes is decided by its length alone, without reading its
 * digits. Longer values are read digit by digit, as `Number()` of a header string is a runtime
 * call; anything that is not plain digits is read as `Number()` reads it.
 */
export function declaredOver(declared: string, max: number): boolean {
  const n = declared.length;
  if (n <= 15) {
    if (POWERS_OF_TEN[n]! <= max) return false;
    let value = 0;
    let i = 0;
    for (; i < n; i++) {
      const digit = declared.charCodeAt(i) - 48;
      if (digit < 0 || digit > 9) break;
      value = value * 10 + digit;
    }
    if (i === n) return value > max;
  }
  return Number(declared) > max;
}

export function handleContent(state: FrontEndState, res: HttpResponse, req: HttpRequest, route: Route): void {
  const head = headOf(state, res, req, true);
  if (head === null) return;
  const origin = corsOriginFor(state.http, head.origin);
  const metricRoute = metricRouteOf(route);
  const view = authorize(state, res, head, origin, metricRoute);
  if (view === undefined) return;
  const maxBody = state.http.maxBodyBytes;
  const declared = head.contentLength;
  if (declared !== '' && declaredOver(declared, maxBody)) {
    // Refuse before reading a byte; close since the client is about to send the body anyway.
    sendError(res, errorResponse('payload_too_large', `the request body exceeds ${maxBody} bytes`), true, origin);
    countRequest(state.counters, metricRoute, TOO_LARGE_STATUS, Outcome.None);
    return;
  }
  let idLower = '';
  if (route !== Route.Combine) {
    const id = decodeId(req.getParameter(0));
    if (id === undefined) {
      sendError(res, NOT_FOUND, state.shuttingDown, origin);
      countRequest(state.counters, metricRoute, 404, Outcome.None);
      return;
    }
    idLower = id;
  }
  if (declared === '0' || (declared === '' && head.transferEncoding === '')) {
    // No body to wait for: uWS calls no data handler for an empty body whose head came in pieces.
    sendError(res, EMPTY_BODY_ERROR, state.shuttingDown, origin);
    countRequest(state.counters, metricRoute, 400, Outcome.None);
    return;
  }
  const r = new ContentRequest(
    state,
    res,
    route,
    view.env,
    view.keyId,
    idLower,
    req.getQuery() ?? '',
    head.ifNoneMatch,
    acceptedCodings(head.acceptEncoding),
    origin,
    declaresBodyLength(head),
  );
  res.onAborted(() => r.onAborted());
  res.onData((chunk, isLast) => r.onChunk(chunk, isLast));
}

/** uWS's per-loop cork buffer: a body up to this size is copied there and sent after the handler returns. */
const CORK_BUFFER_BYTES = 16 * 1024;

/** The abort handler of a synchronous answer: nothing is pending once end() returned. */
function ignoreAbort(): void {}

export function handleCatalog(state: FrontEndState, res: HttpResponse, req: HttpRequest): void {
  const head = headOf(state, res, req, false);
  if (head === null) return;
  const origin = corsOriginFor(state.http, head.origin);
  const view = authorize(state, res, head, origin, MetricRoute.Catalog);
  if (view === undefined) return;
  const catalog = view.env.catalog;
  const http = state.http;
  const gzip = catalog.gzip !== null && catalog.bodyBytes >= http.compressMinBytes && (acceptedCodings(head.acceptEncoding) & ACCEPT_GZIP) !== 0;
  const coding = gzip ? Coding.Gzip : Coding.Identity;
  const ifNoneMatch = head.ifNoneMatch;
  const matched = ifNoneMatch.length === 0 ? -1 : matchIfNoneMatch(ifNoneMatch, catalog.tag, coding);
  if (matched !== -1) {
    sendNotModified(res, http, etagValue(catalog.tag, matched), CC_SHARED, origin, state.shuttingDown);
    countRequest(state.counters, MetricRoute.Catalog, 304, Outcome.NotModified);
    return;
  }
  const pieces = gzip ? catalog.gzip : catalog.body;
  const body = pieces.length === 1 ? pieces[0]! : joinPieces(pieces, gzip ? catalog.gzipBytes : catalog.bodyBytes);
  // A body larger than uWS's cork buffer is written to the socket inside end(); a client that reset
  // the connection makes that write close the socket before the answer counts as sent, and uWS then
  // aborts the process for a handler that returned "without responding" unless an abort handler is
  // attached.
  if (body.byteLength > CORK_BUFFER_BYTES) res.onAborted(ignoreAbort);
  sendContent(res, http, body, coding, catalog.tag, CC_SHARED, '', '', origin, state.shuttingDown);
  countRequest(state.counters, MetricRoute.Catalog, 200, Outcome.Hit);
}

/**
 * GET /api/v1/env/events: the key's environment's change stream (events.ts). The key comes in X-Api-Key
 * or, for EventSource (which sends no headers), as a stream token in `?token=`; resume from the
 * Last-Event-ID header or `?lastEventId=` (a page opening a new EventSource cannot set the header).
 * No Content-Type is required: EventSource sends none.
 */
export function handleEvents(state: FrontEndState, res: HttpResponse, req: HttpRequest): void {
  if (refusedAmbiguousFraming(state, res, req)) return;
  const origin = corsOriginOf(state.http, req);
  const key = req.getHeader(H_API_KEY);
  const query = req.getQuery() ?? '';
  const params = query === '' ? null : new URLSearchParams(query);
  let view: KeyView | undefined;
  if (key !== '') {
    view = state.directory.lookupKey(key);
    if (view === undefined) {
      refuseUnknownKey(state, res, origin, MetricRoute.Events);
      return;
    }
  } else {
    const token = params?.get('token') ?? null;
    if (token === null) {
      sendError(res, MISSING_KEY, state.shuttingDown, origin);
      countRequest(state.counters, MetricRoute.Events, 401, Outcome.None);
      return;
    }
    view = verifyStreamToken(state.directory, token, Date.now());
    if (view === undefined) {
      sendError(res, BAD_STREAM_TOKEN, state.shuttingDown, origin);
      countRequest(state.counters, MetricRoute.Events, 401, Outcome.None);
      return;
    }
  }
  if (state.shuttingDown || !state.events.hasRoom()) {
    send(res, TOO_MANY_STREAMS.statusLine, TOO_MANY_STREAMS.body, H_RETRY_AFTER, STREAM_RETRY_AFTER, state.shuttingDown, origin);
    countRequest(state.counters, MetricRoute.Events, 503, Outcome.None);
    return;
  }
  countRequest(state.counters, MetricRoute.Events, 200, Outcome.None);
  noteKeyUse(state.keyUse, view);
  const last = req.getHeader(H_LAST_EVENT_ID) || (params?.get('lastEventId') ?? '');
  const lastEventId = /^\d{1,15}$/.test(last) ? Number(last) : -1;
  // `format=ofrep`: the URL an OFREP bulk evaluation advertises (src/delivery/ofrep/event-streams.ts).
  const format = params?.get('format') === 'ofrep' ? StreamFormat.Ofrep : StreamFormat.Native;
  state.events.start(res, view.env, view.keyId, lastEventId, state.directory.seq, origin, format);
}

/** POST /api/v1/env/events/token: a short-lived token for EventSource, minted with the key (stream-token.ts). */
export function handleStreamToken(state: FrontEndState, res: HttpResponse, req: HttpRequest): void {
  const head = headOf(state, res, req, false);
  if (head === null) return;
  const origin = corsOriginFor(state.http, head.origin);
  const view = authorize(state, res, head, origin, MetricRoute.EventsToken);
  if (view === undefined) return;
  const key = state.directory.keyById(view.keyId)!;
  const ttl = state.config.streamTokenTtlS;
  const token = mintStreamToken(view.keyId, key.digest, Date.now(), ttl);
  send(res, STATUS_OK, `{"token":"${token}","expiresIn":${ttl}}`, '', '', state.shuttingDown, origin);
  countRequest(state.counters, MetricRoute.EventsToken, 200, Outcome.None);
}

/** OPTIONS: the CORS preflight when CORS is on (--cors-origins), else 405 as any method a route does not take. */
export function handlePreflight(state: FrontEndState, res: HttpResponse, req: HttpRequest, allow: 'GET' | 'POST'): void {
  if (!state.http.corsEnabled) {
    handleWrongMethod(state, res, req, allow);
    return;
  }
  if (refusedAmbiguousFraming(state, res, req)) return;
  sendPreflight(res, state.http, corsOriginOf(state.http, req), state.shuttingDown);
  countRequest(state.counters, MetricRoute.Preflight, 204, Outcome.None);
}

export function handleHealth(state: FrontEndState, res: HttpResponse, req: HttpRequest): void {
  if (refusedAmbiguousFraming(state, res, req)) return;
  if (state.shuttingDown) {
    send(res, '503 Service Unavailable', HEALTH_DRAINING, '', '', true, null);
    countRequest(state.counters, MetricRoute.Healthz, 503, Outcome.None);
    return;
  }
  send(res, STATUS_OK, (state.storeAvailable ? HEALTH_OK : HEALTH_STORE_UNAVAILABLE) + state.directory.seq + HEALTH_LOOP + state.loop + '}', '', '', false, null);
  countRequest(state.counters, MetricRoute.Healthz, 200, Outcome.None);
}

/**
 * GET /readyz: whether a load balancer should send this node traffic. 503 with a stable code while
 * starting (routing, import, demo seed), while draining (SIGTERM), and once the store has been
 * unreachable longer than --ready-store-outage (the node cannot follow other nodes' edits, so its
 * answers may drift from theirs). /healthz stays liveness: it answers 200 through an outage.
 */
export function handleReady(state: FrontEndState, res: HttpResponse, req: HttpRequest): void {
  if (refusedAmbiguousFraming(state, res, req)) return;
  const phase = state.server[S_PHASE];
  const downSince = state.server[S_STORE_DOWN_SINCE]!;
  let refusal = null;
  if (state.shuttingDown || phase === Phase.Draining) refusal = NOT_READY_DRAINING;
  else if (phase === Phase.Starting) refusal = NOT_READY_STARTING;
  else if (downSince !== 0 && Date.now() - downSince >= state.config.readyStoreOutageMs) refusal = NOT_READY_STORE;
  if (refusal !== null) {
    send(res, refusal.statusLine, refusal.body, '', '', state.shuttingDown, null);
    countRequest(state.counters, MetricRoute.Readyz, 503, Outcome.None);
    return;
  }
  send(res, STATUS_OK, READY_OK + state.directory.seq + HEALTH_LOOP + state.loop + '}', '', '', false, null);
  countRequest(state.counters, MetricRoute.Readyz, 200, Outcome.None);
}

/** 405 on a route that exists for another method; `allow` is the one it takes. */
export function handleWrongMethod(state: FrontEndState, res: HttpResponse, req: HttpRequest, allow: 'GET' | 'POST'): void {
  if (refusedAmbiguousFraming(state, res, req)) return;
  const err = allow === 'POST' ? POST_ONLY : GET_ONLY;
  send(res, err.statusLine, err.body, 'allow', allow, state.shuttingDown, corsOriginOf(state.http, req));
  countRequest(state.counters, MetricRoute.Other, 405, Outcome.None);
}

export function handleNotFound(state: FrontEndState, res: HttpResponse, req: HttpRequest): void {
  if (refusedAmbiguousFraming(state, res, req)) return;
  sendError(res, NOT_FOUND, state.shuttingDown, corsOriginOf(state.http, req));
  countRequest(state.counters, MetricRoute.Other, 404, Outcome.None);
}
