/**
 * The table of kept answers by rule path (src/delivery/path-table.ts): a key is three int32 and a
 * path of edges; two keys of one set are both kept, a third replaces them in turn; a cleared row
 * answers nothing. What the server keeps in it is held in front-cache.test.ts and combine-plan.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { PATH_EDGES, PathTable, setOf } from '../../../src/delivery/path-table.js';

const path = Int32Array.from([0, 1026, 3073]);

/** Three k0 values whose keys (k0, 5, 1, path) share a set. */
function threeOfOneSet(): [number, number, number] {
  const bySet = new Map<number, number[]>();
  for (let k0 = 1; ; k0++) {
    const set = setOf(k0, 5, 1, path, path.length);
    const keys = bySet.get(set) ?? [];
    keys.push(k0);
    bySet.set(set, keys);
    if (keys.length === 3) return [keys[0]!, keys[1]!, keys[2]!];
  }
}

describe('the table of kept answers by rule path', () => {
  it('finds a value by all of its key: each number, the length and every edge', () => {
    const table = new PathTable<string>();
    expect(table.find(1, 5, 1, path, 3)).toBeNull();
    table.keep(1, 5, 1, path, 3, 'one');
    expect(table.find(1, 5, 1, path, 3)).toBe('one');
    expect(table.find(2, 5, 1, path, 3)).toBeNull();
    expect(table.find(1, 6, 1, path, 3)).toBeNull();
    expect(table.find(1, 5, 2, path, 3)).toBeNull();
    expect(table.find(1, 5, 1, path, 2)).toBeNull();
    expect(table.find(1, 5, 1, Int32Array.from([0, 1026, 3074]), 3)).toBeNull();
    // Kept again under the same key: the same row, the new value.
    const row = table.keep(1, 5, 1, path, 3, 'two');
    expect(table.keep(1, 5, 1, path, 3, 'two')).toBe(row);
    expect(table.find(1, 5, 1, path, 3)).toBe('two');
  });

  it('keeps no path longer than PATH_EDGES', () => {
    const table = new PathTable<string>();
    const long = Int32Array.from({ length: PATH_EDGES + 1 }, (_, i) => i);
    expect(table.keep(1, 5, 1, long, long.length, 'long')).toBe(-1);
    expect(table.find(1, 5, 1, long, long.length)).toBeNull();
    expect(table.keep(1, 5, 1, long, PATH_EDGES, 'fits')).toBeGreaterThanOrEqual(0);
    expect(table.find(1, 5, 1, long, PATH_EDGES)).toBe('fits');
  });

  it('two keys of one set are both kept; a third replaces them in turn', () => {
    const table = new PathTable<string>();
    const [a, b, c] = threeOfOneSet();
    table.keep(a, 5, 1, path, 3, 'a');
    table.keep(b, 5, 1, path, 3, 'b');
    expect(table.find(a, 5, 1, path, 3)).toBe('a');
    expect(table.find(b, 5, 1, path, 3)).toBe('b');
    table.keep(c, 5, 1, path, 3, 'c');
    expect(table.find(c, 5, 1, path, 3)).toBe('c');
    expect([table.find(a, 5, 1, path, 3), table.find(b, 5, 1, path, 3)].filter((v) => v !== null)).toHaveLength(1);
    // The one the third displaced comes back in place of the other: the set's ways are replaced in turn.
    const gone = table.find(a, 5, 1, path, 3) === null ? a : b;
    const stayed = gone === a ? b : a;
    table.keep(gone, 5, 1, path, 3, 'back');
    expect(table.find(gone, 5, 1, path, 3)).toBe('back');
    expect(table.find(c, 5, 1, path, 3)).toBe('c');
    expect(table.find(stayed, 5, 1, path, 3)).toBeNull();
  });

  it('a cleared row answers nothing, and a row taken by another value is not cleared for the one it replaced', () => {
    const table = new PathTable<string>();
    const [a, b, c] = threeOfOneSet();
    const rowA = table.keep(a, 5, 1, path, 3, 'a');
    table.clear(rowA, 'a');
    expect(table.find(a, 5, 1, path, 3)).toBeNull();
    // An empty way is taken before any is replaced.
    table.keep(a, 5, 1, path, 3, 'a');
    expect(table.keep(a, 5, 1, path, 3, 'a')).toBe(rowA);
    const rowB = table.keep(b, 5, 1, path, 3, 'b');
    expect(rowB).not.toBe(rowA);
    // Both ways taken: the first way goes first, and its old value's clear leaves the new one.
    const rowC = table.keep(c, 5, 1, path, 3, 'c');
    expect(rowC).toBe(rowA);
    table.clear(rowC, 'a');
    expect(table.find(c, 5, 1, path, 3)).toBe('c');
    table.clearWhere((v) => v === 'c');
    expect(table.find(c, 5, 1, path, 3)).toBeNull();
    expect(table.find(b, 5, 1, path, 3)).toBe('b');
  });
});
