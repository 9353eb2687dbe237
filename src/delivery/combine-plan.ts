/**
 * Combine plans: what a combine answer is made of, prepared once per (compiled query, environment
 * state, revisions chosen) and reused by every request that asks the same thing. This file holds the
 * plan (CombinePlan), its tags per combination (PlanTag, also found by rule path), the plan cache and
 * the memos a query's plan is found on, and buildPlan; the layouts per user-part length and their
 * kept answers are wire/plan-layout.ts's, and an answer is written from them in
 * wire/planned-answer.ts.
 *
 * A game build sends the same id list millions of times, and every id not behind a mapping answers
 * every user with the same bytes: only the per-user tail (`uid` and `mod`, wire/tail.ts) changes
 * between two users. So instead of looking each id up (directory, revision, cache key, front cache)
 * and hashing the whole description for the tag on every request, a plan holds:
 * - the answer's fixed bytes, in the order they are sent, as views of one buffer: each is the end
 *   of the previous item's tail (`,"seg":…}}`), the next key and its head;
 * - the items behind a mapping (their rules are evaluated per user), with their revision and key;
 * - the tag's fixed part (etag.ts, describedTag), the X-Missing-Content value and the hit count;
 * - its answer scratch (WirePlan, wire/plan-layout.ts): the layouts and their kept answers.
 *
 * A plan is built from a request whose items were all front-cache hits, and is valid while the
 * environment object and its generation (src/delivery/directory.ts: bumped by every content change)
 * are those it was built for: an edit makes every plan of that environment stale, and the next request
 * builds a fresh one. A request finds its plan by (query, app version); app versions that choose the
 * same revision of every id share one plan (keepPlan): clients in the field run many versions over a
 * few revisions, and a plan per version would multiply the bytes an answer is written from.
 * Plans are copies (the unmapped items' heads are copied, not held), kept in their own LRU charged by
 * bytes (a share of the front cache's budget, src/delivery/loop.ts), so no plan keeps an evicted head
 * alive; the mapped items' heads a PlanTag keeps (PlanTag.heads) live as long as that PlanTag.
 *
 * A combine a client may receive compressed (an item has a gzip form and the client accepts gzip) is
 * assembled from the front cache's compressed parts (wire/combine-body.ts): a plan holds identity
 * bytes only.
 *
 * HOT PATH: change with care. One plan lookup per combine; a copy per block or mapped item only where
 * it moved or changed, two or three 8-byte stores per gap.
 */
import { LRUCache } from 'lru-cache';
import { JobKind } from '../pool/protocol.js';
import type { ContentView, EnvView, RevisionView } from './directory.js';
import { USES_PER_REFRESH, type Rendered } from './front-cache.js';
import { PathTable } from './path-table.js';
import { STEP_MAPPED_BASE, STEP_USER, newPlanAnswers, planAnswersSize, type WirePlan } from './wire/plan-layout.js';
import type { CombineEntry, CompiledCombineQuery } from './query.js';
import * as tail from './wire/tail.js';
import { rememberIn, type Combination } from '../mapping/index.js';
import * as etag from './etag.js';
import * as headerBlock from './wire/header-block.js';
import type { UidBlock } from './wire/header-block.js';

// What an answer from a plan is written with, as this module's own consts (an import is a cell
// TurboFan reads and compares before each call it inlines; a module's own const is folded).
const { USER_PART_MAX } = tail;
const { combineTagPrefix, withMappedPart } = etag;
const { newUidBlock } = headerBlock;

/** An item whose rules are evaluated per request. */
export interface PlannedMapped {
  readonly content: ContentView;
  readonly rev: RevisionView;
  readonly entry: CombineEntry;
}

/** What a combine answer is made of, for every request that asks the same thing (see above). */
export interface CombinePlan extends WirePlan {
  readonly env: EnvView;
  readonly generation: number;
  readonly mapped: readonly PlannedMapped[];
  /** The tag's fixed part: etag.ts describedTag of the description. */
  readonly baseTag: string;
  /** X-Missing-Content, or "" when every id was found. */
  readonly missingHeader: string;
  /** Ids found (front-cache hits when the plan answers). */
  readonly found: number;
  /** True when an unmapped item has a gzip form: a client accepting gzip is answered without the plan. */
  readonly compressible: boolean;
  /** Bytes held, for the LRU's budget (its answer scratch included: planAnswersSize). */
  readonly size: number;
  /** The tag before the uid of a dynamic answer without mapped items (the base tag) and its header block. */
  readonly ownTag: PlanTag;
  /** The memos that found it (currentPlanOf), at most MEMOS_PER_PLAN: the cache's dispose clears them. */
  readonly memos: PlanKeyMemo[];
  /** Its number in the table of PlanTags by rule path (planTagOfPath): int32, not unique past 2^32 plans (a row is checked by identity too). */
  readonly serial: number;
}

