/**
 * Writing responses. Everything written after the uWS handler returned (pool results, body chunks)
 * must be corked so uWS sends status, headers and body in one syscall.
 *
 * HOT PATH: cork takes a callback; to avoid allocating a closure per response, the arguments travel
 * through module-level slots that `writeCorked` reads. cork runs the callback synchronously, so the
 * slots cannot be overwritten in between.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { errorResponse, type ErrorResponse } from '../runtime/errors.js';
import { EMPTY_BYTES, wrappedTailLength, writeWrappedTail } from './tail.js';

export const JSON_TYPE = 'application/json';
export const STATUS_OK = '200 OK';

// Header names and values as bytes: uWS reads a byte array in place, while a string argument is
// UTF-8-encoded into a fresh native allocation on every call (v8::String::Utf8Value). With the method
// left to uWS's router and 200 to its default status, this measured +7% req/s (bench/README.md).
export const H_CONTENT_TYPE = Buffer.from('content-type', 'latin1');
export const JSON_TYPE_BYTES = Buffer.from(JSON_TYPE, 'latin1');

let slotRes: HttpResponse | null = null;
let slotStatus = STATUS_OK;
let slotBody: Uint8Array | string = '';
let slotHeaderName = '';
let slotHeaderValue = '';
let slotClose = false;
// Wrapped answers only: the per-user tail's parts.
let slotUid = 0;
let slotMod = 0;
let slotSeg: Uint8Array = EMPTY_BYTES;

/**
 * Heads up to this size are joined with their tail into one buffer and sent with one end(): one
 * native call and a Content-Length. Larger heads are sent as write(head) + end(tail), which avoids
 * copying the body but makes uWS use chunked encoding.
 */
const JOIN_LIMIT = 64 * 1024;

// Where head and tail are joined. Reused for every response: uWS copies what end() and write() are
// given before returning (into its cork buffer or the socket's backpressure buffer), so the bytes
// are free again at once. A fresh Buffer per response was most of the tail's cost (tail.ts).
let scratch = Buffer.allocUnsafeSlow(JOIN_LIMIT + 4096);

function scratchOf(size: number): Buffer {
  if (scratch.byteLength < size) scratch = Buffer.allocUnsafeSlow(size);
  return scratch;
}

// uWS writes "200 OK" itself when no status was set: one native call less on every success.
function writeCorked(): void {
  const res = slotRes!;
  if (slotStatus !== STATUS_OK) res.writeStatus(slotStatus);
  res.writeHeader(H_CONTENT_TYPE, JSON_TYPE_BYTES);
  if (slotHeaderName !== '') res.writeHeader(slotHeaderName, slotHeaderValue);
  res.end(slotBody, slotClose);
}

function writeWrappedCorked(): void {
  const res = slotRes!;
  const head = slotBody as Uint8Array;
  res.writeHeader(H_CONTENT_TYPE, JSON_TYPE_BYTES);
  const tailLength = wrappedTailLength(slotUid, slotMod, slotSeg);
  if (slotClose || head.byteLength <= JOIN_LIMIT) {
    // Always joined when closing: uWS writes its Connection: close header at end(), which after a
    // write() would land inside the chunked body (found by the graceful-shutdown test).
    const out = scratchOf(head.byteLength + tailLength);
    out.set(head, 0);
    const end = writeWrappedTail(out, head.byteLength, slotUid, slotMod, slotSeg);
    res.end(out.subarray(0, end), slotClose);
  } else {
    res.write(head);
    const out = scratchOf(tailLength);
    res.end(out.subarray(0, writeWrappedTail(out, 0, slotUid, slotMod, slotSeg)), false);
  }
}

/** Status, JSON content type, optional extra header, body. */
export function send(
  res: HttpResponse,
  status: string,
  body: Uint8Array | string,
  headerName: string,
  headerValue: string,
  closeConnection: boolean,
): void {
  slotRes = res;
  slotStatus = status;
  slotBody = body;
  slotHeaderName = headerName;
  slotHeaderValue = headerValue;
  slotClose = closeConnection;
  res.cork(writeCorked);
  slotRes = null;
  slotBody = '';
}

/** 200 with a wrapped answer: the rendered head, then the tail of this user (see tail.ts). */
export function sendWrapped(res: HttpResponse, head: Uint8Array, uid: number, mod: number, seg: Uint8Array, closeConnection: boolean): void {
  slotRes = res;
  slotBody = head;
  slotUid = uid;
  slotMod = mod;
  slotSeg = seg;
  slotClose = closeConnection;
  res.cork(writeWrappedCorked);
  slotRes = null;
  slotBody = '';
  slotSeg = EMPTY_BYTES;
}

export function sendError(res: HttpResponse, err: ErrorResponse, closeConnection: boolean): void {
  send(res, err.statusLine, err.body, '', '', closeConnection);
}

/** 503 with Retry-After: the pool queue is full. Prebuilt: overload is exactly when cost matters most. */
const OVERLOADED = errorResponse('overloaded', 'the server is at capacity; retry shortly');
export function sendOverloaded(res: HttpResponse, closeConnection: boolean): void {
  send(res, OVERLOADED.statusLine, OVERLOADED.body, 'retry-after', '1', closeConnection);
}
