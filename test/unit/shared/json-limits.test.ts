import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, exceedsDepth } from '../../../src/shared/json-limits.js';

/** `levels` arrays around 0, built without recursion. */
function nested(levels: number): unknown {
  let v: unknown = 0;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

describe('exceedsDepth', () => {
  it.each([
    [0, 0, false],
    ['s', 0, false],
    [null, 0, false],
    [[], 0, true],
    [[], 1, false],
    [{}, 1, false],
    [{ a: [1] }, 1, true],
    [{ a: [1] }, 2, false],
    [[1, 'x', null, [2]], 1, true],
    [[1, 'x', null, [2]], 2, false],
  ])('%j deeper than %i: %s', (value, limit, deeper) => {
    expect(exceedsDepth(value, limit)).toBe(deeper);
  });

  it('counts containers, arrays and objects alike, on any branch', () => {
    const mixed = { a: 1, b: [{ c: { d: [[]] } }], e: {} };
    expect(exceedsDepth(mixed, 6)).toBe(false);
    expect(exceedsDepth(mixed, 5)).toBe(true);
  });

  it('reads a __proto__ member as data', () => {
    const value = JSON.parse('{"__proto__":[[[1]]]}') as unknown;
    expect(exceedsDepth(value, 3)).toBe(true);
    expect(exceedsDepth(value, 4)).toBe(false);
  });

  it('answers for a value far deeper than the stack could walk, at the default limit', () => {
    expect(exceedsDepth(nested(200_000), MAX_JSON_DEPTH)).toBe(true);
    expect(exceedsDepth(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(false);
    expect(exceedsDepth(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toBe(true);
  });
});