/**
 * A dynamic answer's tag before the uid (etag.ts combineTagPrefix) and the header block kept for it
 * (wire/header-block.ts wrappedBlock writes the uid in place): no tag string is built and no tag
 * written through Buffer#write per request.
 */
export interface PlanTag {
  /** The plan it was made for. */
  readonly plan: CombinePlan | null;
  readonly tag: string;
  readonly block: UidBlock;
  /**
   * The plan's mapped items' front-cache entries for this combination, kept by the first answer that
   * found them all (null until then): the items' combinations all have this PlanTag's key, and an entry
   * for (revision, mapping, combination key) is the same bytes whenever it is rendered, so they hold
   * while the plan does. An answer from them skips a front-cache lookup per mapped item (each a Map
   * lookup and the LRU's bookkeeping in cold lines). Held here, an entry the front
   * cache evicts stays alive as long as this PlanTag (on its combination, at most PLAN_TAGS of them).
   */
  heads: readonly Rendered[] | null;
  /** Whether one of `heads` has a gzip form (a client accepting gzip is then answered without the plan). */
  compressed: boolean;
}

/**
 * PlanTags kept per combination (Combination.planTags): a query has a plan per app version, and with
 * one entry, users of several app versions would make it change hands on most requests.
 */
const PLAN_TAGS = 8;


/** What a plan's own PlanTag holds at most: its header block and the block's views. */
const OWN_TAG_BYTES = 512;

/** Distinct app-version keys remembered per query (their plan keys); past it the memo starts over. */
const VERSIONS_PER_QUERY = 64;

export type PlanCache = LRUCache<string, CombinePlan>;

export function createPlanCache(maxBytes: number): PlanCache {
  return new LRUCache<string, CombinePlan>({ maxSize: maxBytes, sizeCalculation: planSize, dispose: releasePlan });
}

function planSize(p: CombinePlan): number {
  return p.size;
}

/** The ids this module hands out, each counter advanced by one function alone. */
interface IdCounters {
  /** planMemoOf's next query id (CompiledCombineQuery.planId). */
  nextQueryId: number;
  /** buildPlan's last plan serial (CombinePlan.serial). */
  lastPlanSerial: number;
}

// Id counters, not state handed between functions: planMemoOf and buildPlan each own one field.
const idCounters: IdCounters = { nextQueryId: 0, lastPlanSerial: 0 };

/** A plan cache key of (query, app version), with the plan the cache holds under it once found. */
export interface PlanKeyMemo {
  readonly key: string;
  /** The plan under `key` while the cache holds it there (currentPlanOf; cleared by the cache's dispose). */
  plan: CombinePlan | null;
  /** Answers planned without the cache seeing them since it last did. */
  uses: number;
}

/**
 * The plan cache key of (query, app version) with the plan found under it: a memo on the compiled
 * query, so the same key string (its hash cached by V8) comes back for every request.
 */
export function planMemoOf(q: CompiledCombineQuery, vKey: string): PlanKeyMemo {
  let keys = q.planKeys as Map<string, PlanKeyMemo> | null;
  if (keys === null) {
    keys = new Map();
    q.planKeys = keys;
    q.planId = idCounters.nextQueryId++;
  }
  let memo = keys.get(vKey);
  if (memo === undefined) {
    if (keys.size >= VERSIONS_PER_QUERY) keys.clear();
    memo = { key: q.planId + ':' + vKey, plan: null, uses: 0 };
    keys.set(vKey, memo);
  }
  return memo;
}

/**
 * The plan for this request's query and version (`key`, planMemoOf) in its environment, or null when none
 * is current. The key names the version: a plan is kept under it only once a request of that version
 * chose exactly the plan's revisions (keepPlan).
 */
export function currentPlan(cache: PlanCache, key: string, env: EnvView): CombinePlan | null {
  const plan = cache.get(key);
  if (plan === undefined || plan.env !== env || plan.generation !== env.generation) return null;
  return plan;
}

/**
 * Memos a plan lists (PlanKeyMemo.plan is it, or was): past this many the plan lets all of them go,
 * and each finds it through the cache again. Bounds what app versions coming and going leave listed.
 */
