/**
 * The error answers of the delivery routes: an error body as errors.ts built it, and the two 503s
 * that say when to come back (Retry-After), prebuilt: overload is exactly when cost matters most.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { errorResponse, type ErrorResponse } from '../../runtime/errors.js';
import { H_RETRY_AFTER } from './header-names.js';
import { bytes } from './header-values.js';
import { send } from './reply.js';

export function sendError(res: HttpResponse, err: ErrorResponse, closeConnection: boolean, origin: Uint8Array | null): number {
  return send(res, err.statusLine, err.body, '', '', closeConnection, origin);
}

/** 503 with Retry-After: the pool queue is full. */
const OVERLOADED = errorResponse('overloaded', 'the server is at capacity; retry shortly');
const RETRY_ONE = bytes('1');
export function sendOverloaded(res: HttpResponse, closeConnection: boolean, origin: Uint8Array | null): number {
  return send(res, OVERLOADED.statusLine, OVERLOADED.body, H_RETRY_AFTER, RETRY_ONE, closeConnection, origin);
}

/**
 * 503 `starting` with Retry-After, in place of an unknown key or content while the server has not
 * finished starting: the listener is up before `--import` and the demo seed are in (the store is
 * written only once the port is held), and until they are, "no such key" or "no such content" may
 * be wrong. Those are answers a client does not retry; this one it does.
 */
const STARTING = errorResponse('starting', 'the server is starting: its keys and content may not all be loaded yet; retry shortly');
export function sendStarting(res: HttpResponse, closeConnection: boolean, origin: Uint8Array | null): number {
  return send(res, STARTING.statusLine, STARTING.body, H_RETRY_AFTER, RETRY_ONE, closeConnection, origin);
}
