/**
 * Which requests share a combine plan (src/delivery/combine-plan.ts keepPlan): app versions that chose
 * the same revision of every id get one plan; another revision, another query or an edit of the
 * environment (its generation) get their own. The answers themselves are held against the real server
 * in test/e2e/combine-plans.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createPlanCache, currentPlan, currentPlanOf, keepPlan, planMemoOf, planShapeKey, planTagOfPath, rememberPlanTagPath, type CombinePlan, type PlanCache, type PlanItem, type PlanTag } from '../../../src/delivery/combine-plan.js';
import { newUidBlock } from '../../../src/delivery/wire/header-block.js';
import { plannedAnswer } from '../../../src/delivery/wire/planned-answer.js';
import { compiledCombineQuery, type CompiledCombineQuery } from '../../../src/delivery/query.js';
import { newRendered } from '../../../src/delivery/front-cache.js';
import type { ContentView, EnvView, RevisionView } from '../../../src/delivery/directory.js';
import { JobKind } from '../../../src/pool/protocol.js';

/** What a plan reads of an environment: its identity and generation (the rest is never touched). */
function env(generation: number): EnvView {
  return { id: 'game', contents: new Map(), generation, catalog: { body: [], bodyBytes: 0, gzip: null, gzipBytes: 0, tag: '' } };
}

/** Plain items (nothing per user) whose heads are `{"n":<n>}`, one per query entry. */
function items(q: CompiledCombineQuery, heads: readonly number[]): PlanItem[] {
  return q.entries.map((entry, i) => ({
    entry,
    content: {} as ContentView,
    rev: {} as RevisionView,
    mapped: false,
    rendered: newRendered(Buffer.from(`{"n":${heads[i]!}}`), new Uint8Array(0), null, null, null),
  }));
}

function text(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('utf8');
}

