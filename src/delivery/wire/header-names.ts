/**
 * The header names the delivery routes read and write, as bytes, every one a view of one buffer.
 *
 * uWS reads a byte array in place where a string argument is UTF-8-encoded into a fresh native
 * allocation on every call (header-values.ts). For each typed array it is given it takes the array's
 * backing store (v8::ArrayBuffer::GetBackingStore: the buffer's extension and its reference count, up
 * and down): names that share one ArrayBuffer share those few cache lines, where names made one by
 * one sit in Node's buffer pools of whichever module made them.
 *
 * HOT PATH: every content request reads through these.
 */

const NAMES = [
  'x-api-key',
  'authorization',
  'content-type',
  'content-length',
  'transfer-encoding',
  'if-none-match',
  'accept-encoding',
  'origin',
  'last-event-id',
  'etag',
  'cache-control',
  'vary',
  'content-encoding',
  'retry-after',
  'allow',
  'connection',
  'access-control-allow-origin',
  'access-control-expose-headers',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
  'x-accel-buffering',
] as const;

type HeaderName = (typeof NAMES)[number];

const JOINED = NAMES.join('');
// Its own ArrayBuffer (not a slice of Node's shared pool, which other buffers come and go in).
const STORE = Buffer.allocUnsafeSlow(JOINED.length);
STORE.write(JOINED, 0, 'latin1');
const VIEWS = new Map<HeaderName, Uint8Array>();
{
  let at = 0;
  for (const name of NAMES) {
    VIEWS.set(name, new Uint8Array(STORE.buffer, STORE.byteOffset + at, name.length));
    at += name.length;
  }
}

function named(name: HeaderName): Uint8Array {
  return VIEWS.get(name)!;
}

export const H_API_KEY = named('x-api-key');
export const H_AUTHORIZATION = named('authorization');
export const H_CONTENT_TYPE = named('content-type');
export const H_CONTENT_LENGTH = named('content-length');
export const H_TRANSFER_ENCODING = named('transfer-encoding');
export const H_IF_NONE_MATCH = named('if-none-match');
export const H_ACCEPT_ENCODING = named('accept-encoding');
export const H_ORIGIN = named('origin');
export const H_LAST_EVENT_ID = named('last-event-id');
export const H_ETAG = named('etag');
export const H_CACHE_CONTROL = named('cache-control');
export const H_VARY = named('vary');
export const H_CONTENT_ENCODING = named('content-encoding');
export const H_RETRY_AFTER = named('retry-after');
export const H_ALLOW = named('allow');
export const H_CONNECTION = named('connection');
export const H_ALLOW_ORIGIN = named('access-control-allow-origin');
export const H_EXPOSE_HEADERS = named('access-control-expose-headers');
export const H_ALLOW_METHODS = named('access-control-allow-methods');
export const H_ALLOW_HEADERS = named('access-control-allow-headers');
export const H_MAX_AGE = named('access-control-max-age');
export const H_ACCEL_BUFFERING = named('x-accel-buffering');
