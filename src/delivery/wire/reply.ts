/**
 * Writing responses. Everything written after the uWS handler returned (pool results, body chunks)
 * must be corked so uWS sends status, headers and body in one syscall.
 *
 * Every answer carries Content-Length (uWS writes it at end(); a body is always given whole, never
 * through write(), which would switch to chunked encoding) and Cache-Control: `no-store` on errors,
 * health and preflights; `no-cache` (store, but revalidate each time: an edit is live at once) on
 * answers that are the same for every user of a key; `private, no-cache` on personalised ones
 * (wrapped, serialized, dynamic combine: they carry meta.uid). Content and catalog answers carry an
 * ETag and Vary; with CORS on, every answer carries Access-Control-Allow-Origin and exposes ETag,
 * X-Missing-Content and Retry-After to the page.
 *
 * Inside a uWS route handler or body callback, uWS has corked the socket itself: answers are written
 * there directly, the writers taking their arguments. Anywhere else (a pool result, a timer) they run
 * inside res.cork, whose callback takes none: the arguments travel through module-level slots that
 * the corked writers read (no closure per response). cork runs the callback synchronously, so the
 * slots cannot be overwritten in between.
 *
 * Every send function returns the body bytes it wrote (0 for a 304 or 204): the access log's figure.
 *
 * HOT PATH: change with care.
 */
import type { HttpResponse } from 'uWebSockets.js';
import * as gzipParts from '../../shared/gzip.js';
import { GzipBuilder } from '../../shared/gzip.js';
import * as answerBuffers from './answer-buffer.js';
import { ALLOWED_HEADERS, ALLOWED_METHODS, ALLOW_PREFLIGHT, CC_NO_STORE, CC_PRIVATE, CC_SHARED, CODING_NAMES, EXPOSED, H_ORIGIN_VARY, JSON_TYPE_BYTES, PREFLIGHT_MAX_AGE, STATUS_NOT_MODIFIED, STATUS_NO_CONTENT, STATUS_OK, bytes } from './header-values.js';
import { Coding } from '../etag.js';
import * as itemScratch from './item-scratch.js';
import type { WireItem } from './item-scratch.js';
import * as headerBlock from './header-block.js';
import type { UidBlock } from './header-block.js';
import * as headerNames from './header-names.js';
import type { HttpPolicy } from '../http-policy.js';
import * as tail from './tail.js';

// What an answer is written with, as this module's own consts: folded into the writers that inline
// them, where an import is a cell read (and a function compared) before each use.
const { gzipBound } = gzipParts;
const { answerBuffer, answerView } = answerBuffers;
const { representationBlock, wrappedBlock } = headerBlock;
const { answerInPlace, scratchOf } = itemScratch;
const { H_ALLOW, H_ALLOW_HEADERS, H_ALLOW_METHODS, H_ALLOW_ORIGIN, H_CACHE_CONTROL, H_CONNECTION, H_CONTENT_ENCODING, H_CONTENT_TYPE, H_ETAG, H_EXPOSE_HEADERS, H_MAX_AGE, H_VARY } = headerNames;
const { appendTailToGzip, checkUser, wrappedTailLength } = tail;

/**
 * True while uWS is calling rcd for a request (a route handler, a body chunk: enterUwsCall and
 * leaveUwsCall around them). uWS corks the socket around those calls itself: writes there print none
 * of its "writes must be made from within a corked callback" warnings (test/e2e/http-layer.test.ts
 * holds that), so they go straight out: a res.cork there would run the writer through a second entry
 * into JavaScript and its arguments through the slots below.
 */
let uwsCorked = false;

/** Called first by every uWS route handler and body callback (then leaveUwsCall in a finally). */
export function enterUwsCall(): void {
  uwsCorked = true;
}

export function leaveUwsCall(): void {
  uwsCorked = false;
}

let slotRes: HttpResponse | null = null;
let slotStatus = STATUS_OK;
let slotBody: Uint8Array | string = '';
let slotHeaderName: Uint8Array | string = '';
let slotHeaderValue: Uint8Array | string = '';
let slotClose = false;
let slotOrigin: Uint8Array | null = null;
let slotEtag = '';
/** A 200 content answer's opaque tag (etag.ts): the header block writes its ETag value. */
let slotTag = '';
let slotCacheControl: Uint8Array = CC_NO_STORE;
let slotVary: Uint8Array | null = null;
let slotCoding: Coding = Coding.Identity;
// Wrapped answers only: the rendered head and the per-user tail's parts.
let slotItem: WireItem | null = null;
/** A content answer whose ETag is slotTag and the uid (sendUidContent): the header block kept for that tag. */
let slotUidBlock: UidBlock | null = null;
let slotUid = 0;
let slotMod = 0;
/** Body bytes of the answer being written: set by the writer, returned by the send function that called it. */
let answerBytes = 0;


