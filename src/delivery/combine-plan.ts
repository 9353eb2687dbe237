/**
 * Combine plans: what a combine answer is made of, prepared once per (compiled query, environment
 * state, revisions chosen) and reused by every request that asks the same thing.
 *
 * A game build sends the same id list millions of times, and every id not behind a mapping answers
 * every user with the same bytes: only the per-user tail (`uid` and `mod`, src/delivery/tail.ts)
 * changes between two users. Looking each id up (directory, revision, cache key, front cache) and
 * hashing the whole description for the tag cost ~7,000 instructions per id on every request
 * (bench:cost, combine-50, callgrind). A plan holds, instead:
 * - the answer's fixed bytes, in the order they are sent, as views of one buffer: each is the end
 *   of the previous item's tail (`,"seg":…}}`), the next key and its head;
 * - the same bytes laid out per length of the user's part (UserLayout): the runs between two mapped
 *   items joined into blocks with gaps where the digits go, so an answer is one copy per block and
 *   the digits written into the gaps as words;
 * - the items behind a mapping (their rules are evaluated per user), with their revision and key;
 * - the tag's fixed part (etag.ts, describedTag), the X-Missing-Content value and the hit count.
 *
 * - per layout, its last answers (one per set of mapped heads, a few): the next is written over the one
 *   of its heads, copying only what moved (laidOutAnswer).
 *
 * Measured with bench:cost (instructions per request, callgrind): combine-50 391k before plans, 152k
 * with a copy per run, 118k with layouts, 87k with the digits written as words, 62.8k -> 59.2k with
 * answers written in place (later figures leave libuv's timer phase out); combine 130k -> 68k.
 *
 * A plan is built from a request whose items were all front-cache hits, and is valid while the
 * environment object and its generation (src/delivery/directory.ts: bumped by every content change)
 * are those it was built for: an edit makes every plan of that environment stale, and the next request
 * builds a fresh one. A request finds its plan by (query, app version); app versions that choose the
 * same revision of every id share one plan (keepPlan): clients in the field run many versions over a
 * few revisions, and a plan per version multiplied the bytes an answer is written from (bench
 * combine-50, seven versions of one revision set: seven plans of ~16 KB, each with its layouts).
 * Plans are copies (the unmapped items' heads are copied, not held), kept in their own LRU charged by
 * bytes (a share of the front cache's budget, src/delivery/loop.ts), so no plan keeps an evicted head
 * alive; the mapped items' heads a PlanTag keeps (PlanTag.heads) live as long as that PlanTag.
 *
 * A combine a client may receive compressed (an item has a gzip form and the client accepts gzip) is
 * assembled from the front cache's compressed parts as before: a plan holds identity bytes only.
 *
 * HOT PATH: change with care. One plan lookup per combine; a copy per block or mapped item only where
 * it moved or changed, two or three 8-byte stores per gap.
 */
import { LRUCache } from 'lru-cache';
import { JobKind } from '../pool/protocol.js';
import * as bytes from '../shared/bytes.js';
import type { ContentView, EnvView, RevisionView } from './directory.js';
import { USES_PER_REFRESH, type Rendered } from './front-cache.js';
import { PathTable } from './path-table.js';
import * as reply from './reply.js';
import type { CombineEntry, CompiledCombineQuery } from './query.js';
import * as tail from './tail.js';
import { rememberIn, type Combination } from '../mapping/index.js';
import * as etag from './etag.js';
import * as headerBlock from './header-block.js';
import type { UidBlock } from './header-block.js';

// What an answer from a plan is written with, as this module's own consts (an import is a cell
// TurboFan reads and compares before each call it inlines; a module's own const is folded: request.ts).
const { EMPTY_WORDS, putBytes, wordsOf } = bytes;
const { answerBuffer, answerView } = reply;
const { EMPTY_BYTES, USER_PART_MAX, userPartLength, writeUserPart } = tail;
const { combineTagPrefix, withMappedPart } = etag;
const { newUidBlock } = headerBlock;

