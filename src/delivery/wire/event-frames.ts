/**
 * Writing an event stream (server-sent events, src/delivery/events.ts): its head and first frame, one
 * frame, its end. Each write runs inside res.cork, so uWS sends it in one syscall; cork's callback
 * takes no arguments, so they travel through the slots below (no closure per write), written just
 * before res.cork, read inside it and cleared after (reply.ts does the same for answers).
 */
import type { HttpResponse } from 'uWebSockets.js';
import { H_ACCEL_BUFFERING, H_ALLOW_ORIGIN, H_CACHE_CONTROL, H_CONTENT_TYPE } from './header-names.js';

/** EventSource's reconnection delay (the `retry:` field), ms. */
const RECONNECT_MS = 3000;

const EVENT_STREAM = Buffer.from('text/event-stream', 'latin1');
const NO_STORE = Buffer.from('no-store', 'latin1');
// X-Accel-Buffering: no. nginx buffers proxied answers unless told not to; an event stream must go out
// as it is written.
const NO = Buffer.from('no', 'latin1');
const OPENING = Buffer.from(`retry: ${RECONNECT_MS}\n\n`, 'latin1');
const NO_FRAME = new Uint8Array(0);

let slotRes: HttpResponse | null = null;
let slotFrame: Uint8Array = NO_FRAME;
let slotOrigin: Uint8Array | null = null;
/** What the corked write answered: false when uWS kept the frame back (backpressure). */
let slotWritten = false;

function writeOpeningCorked(): void {
  const res = slotRes!;
  res.writeHeader(H_CONTENT_TYPE, EVENT_STREAM);
  res.writeHeader(H_CACHE_CONTROL, NO_STORE);
  res.writeHeader(H_ACCEL_BUFFERING, NO);
  if (slotOrigin !== null) res.writeHeader(H_ALLOW_ORIGIN, slotOrigin);
  res.write(OPENING);
  slotWritten = res.write(slotFrame);
}

function writeFrameCorked(): void {
  slotWritten = slotRes!.write(slotFrame);
}

function endCorked(): void {
  slotRes!.end();
}

/**
 * A stream's head (200, text/event-stream, no-store, unbuffered, the CORS origin when one is allowed),
 * the reconnection delay, then `frame`: the events it missed and its first one.
 */
export function writeStreamOpening(res: HttpResponse, origin: Uint8Array | null, frame: Uint8Array): void {
  slotRes = res;
  slotOrigin = origin;
  slotFrame = frame;
  res.cork(writeOpeningCorked);
  slotRes = null;
  slotOrigin = null;
  slotFrame = NO_FRAME;
}

/** One frame to an open stream. False when uWS could not send it all now (the socket has not drained). */
export function writeStreamFrame(res: HttpResponse, frame: Uint8Array): boolean {
  slotRes = res;
  slotFrame = frame;
  res.cork(writeFrameCorked);
  slotRes = null;
  slotFrame = NO_FRAME;
  return slotWritten;
}

/** Ends a stream. */
export function endStream(res: HttpResponse): void {
  slotRes = res;
  res.cork(endCorked);
  slotRes = null;
}