const MEMOS_PER_PLAN = 64;

/**
 * currentPlan for a memo (planMemoOf): once the cache returned the plan under the memo's key, the
 * next requests find it on the memo, with no lookup by key and no recency bookkeeping but on one in
 * USES_PER_REFRESH: lru-cache's get on a hit touches many lines seldom in the CPU cache (its
 * options and diagnostics channel, the key map, the value and link arrays). The cache's dispose
 * takes the plan off the memos of the key it leaves (releasePlan), so a memo holds only a plan the
 * cache holds under its key.
 */
export function currentPlanOf(cache: PlanCache, memo: PlanKeyMemo, env: EnvView): CombinePlan | null {
  let plan = memo.plan;
  if (plan !== null) {
    if ((++memo.uses & (USES_PER_REFRESH - 1)) === 0) cache.get(memo.key);
  } else {
    plan = cache.get(memo.key) ?? null;
    if (plan === null) return null;
    if (plan.memos.length >= MEMOS_PER_PLAN) {
      for (const m of plan.memos) if (m.plan === plan) m.plan = null;
      plan.memos.length = 0;
    }
    plan.memos.push(memo);
    memo.plan = plan;
    memo.uses = 0;
  }
  if (plan.env !== env || plan.generation !== env.generation) return null;
  return plan;
}

/** The plan cache's dispose: the plan leaves the memos of the key it is no longer kept under. */
function releasePlan(plan: CombinePlan, key: string): void {
  const memos = plan.memos;
  for (let i = 0; i < memos.length; i++) {
    const m = memos[i]!;
    if (m.key === key && m.plan === plan) m.plan = null;
  }
  // Its PlanTags leave the path table, also where another key still holds the plan (each is then found
  // through its combination and filed again). A pass over the table's 4,096 slots: a plan leaves the
  // cache after a request built another, which costs far more.
  byPath.clearWhere((t) => t.plan === plan);
}

/**
 * The key a plan is also kept under: its query and the revision chosen for each of its ids
 * (`revisions`: each revision id or '-' for none, in query order). Query ids are numbers, so these keys
 * (`s<id>:…`) never meet planMemoOf's (`<id>:<version>`).
 */
export function planShapeKey(q: CompiledCombineQuery, revisions: string): string {
  return 's' + q.planId + ':' + revisions;
}

/**
 * Keeps the plan of a request whose items were all front-cache hits under its (query, version) key:
 * the current plan of the same shape (another version that chose the same revisions) when there is
 * one, else a new one, kept under the shape too. The LRU charges a shared plan under each key it is
 * kept by: shared plans count more than they hold, never less.
 */
export function keepPlan(cache: PlanCache, planKey: string, shapeKey: string, env: EnvView, kind: JobKind, items: readonly PlanItem[], baseTag: string, missingHeader: string): CombinePlan {
  let plan = currentPlan(cache, shapeKey, env);
  if (plan === null) {
    plan = buildPlan(env, kind, items, baseTag, missingHeader);
    cache.set(shapeKey, plan);
  }
  cache.set(planKey, plan);
  return plan;
}

/** Builder input: one found item as the general path saw it (all were front-cache hits). */
export interface PlanItem {
  readonly entry: CombineEntry;
  readonly content: ContentView;
  readonly rev: RevisionView;
  /** True when its rules are evaluated per request (wrapped kinds, content with a mapping). */
  readonly mapped: boolean;
  readonly rendered: Rendered;
}

const CLOSE_OBJECT = Buffer.from('}', 'latin1');
const OPEN_OBJECT = Buffer.from('{}', 'latin1');

/**
 * Builds a plan from the items of an answer (in answer order). Run once per plan, off the per-request
 * path: it copies every unmapped head once.
 */