/** An item whose rules are evaluated per request. */
export interface PlannedMapped {
  readonly content: ContentView;
  readonly rev: RevisionView;
  readonly entry: CombineEntry;
}

/**
 * The write program, one number per step: >= 0 copies `statics[n]`; USER writes the user's
 * `<uid>,"mod":<mod>`; MAPPED_BASE - k writes mapped item k's head, then its whole tail.
 */
export const STEP_USER = -1;
export const STEP_MAPPED_BASE = -2;

export interface CombinePlan {
  readonly env: EnvView;
  readonly generation: number;
  readonly kind: JobKind;
  /** Fixed bytes in sending order (views of one buffer). */
  readonly statics: readonly Uint8Array[];
  readonly steps: Int32Array;
  /** Sum of the statics' lengths. */
  readonly staticBytes: number;
  /** USER steps (each writes the user's digits). */
  readonly userSteps: number;
  readonly mapped: readonly PlannedMapped[];
  /** The tag's fixed part: etag.ts describedTag of the description. */
  readonly baseTag: string;
  /** X-Missing-Content, or "" when every id was found. */
  readonly missingHeader: string;
  /** Ids found (front-cache hits when the plan answers). */
  readonly found: number;
  /** True when an unmapped item has a gzip form: a client accepting gzip is answered without the plan. */
  readonly compressible: boolean;
  /** Bytes held, for the LRU's budget (its layouts included: at most LAYOUTS_PER_PLAN). */
  readonly size: number;
  /** The fixed bytes laid out per length of the user's part (index: that length), built on first use. */
  readonly layouts: (UserLayout | null)[];
  layoutCount: number;
  /** The tag before the uid of a dynamic answer without mapped items (the base tag) and its header block. */
  readonly ownTag: PlanTag;
  /** The memos that found it (currentPlanOf), at most MEMOS_PER_PLAN: the cache's dispose clears them. */
  readonly memos: PlanKeyMemo[];
  /** Its number in the table of PlanTags by rule path (planTagOfPath): int32, not unique past 2^32 plans (a row is checked by identity too). */
  readonly serial: number;
}

/**
 * A dynamic answer's tag before the uid (etag.ts combineTagPrefix) and the header block kept for it
 * (header-block.ts wrappedBlock writes the uid in place): no tag string is built and no tag written
 * byte by byte per request. Building the tag and writing it through Buffer#write cost ~800
 * instructions of a combine (bench:cost, callgrind).
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
   * while the plan does. An answer from them skips a front-cache lookup per mapped item (combine-50:
   * five, each a Map lookup and the LRU's bookkeeping in cold lines). Held here, an entry the front
   * cache evicts stays alive as long as this PlanTag (on its combination, at most PLAN_TAGS of them).
   */
  heads: readonly Rendered[] | null;
  /** Whether one of `heads` has a gzip form (a client accepting gzip is then answered without the plan). */
  compressed: boolean;
}

/**
 * PlanTags kept per combination (Combination.planTags): a query has a plan per app version, and the
 * bench's users (seven app versions, each its plan) made one memo entry change hands on most requests.
 */
const PLAN_TAGS = 8;

/**
 * A plan's fixed bytes laid out for one length of the user's part (`<uid>,"mod":<mod>`: 9 to 20
 * bytes): the runs between two mapped items each joined into one buffer with gaps where the digits
 * go. An answer is then one copy per block and the digits written into its gaps, instead of one
 * copy per id: combine-50, one id in ten mapped, makes 6 copies instead of 50.
 */
