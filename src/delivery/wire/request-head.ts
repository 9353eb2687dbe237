/**
 * The request head as the delivery routes read it: the header values they use and the framing check,
 * taken in one pass over uWS's header list.
 *
 * Framing (RFC 9112 6.3): two Content-Length headers, or Content-Length beside Transfer-Encoding,
 * leave the body's end ambiguous; uWS takes the first and parses the rest as the next request, which
 * a proxy that took the other length would not see (request smuggling). uWS exposes duplicate headers
 * only through forEach, which makes a string of every header's name and value. The values the routes
 * need are among them, so they are kept from that pass instead of asked for again with getHeader
 * (a native call, the name handed over and the value made a second time, per header).
 * With --reject-ambiguous-framing false the values come from getHeader, the cheaper way when nothing
 * needs every header: forEach makes two strings and a call into JavaScript per header.
 *
 * A value is the first header of its name, "" when absent (what getHeader answers). The head is one
 * object per thread, valid until the next read: uWS calls forEach's callback synchronously, and a
 * route handler copies what it keeps before it returns. Used by the delivery routes (routes.ts,
 * ofrep/routes.ts) and by the benchmark's floor (bench/ceiling.ts), which must pay exactly this read.
 *
 * HOT PATH: change with care (every request of every route).
 */
import type { HttpRequest } from 'uWebSockets.js';
import { H_ACCEPT_ENCODING, H_API_KEY, H_AUTHORIZATION, H_CONTENT_LENGTH, H_CONTENT_TYPE, H_IF_NONE_MATCH, H_ORIGIN, H_TRANSFER_ENCODING } from './header-names.js';

export interface RequestHead {
  apiKey: string;
  /** "" when X-Api-Key came and the head was read with getHeader. */
  authorization: string;
  contentType: string;
  /** "" when the head was read with getHeader without WANT_LENGTH. */
  contentLength: string;
  /** "" when Content-Length came and the head was read with getHeader. */
  transferEncoding: string;
  ifNoneMatch: string;
  acceptEncoding: string;
  /** "" when the head was read with getHeader without WANT_ORIGIN. */
  origin: string;
  /** How many Content-Length and Transfer-Encoding headers came (0 or 1 each unless read by forEach). */
  contentLengths: number;
  transferEncodings: number;
  /** Read by forEach: every header seen, the counts exact. */
  whole: boolean;
}

const head: RequestHead = {
  apiKey: '',
  authorization: '',
  contentType: '',
  contentLength: '',
  transferEncoding: '',
  ifNoneMatch: '',
  acceptEncoding: '',
  origin: '',
  contentLengths: 0,
  transferEncodings: 0,
  whole: false,
};

// Names already taken in this pass (a later header of the same name does not replace the first).
const SEEN_API_KEY = 1;
const SEEN_AUTHORIZATION = 2;
const SEEN_CONTENT_TYPE = 4;
const SEEN_IF_NONE_MATCH = 8;
const SEEN_ACCEPT_ENCODING = 16;
const SEEN_ORIGIN = 32;
let seen = 0;

/**
 * forEach's callback. uWS hands names in lower case. Sorted by length first: most headers a client
 * sends (host, user-agent, accept, connection) fail that one comparison.
 */
