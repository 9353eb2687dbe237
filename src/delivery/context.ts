/**
 * The user context (request body of content requests): u, p, v.
 *
 * Two definitions of one contract:
 * - `userContextSchema` (zod, in src/openapi/schemas.ts) is the readable statement, used by tests
 *   and the OpenAPI documents; it lives there so that no delivery thread loads zod (slow module
 *   loading at every start);
 * - `parseUserContext` is the hand-written hot-path check, faster than the zod parse on typical
 *   bodies (bench/micro); a unit test checks both agree on every case.
 *
 * HOT PATH: called once per content request. Change with care: keep it allocation-light and
 * keep the result object's fields in one order.
 */
import { RcdError } from '../runtime/errors.js';
import { NO_VERSION, comparableVersionOf, parseAppVersion, type ComparableVersion } from '../shared/app-version.js';
import { bodyJson } from './body.js';
import { MAX_JSON_DEPTH, exceedsDepth } from '../shared/json-limits.js';

export interface UserContext {
  u: string;
  p: Record<string, unknown>;
  /** As sent, "" when absent. */
  v: string;
  /** v's comparable forms (app-version.ts), NO_VERSION when absent. */
  version: ComparableVersion;
}

export const EMPTY_BODY = 'the request body is empty; send a JSON object such as {"u":"","p":{}}';

/** Parses and validates a body; throws RcdError invalid_json / invalid_body. */
export function parseUserContext(text: string): UserContext {
  return validateUserContext(bodyJson(text, EMPTY_BODY), text.length);
}

/**
 * How deeply `p` may nest (p itself is the first level): everything that walks it (conditions, deep
 * equality) then has a bounded stack. Far past what the spec's attributes ("numbers, strings, arrays
 * of strings and similar JSON values") need.
 */
export const MAX_P_DEPTH = MAX_JSON_DEPTH;
/**
 * A body shorter than this cannot nest p deeper than MAX_P_DEPTH (that takes MAX_P_DEPTH + 2
 * brackets open and as many closed, the body's own included): most bodies skip the walk for one
 * comparison.
 */
const DEPTH_WALK_FROM = 2 * (MAX_P_DEPTH + 2);

/**
 * Throws invalid_body (with `message`) when p nests deeper than MAX_P_DEPTH. `bodyLength`: the
 * characters of the body p was parsed from (unknown: Infinity, p is walked).
 */
export function checkDepthOfP(p: Record<string, unknown>, bodyLength: number, message: string): void {
  if (bodyLength >= DEPTH_WALK_FROM && exceedsDepth(p, MAX_P_DEPTH)) throw new RcdError('invalid_body', message);
}

const P_TOO_DEEP = `p must not nest deeper than ${MAX_P_DEPTH} levels of arrays and objects`;

/** The user context of a parsed body; `bodyLength` as checkDepthOfP's. Throws invalid_body. */
export function validateUserContext(root: unknown, bodyLength = Infinity): UserContext {
  if (typeof root !== 'object' || root === null || Array.isArray(root)) {
    throw new RcdError('invalid_body', 'the request body must be a JSON object');
  }
  const body = root as Record<string, unknown>;
  const u = body.u;
  const p = body.p;
  const v = body.v;
  let uOut = '';
  if (u !== undefined) {
    if (typeof u !== 'string') throw new RcdError('invalid_body', 'u must be a string');
    uOut = u;
  }
  let pOut: Record<string, unknown> = EMPTY_P;
  if (p !== undefined) {
    if (typeof p !== 'object' || p === null || Array.isArray(p)) {
      throw new RcdError('invalid_body', 'p must be a JSON object');
    }
    pOut = p as Record<string, unknown>;
    checkDepthOfP(pOut, bodyLength, P_TOO_DEEP);
  }
  let vOut = '';
  let version = NO_VERSION;
  if (v !== undefined) {
    if (typeof v !== 'string') throw new RcdError('invalid_body', 'v must be a string of the form X.Y.Z');
    vOut = v;
    version = appVersionOf(v);
  }
  return { u: uOut, p: pOut, v: vOut, version };
}

// Clients in the field run a handful of app versions: each is matched against the pattern and keyed
// once (no match array and strings of garbage per request), and a request of
// that version shares its ComparableVersion. Bounded: past the limit (a client inventing versions)
// versions are matched per request.
const VERSION_MEMO_LIMIT = 1024;
const versionMemo = new Map<string, ComparableVersion>();

/** The comparable forms of a request's `v`; throws RcdError invalid_body when it is not X.Y.Z. */
export function appVersionOf(v: string): ComparableVersion {
  let version = versionMemo.get(v);
  if (version !== undefined) return version;
  const parts = parseAppVersion(v);
  if (parts === null) throw new RcdError('invalid_body', 'v must be a string of the form X.Y.Z (e.g. "1.4.2")');
  version = comparableVersionOf(parts[0], parts[1], parts[2]);
  if (versionMemo.size < VERSION_MEMO_LIMIT) versionMemo.set(v, version);
  return version;
}

// Shared, frozen: a body without p gets this one object instead of a fresh {} per request.
const EMPTY_P: Record<string, unknown> = Object.freeze({});