export interface UserLayout {
  readonly blocks: readonly Uint8Array[];
  /**
   * Per block, where its gaps start: arrays of small integers, read without a typed array's detached
   * check (with the length read once, combine's walk 1,632 -> 1,486 instructions a request).
   */
  readonly gaps: readonly (readonly number[])[];
  /** The write program: >= 0 copies `blocks[n]` and fills its gaps; STEP_MAPPED_BASE - k writes mapped item k. */
  readonly program: Int32Array;
  /**
   * Whether answers are written to end where the kept buffer ends (true) or to start where it starts.
   * A mapped head whose length changes moves every byte on the side that is not anchored; the side
   * with fewer fixed bytes beside the mapped items is the one left to move (anchorAtEnd).
   */
  readonly atEnd: boolean;
  /**
   * The last answers written with this layout, one per set of mapped heads (keptAnswers of them):
   * the next answer is written over the one kept for its heads (laidOutAnswer).
   */
  readonly answers: KeptAnswer[];
  /** The answer slot new heads are written into (keptAnswerFor). */
  nextAnswer: number;
}

/**
 * One answer written with a layout, kept: the next one for the same mapped heads is written over it in
 * place, and a step whose bytes already sit where they go (a block at the same position, a mapped
 * item's same head there) is not copied again; only the users' digits are. See laidOutAnswer.
 */
interface KeptAnswer {
  /**
   * The mapped heads it was last written with (PlanTag.heads, one array per combination, or the
   * planned heads' scratch array): which slot an answer takes. What sits in `answer` is still checked
   * step by step (`at`, `held`), so a slot shared by other heads is only slower, never wrong.
   */
  heads: readonly Rendered[] | null;
  answer: Uint8Array;
  /**
   * `answer`'s memory (it starts at offset 0): a view made on it with the constructor costs ~160
   * instructions against subarray's ~290 (combine makes one on 0.82 of its answers: a new length).
   */
  store: ArrayBuffer;
  words: DataView;
  /** Per program step, where its bytes sit in `answer` (-1: nowhere). */
  readonly at: Int32Array;
  /**
   * The view of `answer` last handed out and its length. Its start needs no field: a kept answer is
   * its layout's, whose answers all start at 0 or all end at `answer`'s end (UserLayout.atEnd), so the
   * same length in the same `answer` is the same view.
   */
  view: Uint8Array;
  viewLength: number;
  /**
   * Where each user part of `answer` starts (the layout's gaps and the mapped items', in program
   * order), valid while `ready`: an answer for the same heads finds every block and head where it
   * left them, so it writes the digits at these spots and nothing else (laidOutAnswer).
   */
  readonly spots: number[];
  /** Per mapped item (by its index), the front-cache entry whose bytes sit in `answer` at `at`. */
  readonly held: (Rendered | null)[];
  /** True once `answer` holds a whole answer for `held` (a write in progress or thrown clears it). */
  ready: boolean;
}

/**
 * Answers a layout keeps when the plan has mapped items (one otherwise: every answer has the same
 * heads). Users of one combination share its PlanTag's heads; with a single kept answer, two
 * combinations whose heads differ in length took turns rewriting everything after the first mapped
 * item: the bench's combine-50 (two combinations, one user in eight of the other) made 3.2 copies
 * a request, ~1,700 instructions (bench:cost --by-function, TypedArray set and memmove). A third
 * slot takes a combination that comes and goes without evicting the two that carry the traffic.
 */
const ANSWERS_PER_LAYOUT = 3;

/** Answers each layout of a plan with `mappedItems` mapped items keeps (and the plan's size charges). */
function keptAnswers(mappedItems: number): number {
  return mappedItems > 0 ? ANSWERS_PER_LAYOUT : 1;
}

/**
 * Layouts one plan keeps: uids are uniform over uint32 (9-10 digits for 98% of users) and mods mostly
 * have 3 digits, so two or three lengths carry nearly every request; a rarer length takes the
 * copy-per-run program.
 */
const LAYOUTS_PER_PLAN = 3;

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

