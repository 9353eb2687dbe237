/**
 * Path matching for the admin API: a route is a method plus a pattern of literal and `:param`
 * segments under /admin/v1. Patterns are split once at start; a request walks the table (a few
 * dozen entries, off the hot path, so a linear scan beats anything cleverer in clarity).
 */
import { RcdError } from '../../runtime/errors.js';

export const ADMIN_PREFIX = '/admin/v1/';

export interface Route<H> {
  readonly method: string;
  readonly pattern: string;
  readonly handler: H;
}

interface CompiledRoute<H> {
  readonly method: string;
  readonly segments: readonly string[];
  readonly handler: H;
}

export interface RouteMatch<H> {
  readonly handler: H;
  /** Decoded `:param` values in pattern order. */
  readonly params: readonly string[];
}

export interface Router<H> {
  /** The handler and params, or throws not_found / method_not_allowed (with the allowed methods in details). */
  match(method: string, pathname: string): RouteMatch<H>;
}

export function compileRouter<H>(routes: readonly Route<H>[]): Router<H> {
  const compiled: CompiledRoute<H>[] = routes.map((r) => ({
    method: r.method,
    segments: r.pattern.split('/').filter((s) => s !== ''),
    handler: r.handler,
  }));
  return {
    match(method: string, pathname: string): RouteMatch<H> {
      if (!pathname.startsWith(ADMIN_PREFIX)) throw new RcdError('not_found', `no admin route ${pathname}`);
      const parts = pathname.slice(ADMIN_PREFIX.length).split('/');
      // One trailing slash is tolerated, as on the delivery API.
      if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop();
      const allowed: string[] = [];
      for (const route of compiled) {
        const params = matchSegments(route.segments, parts);
        if (params === null) continue;
        if (route.method === method) return { handler: route.handler, params };
        allowed.push(route.method);
      }
      if (allowed.length > 0) {
        throw new RcdError('method_not_allowed', `${method} is not allowed on ${pathname}`, { allow: allowed });
      }
      throw new RcdError('not_found', `no admin route ${pathname}`);
    },
  };
}

function matchSegments(pattern: readonly string[], parts: readonly string[]): string[] | null {
  if (pattern.length !== parts.length) return null;
  const params: string[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i] as string;
    const got = parts[i] as string;
    if (want.startsWith(':')) {
      if (got === '') return null;
      params.push(decodeSegment(got));
    } else if (want !== got) {
      return null;
    }
  }
  return params;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new RcdError('invalid_request', `malformed percent-encoding in path segment "${segment}"`);
  }
}
