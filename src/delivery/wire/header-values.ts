/**
 * The status lines and header values answers are written with, built once as bytes.
 */
import { EMPTY_BYTES } from './tail.js';

export const JSON_TYPE = 'application/json';
export const STATUS_OK = '200 OK';
export const STATUS_NOT_MODIFIED = '304 Not Modified';
export const STATUS_NO_CONTENT = '204 No Content';

/** A header value as the bytes uWS reads in place. */
export function bytes(text: string): Buffer {
  return Buffer.from(text, 'latin1');
}

// Header values as bytes (the names: header-names.ts): uWS reads a byte array in place, while a string
// argument is UTF-8-encoded into a fresh native allocation on every call (v8::String::Utf8Value).
export const JSON_TYPE_BYTES = bytes(JSON_TYPE);
export const EXPOSED = bytes('ETag, X-Missing-Content, Retry-After');
export const ALLOWED_METHODS = bytes('GET, POST');
// Authorization: OFREP providers may send the key as a bearer token (docs/openfeature.md).
export const ALLOWED_HEADERS = bytes('X-Api-Key, Authorization, Content-Type, If-None-Match, Last-Event-ID');
/** Preflight answers are cached by the browser this long (Chromium caps it at 7,200 s). */
export const PREFLIGHT_MAX_AGE = bytes('600');
export const ALLOW_PREFLIGHT = bytes('GET, POST, OPTIONS');
export const H_ORIGIN_VARY = bytes('origin');
export const CODING_NAMES = [EMPTY_BYTES, bytes('gzip'), bytes('br')];

/** Same for every user of a key: any cache may keep it, revalidating on every use. */
export const CC_SHARED = bytes('no-cache');
/** Personalised (carries the user's uid): only the user's own cache may keep it. */
export const CC_PRIVATE = bytes('private, no-cache');
export const CC_NO_STORE = bytes('no-store');