export function buildPlan(
  env: EnvView,
  kind: JobKind,
  items: readonly PlanItem[],
  baseTag: string,
  missingHeader: string,
): CombinePlan {
  const wrapped = kind !== JobKind.Plain;
  // First pass: the fixed runs as lists of pieces, split where a per-request write goes.
  const runs: Uint8Array[][] = [[]];
  const stepList: number[] = [];
  const mapped: PlannedMapped[] = [];
  let mappedBytes = 0;
  let compressible = false;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const run = runs[runs.length - 1]!;
    run.push(i === 0 ? item.entry.firstKey : item.entry.nextKey);
    if (item.mapped) {
      stepList.push(runs.length - 1, STEP_MAPPED_BASE - mapped.length);
      mapped.push({ content: item.content, rev: item.rev, entry: item.entry });
      mappedBytes += item.rendered.head.length + item.rendered.tailEnd.length + USER_PART_MAX;
      runs.push([]);
      continue;
    }
    if (item.rendered.gzPart !== null) compressible = true;
    run.push(item.rendered.head);
    if (!wrapped) continue;
    stepList.push(runs.length - 1, STEP_USER);
    runs.push([item.rendered.tailEnd]);
  }
  runs[runs.length - 1]!.push(items.length === 0 ? OPEN_OBJECT : CLOSE_OBJECT);
  stepList.push(runs.length - 1);
  // Second pass: one buffer for every run, each run a view of it.
  let staticBytes = 0;
  for (const run of runs) for (const piece of run) staticBytes += piece.byteLength;
  const buffer = Buffer.allocUnsafeSlow(staticBytes);
  const statics: Uint8Array[] = [];
  let at = 0;
  for (const run of runs) {
    const start = at;
    for (const piece of run) {
      buffer.set(piece, at);
      at += piece.byteLength;
    }
    statics.push(buffer.subarray(start, at));
  }
  // Empty runs (a mapped item right after another) are dropped from the program.
  const steps = stepList.filter((s) => s < 0 || statics[s]!.byteLength > 0);
  let userSteps = 0;
  for (const s of steps) if (s === STEP_USER) userSteps++;
  return {
    env,
    generation: env.generation,
    kind,
    statics,
    steps: Int32Array.from(steps),
    staticBytes,
    userSteps,
    mapped,
    baseTag,
    missingHeader,
    found: items.length,
    compressible,
    size:
      staticBytes + planAnswersSize(kind, staticBytes, mappedBytes, mapped.length) + (USER_PART_MAX * 4 + 64) * statics.length + 128 * mapped.length + baseTag.length + missingHeader.length + 256 + OWN_TAG_BYTES,
    answers: newPlanAnswers(),
    ownTag: { plan: null, tag: baseTag, block: newUidBlock(), heads: null, compressed: false },
    memos: [],
    serial: (idCounters.lastPlanSerial = (idCounters.lastPlanSerial + 1) | 0),
  };
}

/**
 * PlanTags of dynamic answers whose mapped items all selected one rule path, found by the plan and
 * that path before the path becomes a Combination (path-table.ts says why; front-cache.ts finds a
 * single item's entry the same way): the way through the combination read the interning table's
 * slot, entry and path copy, the combination, its PlanTag memo and the PlanTags searched in it. A row
 * keeps its PlanTag (its plan and heads) until another key takes the row or the plan leaves the
 * cache (releasePlan), so what the table holds is bounded by its rows and the plans the cache holds.
 */
const byPath = new PathTable<PlanTag>();

/**
 * The PlanTag of `plan` for answers whose mapped items all selected the rule path `path` (its first
 * `length` edges), once an answer found its heads (rememberPlanTagPath), or null. HOT PATH.
 */
export function planTagOfPath(plan: CombinePlan, path: Int32Array, length: number): PlanTag | null {
  const known = byPath.find(plan.serial, 0, 0, path, length);
  return known !== null && known.plan === plan ? known : null;
}

/** Files `planTag` (its heads found) under its plan and rule path for planTagOfPath. */
export function rememberPlanTagPath(plan: CombinePlan, path: Int32Array, length: number, planTag: PlanTag): void {
  byPath.keep(plan.serial, 0, 0, path, length, planTag);
}

/**
 * The PlanTag of a dynamic answer from `plan` whose mapped items all selected `c` (null: the plan has
 * none): the plan's own, or the one memoized on the combination for this plan (Combination.planTags).
 * Answers whose mapped items selected different combinations build their tag per request (combine.ts).
 */
export function planTagOf(plan: CombinePlan, c: Combination | null): PlanTag {
  if (c === null) return plan.ownTag;
  const memo = c.planTags as PlanTag[];
  for (let i = 0; i < memo.length; i++) {
    const known = memo[i]!;
    if (known.plan === plan) return known;
  }
  let parts = '';
  for (let k = 0; k < plan.mapped.length; k++) parts = withMappedPart(parts, k, c);
  const planTag: PlanTag = { plan, tag: combineTagPrefix(plan.baseTag, parts, plan.mapped.length), block: newUidBlock(), heads: null, compressed: false };
  c.planTagNext = rememberIn(memo, planTag, PLAN_TAGS, c.planTagNext);
  return planTag;
}