let nextQueryId = 0;

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
  let keys = q.planKeys;
  if (keys === null) {
    keys = new Map();
    q.planKeys = keys;
    q.planId = nextQueryId++;
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
 * USES_PER_REFRESH. lru-cache's get on a hit touched ~20 lines seldom in the cache (its options and
 * diagnostics channel, the key map, the value and link arrays: bench:cost --cache-sim with
 * callgrind's per-instruction dump). The cache's dispose takes the plan off the memos of the key it
 * leaves (releasePlan), so a memo holds only a plan the cache holds under its key.
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

/** The last plan's serial (CombinePlan.serial). */
let nextPlanSerial = 0;

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
      // Each layout: its blocks (the statics with gaps) and its kept answers (a quarter more for growth).
      staticBytes + (wrapped ? LAYOUTS_PER_PLAN * (staticBytes + keptAnswers(mapped.length) * (((staticBytes + mappedBytes) * 5) >> 2)) : 0) + (USER_PART_MAX * 4 + 64) * statics.length + 128 * mapped.length + baseTag.length + missingHeader.length + 256 + OWN_TAG_BYTES,
    layouts: new Array<UserLayout | null>(USER_PART_MAX + 1).fill(null),
    layoutCount: 0,
    ownTag: { plan: null, tag: baseTag, block: newUidBlock(), heads: null, compressed: false },
    memos: [],
    serial: (nextPlanSerial = (nextPlanSerial + 1) | 0),
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
 * Answers whose mapped items selected different combinations build their tag per request (request.ts).
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

/** The plan's layout for user parts of `userLength` bytes, or null past LAYOUTS_PER_PLAN of them. */
const layoutFor = (plan: CombinePlan, userLength: number): UserLayout | null => {
  const known = plan.layouts[userLength];
  if (known !== null && known !== undefined) return known;
  if (plan.layoutCount >= LAYOUTS_PER_PLAN) return null;
  const layout = buildLayout(plan, userLength);
  plan.layouts[userLength] = layout;
  plan.layoutCount++;
  return layout;
};

function buildLayout(plan: CombinePlan, userLength: number): UserLayout {
  const blocks: Uint8Array[] = [];
  const gaps: number[][] = [];
  const program: number[] = [];
  let pending: number[] = [];
  const flush = (): void => {
    if (pending.length === 0) return;
    let size = 0;
    for (const s of pending) size += s === STEP_USER ? userLength : plan.statics[s]!.byteLength;
    const block = Buffer.alloc(size);
    const at: number[] = [];
    let pos = 0;
    for (const s of pending) {
      if (s === STEP_USER) {
        at.push(pos);
        pos += userLength;
      } else {
        block.set(plan.statics[s]!, pos);
        pos += plan.statics[s]!.byteLength;
      }
    }
    program.push(blocks.length);
    blocks.push(block);
    gaps.push(at);
    pending = [];
  };
  for (const step of plan.steps) {
    if (step >= 0 || step === STEP_USER) {
      pending.push(step);
      continue;
    }
    flush();
    program.push(step);
  }
  flush();
  const mapped = plan.mapped.length;
  let spots = mapped;
  for (const g of gaps) spots += g.length;
  return {
    blocks,
    gaps,
    program: Int32Array.from(program),
    atEnd: anchorAtEnd(program, blocks),
    answers: Array.from({ length: keptAnswers(mapped) }, () => newKeptAnswer(program.length, spots, mapped)),
    nextAnswer: 0,
  };
}

/**
 * Whether a layout's answers are better anchored at the buffer's end: when a mapped item's head changes
 * length (another combination), the fixed bytes before it move if the answer ends at a fixed place, the
 * bytes after it if it starts at one. Summed over the mapped items, the smaller side is the one to move.
 * Measured with bench:cost (callgrind): the bench's combine, its one mapped item second of ten, moved
 * the eight items after it on most requests (2.7 copies, ~400 instructions of memmove and ~150 cache
 * lines a request) when every answer started at the buffer's start.
 */
function anchorAtEnd(program: readonly number[], blocks: readonly Uint8Array[]): boolean {
  let fixed = 0;
  let before = 0;
  let mapped = 0;
  for (const op of program) {
    if (op >= 0) {
      fixed += blocks[op]!.byteLength;
      continue;
    }
    before += fixed;
    mapped++;
  }
  const after = mapped * fixed - before;
  return before < after;
}

function newKeptAnswer(steps: number, spots: number, mapped: number): KeptAnswer {
  return {
    heads: null,
    answer: EMPTY_BYTES,
    words: EMPTY_WORDS,
    store: EMPTY_BYTES.buffer,
    at: new Int32Array(steps).fill(-1),
    view: EMPTY_BYTES,
    viewLength: 0,
    spots: smiArray(spots),
    held: new Array<Rendered | null>(mapped).fill(null),
    ready: false,
  };
}

/**
 * `length` zeros as a packed array of small integers, grown by push (`new Array(n)` makes a holey one,
 * whose every read is checked for a hole): read without a typed array's detached and bounds checks.
 */
function smiArray(length: number): number[] {
  const a: number[] = [];
  for (let i = 0; i < length; i++) a.push(0);
  return a;
}

/**
 * The kept answer for these heads. New heads are written into one slot (nextAnswer), over whatever
 * heads it had; heads asked for again while they sit there keep it, and the next new heads take the
 * following slot. Users of many combinations, each seldom (the bench's combine: ~470 sets of heads in
 * 2,000 requests), so share one buffer as with a single kept answer, instead of spreading their writes
 * over every slot's lines; combinations that recur get a slot each.
 */
const keptAnswerFor = (layout: UserLayout, heads: readonly Rendered[]): KeptAnswer => {
  const answers = layout.answers;
  const next = layout.nextAnswer;
  for (let i = 0; i < answers.length; i++) {
    const kept = answers[i]!;
    if (kept.heads !== heads) continue;
    if (i === next) layout.nextAnswer = next + 1 === answers.length ? 0 : next + 1;
    return kept;
  }
  const kept = answers[next]!;
  kept.heads = heads;
  return kept;
};

/** The user's part of every unmapped item's tail, `<uid>,"mod":<mod>`, written once per answer. */
const userPart = Buffer.allocUnsafeSlow(32);
const userPartWords = wordsOf(userPart);
/**
 * The user's part at `at` as two or three 8-byte stores: bytes 0-7 (`c0`), then 8-15 (`c1`) when the
 * part is longer than 16, then its last eight (`c2`), overlapping what was written (the same bytes).
 * A part has 9 (one digit of uid, `,"mod":`, one of mod) to 20 bytes.
 *
 * The chunks travel as float64 because that is the widest store a DataView makes without BigInts.
 * Eight bytes of the user part are always a normal finite double, so the round trip is exact: the part
 * is ASCII (digits, `,"mod":`), every byte under 0x80, and a little-endian chunk's sign/exponent bits
 * come from its last two bytes: NaN or infinity needs the last byte's low 7 bits all set and the one
 * before it at 0xF0 or more, a subnormal needs the last byte at 0x00 or 0x80; neither occurs. They
 * are read once per answer and passed as arguments (unboxed doubles in the inlined loop): read from a
 * typed array in the loop, each was loaded and bounds-checked again per gap, as the stores before it
 * might have written there (74 instructions a gap, 45 gaps in a combine-50 answer; bench:cost).
 * Byte stores cost 1.5 against 0.4 µs a 45-gap answer. A const, not a function declaration: a
 * declaration's binding may be reassigned, and TurboFan checked it before every inlined call (combine's
 * walk -50 instructions a request).
 */
const putUser = (words: DataView, at: number, length: number, c0: number, c1: number, c2: number): void => {
  words.setFloat64(at, c0, true);
  if (length > 16) words.setFloat64(at + 8, c1, true);
  words.setFloat64(at + length - 8, c2, true);
};

/**
 * The answer's bytes: the plan's fixed runs with the user's digits and the mapped items (their heads
 * from the front cache, `heads[k]` for mapped item k) written between them. Valid until the next
 * answer (uWS copies it before end() returns): a layout's kept answer, or (a user-part length no
 * layout covers) the reply's reused buffer.
 */
export function plannedAnswer(plan: CombinePlan, uid: number, mod: number, heads: readonly Rendered[]): Uint8Array {
  const userLength = plan.kind === JobKind.Plain ? 0 : writeUserPart(userPartWords, 0, uid, mod);
  const layout = userLength === 0 ? null : layoutFor(plan, userLength);
  if (layout !== null) return laidOutAnswer(plan, layout, uid, mod, userLength, heads);
  const total = plannedLength(plan, uid, mod, heads);
  const out = answerBuffer(total);
  const statics = plan.statics;
  const steps = plan.steps;
  let pos = 0;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i]!;
    if (step >= 0) {
      pos = putBytes(out, statics[step]!, pos);
    } else if (step === STEP_USER) {
      // ~15 bytes: a loop costs less than a native copy call.
      for (let b = 0; b < userLength; b++) out[pos + b] = userPart[b]!;
      pos += userLength;
    } else {
      const item = heads[STEP_MAPPED_BASE - step]!;
      pos = putBytes(out, item.head, pos);
      for (let b = 0; b < userLength; b++) out[pos + b] = userPart[b]!;
      pos += userLength;
      pos = putBytes(out, item.tailEnd, pos);
    }
  }
  return answerView(pos);
}

