/**
 * Query-string rules of the content endpoints. Parsed only when a query is present: most
 * requests have none, and those pay nothing here.
 */
import { RcdError } from '../runtime/errors.js';
import { JobKind } from '../pool/protocol.js';

/** Endpoint 1: responseType=serialized or nothing. Case sensitive by contract. */
export function wrappedKind(query: string): JobKind {
  if (query === '') return JobKind.Wrapped;
  const rt = new URLSearchParams(query).get('responseType');
  if (rt === null) return JobKind.Wrapped;
  if (rt === 'serialized') return JobKind.Serialized;
  throw new RcdError('invalid_query', 'responseType must be "serialized" (case sensitive) or absent');
}

/** Endpoint 2 has no options; responseType there is a client mistake worth telling about. */
export function checkPlainQuery(query: string): void {
  if (query === '') return;
  if (new URLSearchParams(query).has('responseType')) {
    throw new RcdError('invalid_query', 'responseType applies to /api/v1/config/:contentId/dynamic only');
  }
}

export interface CombineQuery {
  /** Ids as the caller wrote them, duplicates removed (first occurrence kept). */
  ids: string[];
  kind: JobKind;
}

export function parseCombineQuery(query: string, maxIds: number): CombineQuery {
  const params = new URLSearchParams(query);
  const c = params.get('c');
  if (c === null) throw new RcdError('invalid_query', 'c is required: a JSON array of content ids, e.g. c=["a","b"]');
  let list: unknown;
  try {
    list = JSON.parse(c);
  } catch {
    throw new RcdError('invalid_query', 'c must be a URL-encoded JSON array of content ids');
  }
  if (!Array.isArray(list) || list.length === 0) {
    throw new RcdError('invalid_query', 'c must be a non-empty JSON array of content ids');
  }
  if (list.length > maxIds) throw new RcdError('invalid_query', `c may hold at most ${maxIds} ids`);
  const seen = new Set<string>();
  const ids: string[] = [];
  for (const id of list) {
    if (typeof id !== 'string' || id.length === 0) {
      throw new RcdError('invalid_query', 'every id in c must be a non-empty string');
    }
    // A lone surrogate (JSON allows "\ud800") can be neither looked up nor written back in the
    // X-Missing-Content header (encodeURIComponent throws on it).
    if (!id.isWellFormed()) throw new RcdError('invalid_query', 'every id in c must be well-formed Unicode (no lone surrogates)');
    if (!seen.has(id)) {
      seen.add(id);
      ids.push(id);
    }
  }
  const dynamic = params.get('dynamic');
  if (dynamic !== null && dynamic !== 'true' && dynamic !== 'false') {
    throw new RcdError('invalid_query', 'dynamic must be true or false');
  }
  const rt = params.get('responseType');
  if (rt !== null && rt !== 'serialized') {
    throw new RcdError('invalid_query', 'responseType must be "serialized" (case sensitive) or absent');
  }
  const isDynamic = dynamic === 'true';
  if (rt !== null && !isDynamic) {
    throw new RcdError('invalid_query', 'responseType=serialized requires dynamic=true');
  }
  return { ids, kind: !isDynamic ? JobKind.Plain : rt === null ? JobKind.Wrapped : JobKind.Serialized };
}
