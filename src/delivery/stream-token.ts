/**
 * Stream tokens: how a browser authenticates an event stream. EventSource cannot send headers, so the
 * page asks for a token with its key (`POST /api/v1/env/events/token`, X-Api-Key) and opens
 * `/api/v1/env/events?token=…`. The key itself never goes into a URL, where proxies and access logs
 * would keep it.
 *
 * A token is `<key id>.<expiry, unix seconds>.<HMAC-SHA256 over both, base64url>`, keyed with the
 * key's SHA-256 digest. Every node of a store holds every key's digest (its routing data), so any node
 * checks a token minted by another, with no shared secret and no state; only someone who holds the
 * key (or the store) can mint one. Revoking the key invalidates its tokens at once (the id no longer
 * resolves). Trade-off: a token that leaked (a logged URL) opens streams, and only streams, of that
 * environment until it expires (--stream-token-ttl); it cannot fetch content.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Directory, KeyView } from './directory.js';

function signature(digest: string, payload: string): Buffer {
  return createHmac('sha256', digest).update(payload).digest();
}

export function mintStreamToken(keyId: string, digest: string, nowMs: number, ttlS: number): string {
  const payload = keyId + '.' + (Math.floor(nowMs / 1000) + ttlS);
  return payload + '.' + signature(digest, payload).toString('base64url');
}

/** The key a token stands for, or undefined when it is malformed, expired, forged or its key revoked. */
export function verifyStreamToken(directory: Directory, token: string, nowMs: number): KeyView | undefined {
  const lastDot = token.lastIndexOf('.');
  const firstDot = token.indexOf('.');
  if (firstDot <= 0 || lastDot <= firstDot) return undefined;
  const payload = token.slice(0, lastDot);
  const expiry = Number(payload.slice(firstDot + 1));
  if (!Number.isSafeInteger(expiry) || expiry * 1000 <= nowMs) return undefined;
  const key = directory.keyById(payload.slice(0, firstDot));
  if (key === undefined) return undefined;
  const given = Buffer.from(token.slice(lastDot + 1), 'base64url');
  const expected = signature(key.digest, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  return key.view;
}
