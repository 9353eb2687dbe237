/**
 * What the operator's configuration makes of every request's framing and body and of every answer's
 * headers, compiled once at start: the framing check (--reject-ambiguous-framing), the body limit
 * (--max-body), CORS (--cors-origins), the Vary value, the compression threshold
 * (--compress-min-bytes). Header values are bytes for the reason given in wire/reply.ts.
 *
 * The two request limits are the configuration's values, kept here too because every content
 * request reads them beside the CORS fields: one object in as few cache lines as possible, where the
 * configuration's fields sit in two other lines of a larger one. The fields are in the order a
 * request reads them.
 *
 * CORS: with `*` every answer carries `Access-Control-Allow-Origin: *` (the API key travels in a
 * header, never in a cookie, so no credentials mode is needed); with a list, an answer to a request
 * whose Origin is on the list echoes that origin and `Vary` names Origin; an Origin not on the list
 * gets no CORS header and the browser keeps the answer from the page. Off (the default), nothing is
 * added and OPTIONS answers 405 as any other method a route does not take.
 */
import type { HttpRequest } from 'uWebSockets.js';
import type { ServeConfig } from '../runtime/config.js';
import { H_ORIGIN } from './wire/header-names.js';

export interface HttpPolicy {
  /** --reject-ambiguous-framing (routes.ts headOf). */
  readonly rejectAmbiguousFraming: boolean;
  /** --max-body in bytes (routes.ts, lifecycle.ts). */
  readonly maxBodyBytes: number;
  readonly compressMinBytes: number;
  /** Vary of content and catalog answers. */
  readonly vary: Buffer;
  /** True when OPTIONS preflights are answered (CORS on). */
  readonly corsEnabled: boolean;
  /** The Access-Control-Allow-Origin value for any origin (`*`), or null. */
  readonly corsAny: Buffer | null;
  /** Allowed origins → their Access-Control-Allow-Origin value, or null. */
  readonly corsOrigins: ReadonlyMap<string, Buffer> | null;
}


export function compileHttpPolicy(config: ServeConfig): HttpPolicy {
  const list = config.corsOrigins !== null && config.corsOrigins !== '*' ? config.corsOrigins : null;
  return {
    rejectAmbiguousFraming: config.rejectAmbiguousFraming,
    corsAny: config.corsOrigins === '*' ? Buffer.from('*', 'latin1') : null,
    corsOrigins: list === null ? null : new Map(list.map((o) => [o, Buffer.from(o, 'latin1')])),
    maxBodyBytes: config.maxBodyBytes,
    vary: Buffer.from(list === null ? 'accept-encoding, x-api-key' : 'accept-encoding, x-api-key, origin', 'latin1'),
    corsEnabled: config.corsOrigins !== null,
    compressMinBytes: config.compressMinBytes,
  };
}

/** The Access-Control-Allow-Origin value for this request, or null (no CORS headers). Reads req synchronously. */
export function corsOriginOf(policy: HttpPolicy, req: HttpRequest): Uint8Array | null {
  if (policy.corsOrigins === null) return policy.corsAny;
  return corsOriginFor(policy, req.getHeader(H_ORIGIN));
}

/** The Access-Control-Allow-Origin value for a request whose Origin header is `origin` ("" when absent), or null. */
export function corsOriginFor(policy: HttpPolicy, origin: string): Uint8Array | null {
  if (policy.corsAny !== null) return policy.corsAny;
  if (policy.corsOrigins === null) return null;
  return policy.corsOrigins.get(origin) ?? null;
}
