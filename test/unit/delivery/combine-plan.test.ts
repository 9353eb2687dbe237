/**
 * Which requests share a combine plan (src/delivery/combine-plan.ts keepPlan): app versions that chose
 * the same revision of every id get one plan; another revision, another query or an edit of the
 * environment (its generation) get their own. The answers themselves are held against the real server
 * in test/e2e/combine-plans.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createPlanCache, currentPlan, keepPlan, planKeyOf, planShapeKey, plannedAnswer, type PlanItem } from '../../../src/delivery/combine-plan.js';
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
    const v1 = planKeyOf(q, '001.002.000');
    const v2 = planKeyOf(q, '001.004.009');
    const v3 = planKeyOf(q, '002.000.000');
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
    const found = keepPlan(cache, planKeyOf(q, '001.000.000'), planShapeKey(q, '11,12,'), e, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    const oneMissing = keepPlan(cache, planKeyOf(q, '000.009.000'), planShapeKey(q, '11,-,'), e, JobKind.Plain, items(q, [1]).slice(0, 1), 'cTagMissing', 'B');
    expect(oneMissing).not.toBe(found);
    expect(oneMissing.missingHeader).toBe('B');
  });

  it('an edit (a new generation) or another environment object shares nothing with the plans before it', () => {
    const cache = createPlanCache(1 << 20);
    const before = env(1);
    const key = planKeyOf(q, '001.000.000');
    const old = keepPlan(cache, key, planShapeKey(q, '11,12,'), before, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    const edited = env(2);
    expect(currentPlan(cache, key, edited)).toBeNull();
    const fresh = keepPlan(cache, planKeyOf(q, '001.004.000'), planShapeKey(q, '11,12,'), edited, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    expect(fresh).not.toBe(old);
    expect(fresh.generation).toBe(2);
    const other = env(2);
    expect(currentPlan(cache, planKeyOf(q, '001.004.000'), other)).toBeNull();
  });

  it('another query with the same revisions has its own plan (shape keys carry the query)', () => {
    const cache = createPlanCache(1 << 20);
    const e = env(1);
    const r = compiledCombineQuery('c=' + encodeURIComponent(JSON.stringify(['B', 'A'])), 50);
    planKeyOf(r, '');
    expect(planShapeKey(r, '11,12,')).not.toBe(planShapeKey(q, '11,12,'));
    const a = keepPlan(cache, planKeyOf(q, ''), planShapeKey(q, '11,12,'), e, JobKind.Plain, items(q, [1, 2]), 'cTag', '');
    const b = keepPlan(cache, planKeyOf(r, ''), planShapeKey(r, '11,12,'), e, JobKind.Plain, items(r, [2, 1]), 'cTagR', '');
    expect(b).not.toBe(a);
    expect(text(plannedAnswer(b, 0, 0, []))).toBe('{"B":{"n":2},"A":{"n":1}}');
  });
});