/**
 * Stops reading `res`'s connection while its answer waits for the render pool; whoever writes that
 * answer calls res.resume() first. uWS closes a connection on which a request arrives while an
 * earlier answer is pending, answering neither: paused, a request sent behind this one stays in the
 * socket until the answer is written, and is then read and answered in order. A request that came in
 * the same read as this one was parsed before this request's handler returned; uWS still closes
 * that connection (docs/security.md, "Pipelining").
 */
export function holdConnection(res: HttpResponse): void {
  res.pause();
}

const gzip = new GzipBuilder();

function writeCors(res: HttpResponse, origin: Uint8Array | null): void {
  if (origin === null) return;
  res.writeHeader(H_ALLOW_ORIGIN, origin);
  res.writeHeader(H_EXPOSE_HEADERS, EXPOSED);
}

/**
 * A non-content answer: status, JSON content type, Cache-Control: no-store, CORS, an optional header,
 * the body. uWS writes "200 OK" itself when no status was set: one native call less on every success.
 */
function writeAnswer(
  res: HttpResponse,
  status: string,
  body: Uint8Array | string,
  headerName: Uint8Array | string,
  headerValue: Uint8Array | string,
  closeConnection: boolean,
  origin: Uint8Array | null,
): void {
  if (status !== STATUS_OK) res.writeStatus(status);
  res.writeHeader(H_CONTENT_TYPE, JSON_TYPE_BYTES);
  res.writeHeader(H_CACHE_CONTROL, CC_NO_STORE);
  writeCors(res, origin);
  if (headerName !== '') res.writeHeader(headerName, headerValue);
  answerBytes = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  res.end(body, closeConnection);
}

/**
 * A 200 content answer: Content-Type and the representation headers in one native call
 * (header-block.ts; the ETag is `tag` in `coding`, or `tag`.`uid` from `uidBlock` when one is
 * given), CORS, Content-Encoding, an optional header, the body.
 */
function writeContent(
  res: HttpResponse,
  body: Uint8Array,
  coding: Coding,
  tag: string,
  cacheControl: Uint8Array,
  vary: Uint8Array,
  uidBlock: UidBlock | null,
  uid: number,
  headerName: string,
  headerValue: string,
  origin: Uint8Array | null,
  closeConnection: boolean,
): void {
  if (uidBlock !== null) res.writeHeader(H_CONTENT_TYPE, wrappedBlock(uidBlock, cacheControl, vary, tag, uid, coding));
  // A shared answer's block is the same for every user: header-block.ts keeps the last one whole.
  else res.writeHeader(H_CONTENT_TYPE, representationBlock(cacheControl, vary, tag, coding, cacheControl === CC_SHARED));
  writeCors(res, origin);
  if (coding !== Coding.Identity) res.writeHeader(H_CONTENT_ENCODING, CODING_NAMES[coding]!);
  if (headerName !== '') res.writeHeader(headerName, headerValue);
  answerBytes = body.length;
  res.end(body, closeConnection);
}

/** A wrapped answer: the item's head and this user's tail (tail.ts), gzip when `coding` says so. */
function writeWrapped(
  res: HttpResponse,
  vary: Uint8Array,
  item: WireItem,
  uid: number,
  mod: number,
  coding: Coding,
  itemTag: string,
  origin: Uint8Array | null,
  closeConnection: boolean,
): void {
  checkUser(uid, mod);
  const scratch = scratchOf(item);
  res.writeHeader(H_CONTENT_TYPE, wrappedBlock(scratch, CC_PRIVATE, vary, itemTag, uid, coding));
  writeCors(res, origin);
  if (coding === Coding.Gzip) {
    res.writeHeader(H_CONTENT_ENCODING, CODING_NAMES[Coding.Gzip]!);
    const part = item.gzPart!;
    const bound = gzipBound(part.segment.length, wrappedTailLength(uid, mod, item.tailEnd), 1);
    gzip.begin(answerBuffer(bound));
    gzip.part(part);
    appendTailToGzip(gzip, uid, mod, item.tailEnd);
    answerBytes = gzip.end();
    if (answerBytes > bound) throw new RangeError(`wire: a wrapped gzip answer of ${answerBytes} bytes, bound ${bound}`);
    res.end(answerView(answerBytes), closeConnection);
    return;
  }
  const body = answerInPlace(item, scratch, uid, mod);
  answerBytes = body.length;
  res.end(body, closeConnection);
}