/**
 * An answer with a layout, written over the layout's kept answer for these heads (keptAnswerFor): a
 * block is copied only when it does not already sit at its position, a mapped item's head and tailEnd
 * only when another entry or another position is there; the user's digits go into every gap. Once a
 * mapped item's length changes, everything on the layout's unanchored side of it (UserLayout.atEnd)
 * moves and is copied; otherwise (the same combinations as this answer's last user's, or heads of the
 * same length) an answer is its digits alone. Every step's bytes tile the answer in order, so a step
 * found at its position was not overwritten since it was written there.
 * Measured with bench:cost (callgrind): combine-50 copied 6 blocks and 5 heads with their tails per
 * answer, ~4,600 instructions of copy calls and copying.
 *
 * A kept answer last written whole for the same entries (most of combine-50's answers: two
 * combinations) has every step where it goes: the digits are written at its recorded spots and the
 * program is not walked (putSpots). combine-50, callgrind medians: 48,481 -> 46,202 instructions a
 * request (the walk checked 11 steps and loaded each block's gaps from a typed array); combine, whose
 * mapped head changes on most answers, takes the walk as before (43,778 -> 43,810).
 */
const laidOutAnswer = (plan: CombinePlan, layout: UserLayout, uid: number, mod: number, userLength: number, heads: readonly Rendered[]): Uint8Array => {
  const kept = keptAnswerFor(layout, heads);
  // The same entries in the same layout (one user-part length) make an answer of the same length:
  // not summed again (plannedLength reads every mapped head's and tail's length, objects of their own).
  if (kept.ready && holdsHeads(kept.held, heads)) {
    putSpots(kept.words, kept.spots, userLength);
    return kept.view;
  }
  return rewrittenAnswer(layout, kept, userLength, heads, plannedLength(plan, uid, mod, heads));
};

