import { describe, expect, it } from 'vitest';
import { backoffDelay, parseRetryAfter } from '../../../src/client/backoff.js';
import { planBatches } from '../../../src/client/sync.js';

describe('backoffDelay', () => {
  it('doubles per failure, jittered within the upper half of the step, capped at maxMs', () => {
    const o = { baseMs: 1000, maxMs: 8000 };
    expect(backoffDelay(1, null, o, 0)).toBe(500);
    expect(backoffDelay(1, null, o, 0.999999)).toBeCloseTo(1000, 0);
    expect(backoffDelay(3, null, o, 0)).toBe(2000);
    expect(backoffDelay(10, null, o, 0.5)).toBe(6000);
  });

  it('never undercuts Retry-After', () => {
    expect(backoffDelay(1, 5000, { baseMs: 100 }, 0.5)).toBe(5000);
    expect(backoffDelay(8, 1000, { baseMs: 100, maxMs: 60_000 }, 0)).toBe(6400);
  });
});

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP dates, null otherwise', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('1', now)).toBe(1000);
    expect(parseRetryAfter(' 30 ', now)).toBe(30_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(null, now)).toBeNull();
  });
});

describe('planBatches', () => {
  const catalog = { A: { h: '1', d: false }, B: { h: '2', d: true }, C: { h: '3', d: true }, D: { h: '4', d: false } };

  it('asks stale and mapped ids anew, cut at the combine limit', () => {
    expect(planBatches(['A', 'D'], new Set(['B', 'C']), [{ ids: ['B'], tag: 't' }], catalog, 3)).toEqual([
      { ids: ['A', 'D', 'B'], tag: null },
      { ids: ['C'], tag: null },
    ]);
  });

  it('with nothing stale, repeats the previous lists that hold mapped ids with their tags', () => {
    const previous = [{ ids: ['A', 'B'], tag: 't1' }, { ids: ['D'], tag: 't2' }];
    expect(planBatches([], new Set(['B', 'C']), previous, catalog, 100)).toEqual([
      { ids: ['A', 'B'], tag: 't1' },
      { ids: ['C'], tag: null },
    ]);
  });

  it('does not repeat a list naming an id the catalog no longer has', () => {
    expect(planBatches([], new Set(['B']), [{ ids: ['B', 'Gone'], tag: 't' }], catalog, 100)).toEqual([{ ids: ['B'], tag: null }]);
  });
});
