/**
 * What a combine request's query string comes to, parsed once per distinct query and reused.
 *
 * Clients of one game build send the same `c=[...]` list over and over. Parsing it per request
 * (URLSearchParams, percent-decoding, JSON.parse, the checks of query.ts, then a lookup key and a
 * JSON key per id) was ~4% of the main thread of a 10-id combine under wrk, more than rendering the
 * tag's hash (bench/README.md, "combine"). A query that is refused is not kept: it throws each time.
 *
 * Bounded: at most PLAN_MEMO_ENTRIES queries, each no longer than uWS's request-line limit; when
 * full, the memo is emptied and refills with what is sent next. A miss costs only the parse.
 */
import { contentIdKey } from '../store/ids.js';
import { parseCombineQuery, type CombineQuery } from './query.js';

export interface CombinePlan {
  readonly query: CombineQuery;
  /** contentIdKey of each id of query.ids (the directory's key). */
  readonly lookupKeys: readonly string[];
  /** UTF-8 bytes of `"<id>":` for each id of query.ids: the entry's key in the answer, without its `{` or `,`. */
  readonly entryKeys: readonly Buffer[];
}

const PLAN_MEMO_ENTRIES = 256;

const plans = new Map<string, CombinePlan>();
let plansMaxIds = -1;

/** The plan of a combine query string (throws RcdError invalid_query as parseCombineQuery does). */
export function combinePlanOf(queryString: string, maxIds: number): CombinePlan {
  if (maxIds !== plansMaxIds) {
    plans.clear();
    plansMaxIds = maxIds;
  }
  const known = plans.get(queryString);
  if (known !== undefined) return known;
  const query = parseCombineQuery(queryString, maxIds);
  const plan: CombinePlan = {
    query,
    lookupKeys: query.ids.map(contentIdKey),
    entryKeys: query.ids.map((id) => Buffer.from(JSON.stringify(id) + ':', 'utf8')),
  };
  if (plans.size >= PLAN_MEMO_ENTRIES) plans.clear();
  plans.set(queryString, plan);
  return plan;
}
