/**
 * The `eventStreams` member of an OFREP bulk evaluation (OFREP 0.3.0, ADR-0008): where the provider
 * hears about changes instead of polling. It names rcd's change stream in OFREP's event format,
 * authenticated by a stream token since EventSource sends no headers (the key never goes into a URL;
 * src/delivery/stream-token.ts):
 *
 *   "eventStreams":[{"type":"sse","endpoint":{"requestUri":"/api/v1/env/events?format=ofrep&token=…"}}]
 *
 * `endpoint.requestUri` without an origin: the provider joins it to the origin of its own base URL,
 * so the same answer is right behind any proxy or host name.
 *
 * The token is part of the answer, so it must not change per request, or no bulk answer would ever
 * be 304. Tokens are minted per window of --stream-token-ttl seconds and live two windows: within a
 * window every answer carries the same token (and the window is part of the answer's tag), and a
 * provider that holds an answer from an earlier window gets a new one, with a new token, before its
 * token can expire (a token is checked when a stream opens; an open stream outlives it).
 */
import type { FrontEndState } from '../state.js';
import { mintStreamToken } from '../stream-token.js';

interface Minted {
  readonly window: number;
  readonly member: Buffer;
}

/** Per key id: the member of the current window. Bounded: past it the memo starts over. */
const minted = new Map<string, Minted>();
const MINTED_LIMIT = 10_000;
const EMPTY = Buffer.alloc(0);

/** The token window now (whole windows of --stream-token-ttl since the epoch). */
export function streamWindow(state: FrontEndState, nowMs: number): number {
  return Math.floor(nowMs / 1000 / state.config.streamTokenTtlS);
}

/**
 * `,"eventStreams":[…]` for the key `keyId` in `window`, or nothing when change streams are off
 * (--max-streams 0) or the key was revoked meanwhile.
 */
export function eventStreamsMember(state: FrontEndState, keyId: string, window: number): Buffer {
  if (state.config.maxStreams === 0) return EMPTY;
  const known = minted.get(keyId);
  if (known !== undefined && known.window === window) return known.member;
  const key = state.directory.keyById(keyId);
  if (key === undefined) return EMPTY;
  const ttl = state.config.streamTokenTtlS;
  // Expires at the end of the next window: valid for one to two windows from now.
  const expiryS = (window + 2) * ttl;
  const token = mintStreamToken(keyId, key.digest, (expiryS - ttl) * 1000, ttl);
  const member = Buffer.from(`,"eventStreams":[{"type":"sse","endpoint":{"requestUri":"/api/v1/env/events?format=ofrep&token=${token}"}}]`, 'latin1');
  if (minted.size >= MINTED_LIMIT) minted.clear();
  minted.set(keyId, { window, member });
  return member;
}