function writeAnswerCorked(): void {
  writeAnswer(slotRes!, slotStatus, slotBody, slotHeaderName, slotHeaderValue, slotClose, slotOrigin);
}

function writeContentCorked(): void {
  writeContent(slotRes!, slotBody as Uint8Array, slotCoding, slotTag, slotCacheControl, slotVary!, slotUidBlock, slotUid, slotHeaderName as string, slotHeaderValue as string, slotOrigin, slotClose);
}

function writeWrappedCorked(): void {
  writeWrapped(slotRes!, slotVary!, slotItem!, slotUid, slotMod, slotCoding, slotTag, slotOrigin, slotClose);
}

const CLOSE = bytes('close');

/**
 * Ends an answer that has no body. This uWS build writes `Content-Length: 9223372036854775808` when
 * endWithoutBody is given any argument (an undefined length included), so it is called bare and a
 * closing answer says Connection: close itself (the client closes; shutdown closes what is left).
 */
function endEmpty(res: HttpResponse, closeConnection: boolean): void {
  answerBytes = 0;
  if (closeConnection) res.writeHeader(H_CONNECTION, CLOSE);
  res.endWithoutBody();
}

/** 304: the representation headers (`etag` whole), no body and no Content-Length: a 304's length would be the 200's (RFC 9110 8.6), which depends on the coding. */
function writeNotModified(res: HttpResponse, etag: string, cacheControl: Uint8Array, vary: Uint8Array, origin: Uint8Array | null, closeConnection: boolean): void {
  res.writeStatus(STATUS_NOT_MODIFIED);
  res.writeHeader(H_ETAG, etag);
  res.writeHeader(H_CACHE_CONTROL, cacheControl);
  res.writeHeader(H_VARY, vary);
  writeCors(res, origin);
  endEmpty(res, closeConnection);
}

function writePreflight(res: HttpResponse, origin: Uint8Array | null, vary: Uint8Array | null, closeConnection: boolean): void {
  res.writeStatus(STATUS_NO_CONTENT);
  res.writeHeader(H_ALLOW, ALLOW_PREFLIGHT);
  res.writeHeader(H_CACHE_CONTROL, CC_NO_STORE);
  if (origin !== null) {
    res.writeHeader(H_ALLOW_ORIGIN, origin);
    res.writeHeader(H_ALLOW_METHODS, ALLOWED_METHODS);
    res.writeHeader(H_ALLOW_HEADERS, ALLOWED_HEADERS);
    res.writeHeader(H_MAX_AGE, PREFLIGHT_MAX_AGE);
  }
  if (vary !== null) res.writeHeader(H_VARY, vary);
  endEmpty(res, closeConnection);
}

function writeNotModifiedCorked(): void {
  writeNotModified(slotRes!, slotEtag, slotCacheControl, slotVary!, slotOrigin, slotClose);
}

function writePreflightCorked(): void {
  writePreflight(slotRes!, slotOrigin, slotVary, slotClose);
}

function clearSlots(): void {
  slotRes = null;
  slotBody = '';
  slotItem = null;
  slotUidBlock = null;
  slotOrigin = null;
  slotEtag = '';
  slotTag = '';
  slotVary = null;
  slotCoding = Coding.Identity;
  slotHeaderName = '';
  slotHeaderValue = '';
}

/**
 * A non-content answer (errors, health, 405): status, JSON content type, Cache-Control: no-store,
 * the CORS headers when `origin` is set, an optional extra header, the body.
 */
export function send(
  res: HttpResponse,
  status: string,
  body: Uint8Array | string,
  headerName: Uint8Array | string,
  headerValue: Uint8Array | string,
  closeConnection: boolean,
  origin: Uint8Array | null,
): number {
  if (uwsCorked) {
    writeAnswer(res, status, body, headerName, headerValue, closeConnection, origin);
    return answerBytes;
  }
  slotRes = res;
  slotStatus = status;
  slotBody = body;
  slotHeaderName = headerName;
  slotHeaderValue = headerValue;
  slotClose = closeConnection;
  slotOrigin = origin;
  res.cork(writeAnswerCorked);
  clearSlots();
  return answerBytes;
}

/**
 * 200 with a content or catalog body already in its coding: ETag (of the opaque `tag` in that
 * coding, etag.ts), Cache-Control, Vary, Content-Encoding when compressed, an optional extra header
 * (X-Missing-Content).
 */