describe('combine plans shared across app versions', () => {
  const q = compiledCombineQuery('c=' + encodeURIComponent(JSON.stringify(['A', 'B'])), 50);

  it('versions that chose the same revisions get one plan; another revision gets its own', () => {
    const cache = createPlanCache(1 << 20);
    const e = env(1);
    const v1 = planMemoOf(q, '001.002.000').key;
    const v2 = planMemoOf(q, '001.004.009').key;
    const v3 = planMemoOf(q, '002.000.000').key;
    const first = keepPlan(cache, v1, planShapeKey(q, '11,12,'), e, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    const second = keepPlan(cache, v2, planShapeKey(q, '11,12,'), e, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    const third = keepPlan(cache, v3, planShapeKey(q, '11,13,'), e, JobKind.Plain, items(q, [1, 3]), 'cTag3', '');
    expect(second).toBe(first);
    expect(third).not.toBe(first);
    expect(currentPlan(cache, v1, e)).toBe(first);
    expect(currentPlan(cache, v2, e)).toBe(first);
    expect(currentPlan(cache, v3, e)).toBe(third);
    expect(text(plannedAnswer(first, 0, 0, []))).toBe('{"A":{"n":1},"B":{"n":2}}');
    expect(text(plannedAnswer(third, 0, 0, []))).toBe('{"A":{"n":1},"B":{"n":3}}');
  });

  it('an id found by one version and missing for another makes another shape', () => {
    const cache = createPlanCache(1 << 20);
    const e = env(1);
    const found = keepPlan(cache, planMemoOf(q, '001.000.000').key, planShapeKey(q, '11,12,'), e, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    const oneMissing = keepPlan(cache, planMemoOf(q, '000.009.000').key, planShapeKey(q, '11,-,'), e, JobKind.Plain, items(q, [1]).slice(0, 1), 'cTagMissing', 'B');
    expect(oneMissing).not.toBe(found);
    expect(oneMissing.missingHeader).toBe('B');
  });

  it('an edit (a new generation) or another environment object shares nothing with the plans before it', () => {
    const cache = createPlanCache(1 << 20);
    const before = env(1);
    const key = planMemoOf(q, '001.000.000').key;
    const old = keepPlan(cache, key, planShapeKey(q, '11,12,'), before, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    const edited = env(2);
    expect(currentPlan(cache, key, edited)).toBeNull();
    const fresh = keepPlan(cache, planMemoOf(q, '001.004.000').key, planShapeKey(q, '11,12,'), edited, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    expect(fresh).not.toBe(old);
    expect(fresh.generation).toBe(2);
    const other = env(2);
    expect(currentPlan(cache, planMemoOf(q, '001.004.000').key, other)).toBeNull();
  });

  it('another query with the same revisions has its own plan (shape keys carry the query)', () => {
    const cache = createPlanCache(1 << 20);
    const e = env(1);
    const r = compiledCombineQuery('c=' + encodeURIComponent(JSON.stringify(['B', 'A'])), 50);
    planMemoOf(r, '');
    expect(planShapeKey(r, '11,12,')).not.toBe(planShapeKey(q, '11,12,'));
    const a = keepPlan(cache, planMemoOf(q, '').key, planShapeKey(q, '11,12,'), e, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    const b = keepPlan(cache, planMemoOf(r, '').key, planShapeKey(r, '11,12,'), e, JobKind.Plain, items(r, [2, 1]), 'cTagR', '');
    expect(b).not.toBe(a);
    expect(text(plannedAnswer(b, 0, 0, []))).toBe('{"B":{"n":2},"A":{"n":1}}');
  });
});

describe('a plan found on its key memo (currentPlanOf)', () => {
  const q = compiledCombineQuery('c=' + encodeURIComponent(JSON.stringify(['A', 'B'])), 50);
  /** A cache that holds three plans of two plain items. */
  const cacheOfThree = (): PlanCache => {
    const probe = createPlanCache(1 << 30);
    probe.set('probe', keepPlan(createPlanCache(1 << 30), 'p', 's', env(1), JobKind.Plain, items(q, [1, 2]), 'cTag', ''));
    return createPlanCache(probe.calculatedSize * 3);
  };

  it('finds the plan the cache holds under its key, and nothing once the cache let it go there', () => {
    const cache = createPlanCache(1 << 20);
    const e = env(1);
    const memo = planMemoOf(q, '001.000.000');
    expect(currentPlanOf(cache, memo, e)).toBeNull();
    const plan = keepPlan(cache, memo.key, planShapeKey(q, '11,12,'), e, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    for (let i = 0; i < 40; i++) expect(currentPlanOf(cache, memo, e)).toBe(plan);
    expect(memo.plan).toBe(plan);
    // An edit: the memo's plan is not current, and the plan kept for the new generation replaces it.
    const edited = env(2);
    expect(currentPlanOf(cache, memo, edited)).toBeNull();
    const fresh = keepPlan(cache, memo.key, planShapeKey(q, '11,12,'), edited, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    expect(memo.plan).toBeNull();
    expect(currentPlanOf(cache, memo, edited)).toBe(fresh);
    cache.delete(memo.key);
    expect(memo.plan).toBeNull();
    expect(currentPlanOf(cache, memo, edited)).toBeNull();
  });

  it('a plan answered from its memo stays recent in the cache: a plan not used since is evicted first', () => {
    const cache = cacheOfThree();
    const e = env(1);
    const memo = planMemoOf(q, '003.000.000');
    const plan = keepPlan(cache, memo.key, 'shape', e, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    cache.delete('shape');
    expect(currentPlanOf(cache, memo, e)).toBe(plan);
    cache.set('b', keepPlan(createPlanCache(1 << 30), 'x', 'y', e, JobKind.Plain, items(q, [3, 4]), 'cTag', ''));
    cache.set('c', keepPlan(createPlanCache(1 << 30), 'x', 'y', e, JobKind.Plain, items(q, [5, 6]), 'cTag', ''));
    for (let i = 0; i < 16; i++) currentPlanOf(cache, memo, e);
    cache.set('d', keepPlan(createPlanCache(1 << 30), 'x', 'y', e, JobKind.Plain, items(q, [7, 8]), 'cTag', ''));
    expect(cache.has(memo.key)).toBe(true);
    expect(cache.has('b')).toBe(false);
  });

  it('a plan shared by many app versions lists a bounded number of memos, and every version still finds it', () => {
    const cache = createPlanCache(1 << 24);
    const e = env(1);
    const many = compiledCombineQuery('c=' + encodeURIComponent(JSON.stringify(['A', 'B', 'C'])), 50);
    const memos = Array.from({ length: 70 }, (_, v) => planMemoOf(many, `001.${String(v).padStart(3, '0')}.000`));
    let plan: CombinePlan | null = null;
    for (const memo of memos) plan = keepPlan(cache, memo.key, planShapeKey(many, '1,2,3,'), e, JobKind.Plain, items(many, [1, 2, 3]), 'cTag', '');
    for (let pass = 0; pass < 3; pass++) for (const memo of memos) expect(currentPlanOf(cache, memo, e)).toBe(plan);
    expect(plan!.memos.length).toBeLessThanOrEqual(64);
    // The plan leaves one version's key: that memo alone lets it go.
    cache.delete(memos[5]!.key);
    expect(memos[5]!.plan).toBeNull();
    expect(memos[6]!.plan === plan || memos[6]!.plan === null).toBe(true);
    expect(currentPlanOf(cache, memos[5]!, e)).toBeNull();
    expect(currentPlanOf(cache, memos[6]!, e)).toBe(plan);
  });
});


/**
 * Where the mapped item sits decides which way a layout's answers are anchored in its kept buffer
 * (the start, or the end when fewer fixed bytes precede the mapped item than follow it): each order is
 * checked byte for byte.
 */
describe.each([
  { order: 'the mapped item last (answers start at the buffer\'s start)', ids: ['A', 'B'], mappedAt: 1 },
  { order: 'the mapped item first (answers end at the buffer\'s end)', ids: ['B', 'A'], mappedAt: 0 },
  { order: 'the mapped item between two fixed ones', ids: ['A', 'B', 'C'], mappedAt: 1 },
])('planned answers of a mapped item whose heads differ in length, $order', ({ ids, mappedAt }) => {
  const q = compiledCombineQuery('c=' + encodeURIComponent(JSON.stringify(ids)), 50);
  /** A wrapped front-cache entry: `{"data":<data>,"meta":{"uid":` with the tail of `seg`. */
  const wrapped = (data: string, seg: string) => newRendered(Buffer.from(`{"data":${data},"meta":{"uid":`), Buffer.from(seg), null, null, null);
  /** The fixed items: the last one long, so that a mapped item before it is anchored at the end. */
  const fixedOf = (i: number) => wrapped(`{"n":${i},"pad":"${'p'.repeat(i === ids.length - 1 ? 300 : 5)}"}`, '[]');
  /** Head n: one of 70 lengths, so that lengths 64 apart meet in one slot of the layout's views. */
  const head = (n: number) => wrapped(`{"s":"${'x'.repeat(n % 70)}"}`, `["g${n % 70}"]`);
  const expected = (uid: number, mod: number, h: ReturnType<typeof head>): string => {
    const parts = ids.map((id, i) => {
      const item = i === mappedAt ? h : fixedOf(i);
      return `"${id}":${text(item.head)}${uid},"mod":${mod}${text(item.tailEnd)}`;
    });
    return `{${parts.join(',')}}`;
  };
  const planOf = (): CombinePlan =>
    keepPlan(
      createPlanCache(1 << 24),
      'p',
      's',
      env(1),
      JobKind.Wrapped,
      q.entries.map((entry, i) => ({ entry, content: {} as ContentView, rev: {} as RevisionView, mapped: i === mappedAt, rendered: i === mappedAt ? head(0) : fixedOf(i) })),
      'cTag',
      '',
    );

  it('writes each answer whole and exactly as long as it is, whichever lengths came before', () => {
    const plan = planOf();
    // One user-part length (one layout), heads of 70 lengths in three orders: forwards, strided, back.
    const order = [...Array.from({ length: 140 }, (_, i) => i), ...Array.from({ length: 70 }, (_, i) => (i * 37) % 70), ...Array.from({ length: 70 }, (_, i) => 69 - i)];
    for (const n of order) {
      const h = head(n);
      const answer = plannedAnswer(plan, 123456789, 789, [h]);
      expect(text(answer)).toBe(expected(123456789, 789, h));
      expect(answer.byteLength).toBe(Buffer.byteLength(expected(123456789, 789, h)));
    }
  });

  it('keeps an answer per set of heads: sets taking turns past the slots, and one array whose head changes, each answer exact', () => {
    const plan = planOf();
    // Arrays kept per combination (as PlanTag.heads): five of them, more than a layout keeps answers for.
    const sets = [1, 2, 3, 4, 5].map((n) => [head(n * 3)]);
    const turns = [0, 1, 0, 1, 2, 0, 3, 1, 4, 4, 0, 2, 1, 3, 0, 0, 1];
    turns.forEach((k, i) => {
      const uid = 400000000 + i * 7919;
      const answer = plannedAnswer(plan, uid, uid % 1000, sets[k]!);
      expect(text(answer)).toBe(expected(uid, uid % 1000, sets[k]![0]!));
    });
    // One array whose item changes between answers (the planned heads' scratch array does).
    const scratch = [head(7)];
    for (const n of [7, 8, 8, 9, 7, 40]) {
      scratch[0] = head(n);
      expect(text(plannedAnswer(plan, 512345678, 678, scratch))).toBe(expected(512345678, 678, head(n)));
    }
  });

  it('answers for heads already written (only the digits change) are exact for every user-part length', () => {
    const h = head(12);
    const other = head(31);
    // User parts of 9 to 20 bytes (two 8-byte stores up to 16, three past it); a plan lays out three
    // lengths, so each group of three has a plan of its own. Each length several times in a row over
    // the same heads, with another set of heads between some of them.
    const groups = [
      [[7, 7], [12345678, 8], [12345678, 42]],
      [[123456789, 42], [4000000000, 99], [4000000001, 999]],
    ] as const;
    for (const group of groups) {
      const plan = planOf();
      for (let i = 0; i < 24; i++) {
        const [uid, mod] = group[i % 3]!;
        const heads = i % 7 === 6 ? [other] : [h];
        // Digits that differ from the answer before at both ends of the part (the stores overlap).
        const user = uid + (i % 2);
        const m = mod - (i % 2);
        expect(text(plannedAnswer(plan, user, m, heads))).toBe(expected(user, m, heads[0]!));
      }
    }
  });

  it('answers of another user-part length (another layout) in between leave each layout\'s answers exact', () => {
    const plan = planOf();
    const users = [
      [123456789, 789],
      [7, 7],
      [4000000000, 999],
      [123456789, 789],
      [55, 5],
    ] as const;
    for (let n = 0; n < 40; n++) {
      const [uid, mod] = users[n % users.length]!;
      const h = head((n * 11) % 70);
      expect(text(plannedAnswer(plan, uid, mod, [h]))).toBe(expected(uid, mod, h));
    }
  });
});

describe('a dynamic plan\'s PlanTag found by its rule path (planTagOfPath)', () => {
  const q = compiledCombineQuery('c=' + encodeURIComponent(JSON.stringify(['A', 'B'])), 50);
  const path = Int32Array.from([0, 1026]);
  const planIn = (cache: PlanCache, key: string, heads: readonly number[]): CombinePlan =>
    keepPlan(cache, key, 'shape-' + key, env(1), JobKind.Wrapped, items(q, heads), 'cTag', '');
  const planTagFor = (plan: CombinePlan): PlanTag => ({ plan, tag: 'cTag.0.-1;1.1;', block: newUidBlock(), heads: [], compressed: false });

  it('finds the PlanTag filed for (plan, path), nothing for another plan or path, nothing once the plan leaves the cache', () => {
    const cache = createPlanCache(1 << 24);
    const plan = planIn(cache, 'k1', [1, 2]);
    const other = planIn(cache, 'k2', [3, 4]);
    expect(planTagOfPath(plan, path, path.length)).toBeNull();
    const planTag = planTagFor(plan);
    rememberPlanTagPath(plan, path, path.length, planTag);
    for (let i = 0; i < 40; i++) expect(planTagOfPath(plan, path, path.length)).toBe(planTag);
    expect(planTagOfPath(other, path, path.length)).toBeNull();
    expect(planTagOfPath(plan, Int32Array.from([0, 1025]), 2)).toBeNull();
    expect(planTagOfPath(plan, path, 1)).toBeNull();
    // An empty path (no rule applied to any mapped item) is a path like any other.
    const none = planTagFor(plan);
    rememberPlanTagPath(plan, path, 0, none);
    expect(planTagOfPath(plan, path, 0)).toBe(none);
    expect(planTagOfPath(plan, path, path.length)).toBe(planTag);
    // The cache lets the plan go (under either key it was kept by): its PlanTags leave the table with it.
    cache.delete('shape-k1');
    expect(planTagOfPath(plan, path, path.length)).toBeNull();
    expect(planTagOfPath(plan, path, 0)).toBeNull();
  });

  it('files no path longer than a row holds', () => {
    const cache = createPlanCache(1 << 24);
    const plan = planIn(cache, 'k3', [1, 2]);
    const long = Int32Array.from({ length: 13 }, (_, i) => i * 1024);
    rememberPlanTagPath(plan, long, long.length, planTagFor(plan));
    expect(planTagOfPath(plan, long, long.length)).toBeNull();
    const fits = long.subarray(0, 12);
    const tag = planTagFor(plan);
    rememberPlanTagPath(plan, fits, fits.length, tag);
    expect(planTagOfPath(plan, fits, fits.length)).toBe(tag);
  });
});
