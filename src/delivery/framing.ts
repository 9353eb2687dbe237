/**
 * RFC 9112 6.3: two Content-Length headers, or Content-Length beside Transfer-Encoding, leave the
 * body's end ambiguous; uWS takes the first and parses the rest as the next request, which a proxy
 * that took the other length would not see (request smuggling). uWS exposes duplicate headers only
 * through forEach: ~1 µs a request with eight headers, 5-10% of mapped throughput with both servers
 * loaded at once (bench:ab). Used by the delivery routes (routes.ts) and by the benchmark's floor
 * (bench/ceiling.ts), which must pay exactly this check.
 *
 * HOT PATH: change with care (every request of every route, unless --reject-ambiguous-framing false).
 */
import type { HttpRequest } from 'uWebSockets.js';

// Counted by countFramingHeader over one request's headers (uWS calls back synchronously).
let contentLengthCount = 0;
let transferEncodingCount = 0;

function countFramingHeader(name: string): void {
  if (name === 'content-length') contentLengthCount++;
  else if (name === 'transfer-encoding') transferEncodingCount++;
}

/** True when the request's framing is ambiguous (read synchronously, while `req` is valid). */
export function hasAmbiguousFraming(req: HttpRequest): boolean {
  contentLengthCount = 0;
  transferEncodingCount = 0;
  req.forEach(countFramingHeader);
  return contentLengthCount > 1 || (contentLengthCount === 1 && transferEncodingCount > 0);
}