export function sendContent(
  res: HttpResponse,
  policy: HttpPolicy,
  body: Uint8Array,
  coding: Coding,
  tag: string,
  cacheControl: Uint8Array,
  headerName: string,
  headerValue: string,
  origin: Uint8Array | null,
  closeConnection: boolean,
): number {
  return sendTagged(res, policy, body, coding, tag, null, 0, cacheControl, headerName, headerValue, origin, closeConnection);
}

/**
 * sendContent of an uncompressed answer whose ETag is `tag`.`uid` (a dynamic combine from its plan):
 * the header block kept in `block` for that tag gets the uid's digits in place (header-block.ts).
 */
export function sendUidContent(
  res: HttpResponse,
  policy: HttpPolicy,
  body: Uint8Array,
  block: UidBlock,
  tag: string,
  uid: number,
  cacheControl: Uint8Array,
  headerName: string,
  headerValue: string,
  origin: Uint8Array | null,
  closeConnection: boolean,
): number {
  return sendTagged(res, policy, body, Coding.Identity, tag, block, uid, cacheControl, headerName, headerValue, origin, closeConnection);
}

function sendTagged(
  res: HttpResponse,
  policy: HttpPolicy,
  body: Uint8Array,
  coding: Coding,
  tag: string,
  uidBlock: UidBlock | null,
  uid: number,
  cacheControl: Uint8Array,
  headerName: string,
  headerValue: string,
  origin: Uint8Array | null,
  closeConnection: boolean,
): number {
  if (uwsCorked) {
    writeContent(res, body, coding, tag, cacheControl, policy.vary, uidBlock, uid, headerName, headerValue, origin, closeConnection);
    return answerBytes;
  }
  slotRes = res;
  slotBody = body;
  slotCoding = coding;
  slotTag = tag;
  slotUidBlock = uidBlock;
  slotUid = uid;
  slotCacheControl = cacheControl;
  slotVary = policy.vary;
  slotHeaderName = headerName;
  slotHeaderValue = headerValue;
  slotOrigin = origin;
  slotClose = closeConnection;
  res.cork(writeContentCorked);
  clearSlots();
  return answerBytes;
}

/**
 * 200 with a wrapped answer: the rendered head, then the tail of this user (see tail.ts); gzip when
 * `coding` says so. `itemTag` is the item's tag without the uid (etag.ts itemTag): the ETag is its
 * wrappedTag with `uid`.
 */
export function sendWrapped(
  res: HttpResponse,
  policy: HttpPolicy,
  item: WireItem,
  uid: number,
  mod: number,
  coding: Coding,
  itemTag: string,
  origin: Uint8Array | null,
  closeConnection: boolean,
): number {
  if (uwsCorked) {
    writeWrapped(res, policy.vary, item, uid, mod, coding, itemTag, origin, closeConnection);
    return answerBytes;
  }
  slotRes = res;
  slotItem = item;
  slotUid = uid;
  slotMod = mod;
  slotCoding = coding;
  slotTag = itemTag;
  slotVary = policy.vary;
  slotOrigin = origin;
  slotClose = closeConnection;
  res.cork(writeWrappedCorked);
  clearSlots();
  return answerBytes;
}

/** 304: the answer the client holds (named by `etag`) is current. */
export function sendNotModified(
  res: HttpResponse,
  policy: HttpPolicy,
  etag: string,
  cacheControl: Uint8Array,
  origin: Uint8Array | null,
  closeConnection: boolean,
): number {
  if (uwsCorked) {
    writeNotModified(res, etag, cacheControl, policy.vary, origin, closeConnection);
    return answerBytes;
  }
  slotRes = res;
  slotEtag = etag;
  slotCacheControl = cacheControl;
  slotVary = policy.vary;
  slotOrigin = origin;
  slotClose = closeConnection;
  res.cork(writeNotModifiedCorked);
  clearSlots();
  return answerBytes;
}

/** 204 to an OPTIONS request; the CORS preflight headers when `origin` is allowed. */
export function sendPreflight(res: HttpResponse, policy: HttpPolicy, origin: Uint8Array | null, closeConnection: boolean): number {
  const vary = policy.corsOrigins === null ? null : H_ORIGIN_VARY;
  if (uwsCorked) {
    writePreflight(res, origin, vary, closeConnection);
    return answerBytes;
  }
  slotRes = res;
  slotOrigin = origin;
  slotVary = vary;
  slotClose = closeConnection;
  res.cork(writePreflightCorked);
  clearSlots();
  return answerBytes;
}
