/**
 * What rule evaluation produces: a Combination (the set of rules and variants that applied, interned
 * per mapping by interning.ts) and its Selection (the patches to render for one revision and the
 * `seg` to report). Every Combination is made by newCombination, so all share one object shape.
 */
import type { CompiledPatch } from '../patch/patch.js';

/**
 * What a request gets: the patches to render and the `seg` to report. The render cache is keyed by
 * (revision id, mapping id, key).
 */
export interface Selection {
  /** The applied choices, e.g. "0.-1;3.1;" (rule.variant, -1 for a patch rule); "" when nothing applies. */
  readonly key: string;
  /** The `seg` array as JSON, "[]" when nothing applies. */
  readonly seg: string;
  readonly patches: readonly CompiledPatch[];
  /** 1/0 per patch when some do not apply to the revision; null when all apply. */
  readonly applied: Uint8Array | null;
}

/** One front-cache key built from a combination (Combination.cacheKeys). */
export interface FrontKeyMemo {
  readonly rev: number;
  readonly mapping: number;
  readonly kind: number;
  readonly key: string;
  /**
   * The front cache's entry under `key` while the cache holds it, else null: set and cleared by
   * src/delivery/front-cache.ts (frontEntryOf, and the cache's dispose when it lets the entry go).
   */
  entry: KeyedEntry | null;
}

/** A front-cache entry as a FrontKeyMemo holds it: the one memo whose `entry` it is, or null. */
export interface KeyedEntry {
  memo: FrontKeyMemo | null;
}

/**
 * One set of rules/variants whose conditions matched, interned per mapping so that repeat
 * combinations allocate nothing.
 */
export interface Combination {
  readonly key: string;
  readonly patches: readonly CompiledPatch[];
  /** seg JSON per patch (same index). */
  readonly segEntries: readonly string[];
  /** True when a JSON Patch is involved: it may not apply to every revision (merge patches always do). */
  readonly mayFail: boolean;
  /** The selection when every patch applies. */
  readonly whole: Selection;
  /**
   * The front cache's key memo: the front-cache keys last built from this combination, each with
   * the (revision, mapping, kind) it was built for (at most FRONT_KEY_MEMO of them, oldest replaced
   * first). Read and written only by src/delivery/front-cache.ts (frontKeyOf); the mapping engine only
   * starts it empty.
   *
   * Why it lives on a mapping type: a combination is interned, so the same object comes back for
   * every request that selects it, and a field on it is the one place a per-combination value can be
   * reached with no lookup at all. Returning the same key string also keeps V8's cached hash, so the
   * cache lookup neither flattens nor hashes a fresh key, and nothing is allocated per request
   * (bench/micro/alloc.ts compares it with building the key). Several entries because a
   * combine holds several items of one mapping (one revision each) and selects one combination for
   * all of them: with one entry they replaced each other on every request. A WeakMap<Combination, key>
   * in the front cache would keep the types apart but add a hash lookup per item; a wrapper object
   * around each combination would need a second interning table. Neither buys a behaviour.
   */
  readonly cacheKeys: FrontKeyMemo[];
  cacheKeyNext: number;
  /**
   * The combination's part of an entity tag (its key, or a hash of a long key), memoized here for the
   * same reason as cacheKey; read and written only by src/delivery/etag.ts.
   */
  tagKey: string;
  /**
   * The last item tag built with this combination (etag.ts itemTag) and the (kind, revision id,
   * mapping) it was built for: a wrapped answer's tag is then this and the uid, with no number
   * formatted and four concatenations fewer per request. Read and written only by etag.ts.
   */
  itemTag: string;
  itemTagKind: number;
  itemTagRev: number;
  itemTagMapping: number;
  /**
   * The tags built before the last one, oldest replaced first: one combination serves every revision
   * of a content (clients of several app versions) and every item of its mapping, and with the last
   * tag alone they replaced each other. Read and written only by etag.ts, which knows their type.
   */
  readonly itemTags: object[];
  itemTagNext: number;
  /**
   * Combine plans' tag memo: for the last plans this combination answered for (its mapped items all
   * selecting it; one plan per query and app version), that answer's tag before the uid with the
   * header block kept for it, oldest replaced first. Read and written only by
   * src/delivery/combine-plan.ts (planTagOf), which knows their type; opaque here.
   */
  readonly planTags: object[];
  planTagNext: number;
  /**
   * The edges of its rule path that chose a variant (an A/B test applied), built on first use by
   * evaluate.ts variantEdgesOf (null until then): what an exposure is noted from when the front end
   * holds the combination and not its path (src/delivery/exposure-notes.ts).
   */
  variantEdges: Int32Array | null;
}

/** Every Combination is made here, so all have one shape (the cache-key memo starts empty). */
export function newCombination(
  key: string,
  patches: readonly CompiledPatch[],
  segEntries: readonly string[],
  mayFail: boolean,
  whole: Selection,
): Combination {
  return { key, patches, segEntries, mayFail, whole, cacheKeys: [], cacheKeyNext: 0, tagKey: '', itemTag: '', itemTagKind: -1, itemTagRev: -1, itemTagMapping: -1, itemTags: [], itemTagNext: 0, planTags: [], planTagNext: 0, variantEdges: null };
}

/**
 * Adds `entry` to one of a combination's bounded memos (cacheKeys, itemTags, planTags): appended while there is
 * room, else in place of the oldest, slot `next`. Returns the slot to replace next time.
 */
export function rememberIn<T>(memo: T[], entry: T, capacity: number, next: number): number {
  if (memo.length < capacity) {
    memo.push(entry);
    return next;
  }
  memo[next] = entry;
  return (next + 1) % capacity;
}

/** No rule applied: deliver the base revision, `seg: []`. */
export const EMPTY_SELECTION: Selection = { key: '', seg: '[]', patches: [], applied: null };
export const EMPTY_COMBINATION: Combination = newCombination('', [], [], false, EMPTY_SELECTION);