/** Whether the mapped items' bytes in a kept answer are these heads' (the same entries, by index). */
const holdsHeads = (held: readonly (Rendered | null)[], heads: readonly Rendered[]): boolean => {
  for (let k = 0; k < held.length; k++) if (held[k] !== heads[k]) return false;
  return true;
};

/**
 * The user's part (userPart) at every spot of a kept answer, as putUser writes it. The chunks are read
 * here, not passed in: a double argument of a function not inlined arrives boxed and was unboxed again
 * for every spot (bench:cost combine-50, callgrind: 81 instructions a spot, 62 read here; the rest is
 * the DataView's map, length and detached checks, made again for every store). One loop per store
 * count, the part's length tested once: a loop of putUser calls, which tests it per spot, read ~160
 * instructions more a combine-50 answer.
 */
const putSpots = (words: DataView, spots: readonly number[], userLength: number): void => {
  const c0 = userPartWords.getFloat64(0, true);
  const c1 = userPartWords.getFloat64(8, true);
  const last = userLength - 8;
  const c2 = userPartWords.getFloat64(last, true);
  if (userLength > 16) {
    for (let k = 0; k < spots.length; k++) {
      const at = spots[k]!;
      words.setFloat64(at, c0, true);
      words.setFloat64(at + 8, c1, true);
      words.setFloat64(at + last, c2, true);
    }
  } else {
    for (let k = 0; k < spots.length; k++) {
      const at = spots[k]!;
      words.setFloat64(at, c0, true);
      words.setFloat64(at + last, c2, true);
    }
  }
};