function takeHeader(name: string, value: string): void {
  switch (name.length) {
    case 6:
      if (name === 'origin' && (seen & SEEN_ORIGIN) === 0) {
        seen |= SEEN_ORIGIN;
        head.origin = value;
      }
      return;
    case 9:
      if (name === 'x-api-key' && (seen & SEEN_API_KEY) === 0) {
        seen |= SEEN_API_KEY;
        head.apiKey = value;
      }
      return;
    case 12:
      if (name === 'content-type' && (seen & SEEN_CONTENT_TYPE) === 0) {
        seen |= SEEN_CONTENT_TYPE;
        head.contentType = value;
      }
      return;
    case 13:
      if (name === 'if-none-match') {
        if ((seen & SEEN_IF_NONE_MATCH) === 0) {
          seen |= SEEN_IF_NONE_MATCH;
          head.ifNoneMatch = value;
        }
      } else if (name === 'authorization' && (seen & SEEN_AUTHORIZATION) === 0) {
        seen |= SEEN_AUTHORIZATION;
        head.authorization = value;
      }
      return;
    case 14:
      if (name === 'content-length') {
        if (head.contentLengths++ === 0) head.contentLength = value;
      }
      return;
    case 15:
      if (name === 'accept-encoding' && (seen & SEEN_ACCEPT_ENCODING) === 0) {
        seen |= SEEN_ACCEPT_ENCODING;
        head.acceptEncoding = value;
      }
      return;
    case 17:
      if (name === 'transfer-encoding') {
        if (head.transferEncodings++ === 0) head.transferEncoding = value;
      }
      return;
    default:
      return;
  }
}

/** readHead's `wants` (values only read by getHeader when wanted): Origin, for CORS with a list of origins. */
export const WANT_ORIGIN = 1;
/** readHead's `wants`: Content-Length and Transfer-Encoding, for a route that reads a body. */
export const WANT_LENGTH = 2;

/**
 * The head of `req` (read synchronously, while `req` is valid). `everyHeader`: walk the whole list
 * (forEach), so that the framing counts are exact; every value is taken then. Otherwise each value
 * is read with getHeader, only where a route can use it: X-Api-Key, Content-Type, If-None-Match and
 * Accept-Encoding always, Authorization when there is no X-Api-Key, Origin and the body's length as
 * `wants` says (WANT_ORIGIN, WANT_LENGTH), Transfer-Encoding only when there is no Content-Length; a
 * count is then 1 when its header is present.
 */
export function readHead(req: HttpRequest, everyHeader: boolean, wants: number): RequestHead {
  const h = head;
  if (everyHeader) {
    h.apiKey = '';
    h.authorization = '';
    h.contentType = '';
    h.contentLength = '';
    h.transferEncoding = '';
    h.ifNoneMatch = '';
    h.acceptEncoding = '';
    h.origin = '';
    h.contentLengths = 0;
    h.transferEncodings = 0;
    h.whole = true;
    seen = 0;
    req.forEach(takeHeader);
    return h;
  }
  h.apiKey = req.getHeader(H_API_KEY);
  h.authorization = h.apiKey === '' ? req.getHeader(H_AUTHORIZATION) : '';
  h.contentType = req.getHeader(H_CONTENT_TYPE);
  const length = (wants & WANT_LENGTH) !== 0;
  h.contentLength = length ? req.getHeader(H_CONTENT_LENGTH) : '';
  h.transferEncoding = length && h.contentLength === '' ? req.getHeader(H_TRANSFER_ENCODING) : '';
  h.ifNoneMatch = req.getHeader(H_IF_NONE_MATCH);
  h.acceptEncoding = req.getHeader(H_ACCEPT_ENCODING);
  h.origin = (wants & WANT_ORIGIN) !== 0 ? req.getHeader(H_ORIGIN) : '';
  h.contentLengths = h.contentLength === '' ? 0 : 1;
  h.transferEncodings = h.transferEncoding === '' ? 0 : 1;
  h.whole = false;
  return h;
}

/** True when the head's framing is ambiguous (exact only for a head read with everyHeader). */
export function hasAmbiguousFraming(h: RequestHead): boolean {
  return h.contentLengths > 1 || (h.contentLengths === 1 && h.transferEncodings > 0);
}

/**
 * True when the body is exactly the one Content-Length the head declares: a head read whole with
 * one Content-Length and no Transfer-Encoding. uWS then reads no more than that, and a route that
 * checked the declared length against --max-body need not count the body as it comes (lifecycle.ts).
 * A head read by getHeader says only that a Content-Length came, so such a body is counted.
 */
export function declaresBodyLength(h: RequestHead): boolean {
  return h.whole && h.contentLengths === 1 && h.transferEncodings === 0;
}
