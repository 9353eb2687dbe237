/**
 * Writing responses. Everything written after the uWS handler returned (pool results, body chunks)
 * must be corked so uWS sends status, headers and body in one syscall.
 *
 * HOT PATH: cork takes a callback; to avoid allocating a closure per response, the arguments travel
 * through module-level slots that `writeCorked` reads. cork runs the callback synchronously, so the
 * slots cannot be overwritten in between.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { errorResponse, type ErrorResponse } from '../errors.js';

export const JSON_TYPE = 'application/json';
export const STATUS_OK = '200 OK';

let slotRes: HttpResponse | null = null;
let slotStatus = STATUS_OK;
let slotHead: Uint8Array | string = '';
let slotTail = '';
let slotHeaderName = '';
let slotHeaderValue = '';
let slotClose = false;

/**
 * Heads up to this size are joined with their tail into one buffer and sent with one end(): one
 * native call and a Content-Length. Larger heads are sent as write(head) + end(tail), which avoids
 * copying the body but makes uWS use chunked encoding.
 */
const JOIN_LIMIT = 64 * 1024;

function writeCorked(): void {
  const res = slotRes!;
  res.writeStatus(slotStatus);
  res.writeHeader('content-type', JSON_TYPE);
  if (slotHeaderName !== '') res.writeHeader(slotHeaderName, slotHeaderValue);
  if (slotTail === '') {
    res.end(slotHead, slotClose);
  } else if (slotClose || typeof slotHead === 'string' || slotHead.byteLength <= JOIN_LIMIT) {
    // Always joined when closing: uWS writes its Connection: close header at end(), which after a
    // write() would land inside the chunked body (found by the graceful-shutdown test).
    res.end(joinBody(slotHead, slotTail), slotClose);
  } else {
    res.write(slotHead);
    res.end(slotTail, false);
  }
}

function joinBody(head: Uint8Array | string, tail: string): Buffer {
  if (typeof head === 'string') return Buffer.from(head + tail, 'utf8');
  const out = Buffer.allocUnsafe(head.byteLength + Buffer.byteLength(tail, 'utf8'));
  out.set(head, 0);
  out.write(tail, head.byteLength, 'utf8');
  return out;
}

/** Status, JSON content type, optional extra header, body = head + tail. */
export function send(
  res: HttpResponse,
  status: string,
  head: Uint8Array | string,
  tail: string,
  headerName: string,
  headerValue: string,
  closeConnection: boolean,
): void {
  slotRes = res;
  slotStatus = status;
  slotHead = head;
  slotTail = tail;
  slotHeaderName = headerName;
  slotHeaderValue = headerValue;
  slotClose = closeConnection;
  res.cork(writeCorked);
  slotRes = null;
  slotHead = '';
}

export function sendError(res: HttpResponse, err: ErrorResponse, closeConnection: boolean): void {
  send(res, err.statusLine, err.body, '', '', '', closeConnection);
}

/** 503 with Retry-After: the pool queue is full. Prebuilt: overload is exactly when cost matters most. */
const OVERLOADED = errorResponse('overloaded', 'the server is at capacity; retry shortly');
export function sendOverloaded(res: HttpResponse, closeConnection: boolean): void {
  send(res, OVERLOADED.statusLine, OVERLOADED.body, '', 'retry-after', '1', closeConnection);
}
