/**
 * Query-string rules of the content endpoints. Parsed only when a query is present: most
 * requests have none, and those pay nothing here.
 */
import { RcdError } from '../runtime/errors.js';
import { JobKind } from '../pool/protocol.js';
import { contentIdKey } from '../store/ids.js';

const SERIALIZED_QUERY = 'responseType=serialized';

/** Endpoint 1: responseType=serialized or nothing. Case sensitive by contract. */
export function wrappedKind(query: string): JobKind {
  // A length test, not `=== ''`: TurboFan compares a string it did not make through a builtin call.
  if (query.length === 0) return JobKind.Wrapped;
  // The one query clients send here, spelled as URLSearchParams would read it: no parse.
  if (query === SERIALIZED_QUERY) return JobKind.Serialized;
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

/** One id of a compiled combine query, with everything an answer needs of it prepared once. */
export interface CombineEntry {
  /** As the caller wrote it. */
  readonly id: string;
  /** Its directory lookup key (contentIdKey). */
  readonly lookup: string;
  /** Its part of the answer's tag description, before the item's own tag (ContentRequest's tag). */
  readonly tagPrefix: string;
  /** `{"id":` as the answer's first entry, `,"id":` after it: UTF-8 bytes. */
  readonly firstKey: Buffer;
  readonly nextKey: Buffer;
}

export interface CompiledCombineQuery extends CombineQuery {
  readonly entries: readonly CombineEntry[];
  /** The id limit it was checked against (a hit under another limit parses again). */
  readonly maxIds: number;
  /**
   * Its combine-plan keys by app-version key, each with the plan found under it, and the number they
   * start with (combine-plan.ts planMemoOf, whose PlanKeyMemo the values are: opaque here, so that
   * queries need not know plans): null until a plan is first looked up.
   */
  planKeys: Map<string, unknown> | null;
  planId: number;
}

/**
 * Distinct combine queries compiled per delivery loop. A game build sends the same few queries
 * (its id list) millions of times, so each is parsed once (URLSearchParams, JSON.parse, per-id keys
 * prepared as bytes). Bounded by ids held (~300 bytes each, so ~5 MiB per loop at most): full, the
 * memo starts over, and a client cycling through more distinct queries pays the parse each time, as
 * it would without the memo.
 */
const COMPILED_IDS_MAX = 16_384;

/** What compiledCombineQuery keeps between its calls. */
interface CompiledQueries {
  /** The last query compiled or found, checked first, and what it compiled to (null before the first). */
  lastQuery: string;
  last: CompiledCombineQuery | null;
  readonly byQuery: Map<string, CompiledCombineQuery>;
  /** Ids held by byQuery's entries (the bound above). */
  ids: number;
}

// Owned by compiledCombineQuery, for its next calls. The last query is checked first: the query
// string is new on every request, and a Map lookup hashes all of it (a long id list), while
// comparing it with the last one is a memcmp and a game build sends one query.
const compiledQueries: CompiledQueries = { lastQuery: '', last: null, byQuery: new Map(), ids: 0 };

/** parseCombineQuery with each id's keys prepared, memoized by the query string (invalid ones are not kept). */
export function compiledCombineQuery(query: string, maxIds: number): CompiledCombineQuery {
  const memo = compiledQueries;
  const last = memo.last;
  if (last !== null && last.maxIds === maxIds && query.length === memo.lastQuery.length && query === memo.lastQuery) return last;
  const known = memo.byQuery.get(query);
  if (known !== undefined && known.maxIds === maxIds) {
    memo.lastQuery = query;
    memo.last = known;
    return known;
  }
  const q = parseCombineQuery(query, maxIds);
  const entries: CombineEntry[] = [];
  for (const id of q.ids) {
    const json = JSON.stringify(id);
    entries.push({
      id,
      lookup: contentIdKey(id),
      tagPrefix: '|' + id.length + ':' + id + '=',
      firstKey: Buffer.from('{' + json + ':', 'utf8'),
      nextKey: Buffer.from(',' + json + ':', 'utf8'),
    });
  }
  const compiled: CompiledCombineQuery = { ids: q.ids, kind: q.kind, entries, maxIds, planKeys: null, planId: 0 };
  if (memo.ids + entries.length > COMPILED_IDS_MAX) {
    memo.byQuery.clear();
    memo.ids = 0;
  }
  memo.byQuery.set(query, compiled);
  memo.ids += entries.length;
  memo.lastQuery = query;
  memo.last = compiled;
  return compiled;
}