/**
 * laidOutAnswer's way when the kept answer was last written for other heads (or never): the program
 * step by step, each step copied only where it moved or changed, the spots recorded as it goes.
 */
function rewrittenAnswer(
  layout: UserLayout,
  kept: KeptAnswer,
  userLength: number,
  heads: readonly Rendered[],
  total: number,
): Uint8Array {
  kept.ready = false;
  if (kept.answer.length < total) {
    kept.store = new ArrayBuffer(total + (total >> 2));
    kept.answer = new Uint8Array(kept.store);
    kept.words = wordsOf(kept.answer);
    kept.at.fill(-1);
    kept.viewLength = -1;
  }
  const out = kept.answer;
  const words = kept.words;
  const at = kept.at;
  const held = kept.held;
  const spots = kept.spots;
  const program = layout.program;
  const blocks = layout.blocks;
  const gaps = layout.gaps;
  const c0 = userPartWords.getFloat64(0, true);
  const c1 = userPartWords.getFloat64(8, true);
  const c2 = userPartWords.getFloat64(userLength - 8, true);
  const start = layout.atEnd ? out.length - total : 0;
  let pos = start;
  let spot = 0;
  for (let i = 0; i < program.length; i++) {
    const op = program[i]!;
    if (op >= 0) {
      const block = blocks[op]!;
      if (at[i] !== pos) {
        putBytes(out, block, pos);
        at[i] = pos;
      }
      const g = gaps[op]!;
      for (let j = 0, n = g.length; j < n; j++) {
        const to = pos + g[j]!;
        putUser(words, to, userLength, c0, c1, c2);
        spots[spot++] = to;
      }
      pos += block.length;
    } else {
      const k = STEP_MAPPED_BASE - op;
      const item = heads[k]!;
      const headLength = item.head.length;
      if (at[i] !== pos || held[k] !== item) {
        putBytes(out, item.head, pos);
        putBytes(out, item.tailEnd, pos + headLength + userLength);
        at[i] = pos;
        held[k] = item;
      }
      putUser(words, pos + headLength, userLength, c0, c1, c2);
      spots[spot++] = pos + headLength;
      pos += headLength + userLength + item.tailEnd.length;
    }
  }
  // plannedLength and the program count the same bytes; an answer anchored at the end must end there.
  if (pos - start !== total) throw new Error(`combine answer of ${pos - start} bytes, planned ${total}`);
  if (kept.viewLength !== total) {
    kept.view = new Uint8Array(kept.store, start, total);
    kept.viewLength = total;
  }
  kept.ready = true;
  return kept.view;
}

/** Bytes plannedAnswer writes for this user and these mapped heads. */
const plannedLength = (plan: CombinePlan, uid: number, mod: number, heads: readonly Rendered[]): number => {
  if (plan.kind === JobKind.Plain) return plan.staticBytes;
  const user = userPartLength(uid, mod);
  let total = plan.staticBytes + plan.userSteps * user;
  for (let k = 0; k < plan.mapped.length; k++) {
    const item = heads[k]!;
    total += item.head.length + user + item.tailEnd.length;
  }
  return total;
};
