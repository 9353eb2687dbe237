import { describe, expect, it } from 'vitest';
import { EMPTY_COMBINATION, type Combination } from '../../../../src/mapping/rules/combination.js';
import { evaluateMapping } from '../../../../src/mapping/rules/evaluate.js';
import { compileMapping } from '../../../../src/mapping/index.js';
import { CombinationIndex, pathEdge, pathKey } from '../../../../src/mapping/rules/interning.js';
import { NO_VERSION } from '../../../../src/shared/app-version.js';

/** A distinct stand-in combination (the index stores and returns objects, it never looks inside). */
function combo(key: string): Combination {
  return { ...EMPTY_COMBINATION, key };
}

function pathOf(...pairs: [number, number][]): Int32Array {
  return Int32Array.from(pairs.map(([rule, choice]) => pathEdge(rule, choice)));
}

// The documented bounds (interning.ts): 4,096 combinations, 4 x 4,096 trie nodes.
const MAX_INTERNED = 4096;
const MAX_PATH_EDGES = 4 * MAX_INTERNED;

describe('path edges and keys', () => {
  it('the key names each (rule, choice) in order, -1 for a patch rule, the variant index otherwise', () => {
    expect(pathKey(pathOf([0, -1], [6, 1], [12, 0]), 3)).toBe('0.-1;6.1;12.0;');
    expect(pathKey(pathOf([0, -1]), 0)).toBe('');
    // Only `length` edges count: the scratch array may hold more from an earlier request.
    expect(pathKey(pathOf([1, -1], [2, 3]), 1)).toBe('1.-1;');
  });

  it('edges are distinct and round-trip for every rule (0..999) and choice (-1..999) a mapping can have', () => {
    const seen = new Set<number>();
    for (const rule of [0, 1, 2, 500, 998, 999]) {
      for (const choice of [-1, 0, 1, 2, 500, 998, 999]) {
        const edge = pathEdge(rule, choice);
        expect(seen.has(edge)).toBe(false);
        seen.add(edge);
        expect(pathKey(Int32Array.of(edge), 1)).toBe(`${rule}.${choice};`);
      }
    }
  });
});

describe('CombinationIndex', () => {
  it('the same path reaches the same object; prefixes, extensions and reorderings do not', () => {
    const index = new CombinationIndex();
    const ab = combo('0.-1;1.2;');
    expect(index.byPath(pathOf([0, -1], [1, 2]), 2)).toBeNull();
    index.addPath(pathOf([0, -1], [1, 2]), 2, ab);
    expect(index.byPath(pathOf([0, -1], [1, 2]), 2)).toBe(ab);
    expect(index.byPath(pathOf([0, -1], [1, 2], [3, -1]), 2)).toBe(ab);
    expect(index.byPath(pathOf([0, -1]), 1)).toBeNull();
    expect(index.byPath(pathOf([0, -1], [1, 2], [3, -1]), 3)).toBeNull();
    expect(index.byPath(pathOf([1, 2], [0, -1]), 2)).toBeNull();
    expect(index.byPath(pathOf([0, -1], [1, 1]), 2)).toBeNull();
    // A prefix interned later is its own entry and leaves the longer path as it was.
    const a = combo('0.-1;');
    index.addPath(pathOf([0, -1]), 1, a);
    expect(index.byPath(pathOf([0, -1]), 1)).toBe(a);
    expect(index.byPath(pathOf([0, -1], [1, 2]), 2)).toBe(ab);
  });

  it('every path stays reachable as the table grows; paths never added, and the same edges in a scratch array longer than the path, are told apart', () => {
    const index = new CombinationIndex();
    // 3,000 paths of one to three edges over 40 rules and choices -1..2: many share a prefix or a hash bucket.
    const paths: Int32Array[] = [];
    const added: Combination[] = [];
    for (let n = 0; paths.length < 3000; n++) {
      const edges = [pathEdge(n % 40, (n % 4) - 1)];
      if (n >= 40) edges.push(pathEdge(40 + ((n >> 2) % 60), ((n >> 3) % 4) - 1));
      if (n >= 1200) edges.push(pathEdge(100 + (n % 97), -1));
      const path = Int32Array.from(edges);
      if (index.byPath(path, path.length) !== null) continue;
      const c = combo(`p${n}`);
      index.addPath(path, path.length, c);
      paths.push(path);
      added.push(c);
    }
    for (let i = 0; i < paths.length; i++) {
      const path = paths[i]!;
      expect(index.byPath(path, path.length)).toBe(added[i]);
      // The scratch array the rule program writes is longer than the path: only `length` edges count.
      const scratch = new Int32Array(16).fill(pathEdge(999, -1));
      scratch.set(path);
      expect(index.byPath(scratch, path.length)).toBe(added[i]);
      expect(index.byPath(scratch, path.length + 1)).toBeNull();
    }
    expect(index.byPath(Int32Array.of(pathEdge(500, -1)), 1)).toBeNull();
    // Adding a path held already keeps the first entry.
    index.addPath(paths[0]!, paths[0]!.length, combo('again'));
    expect(index.byPath(paths[0]!, paths[0]!.length)).toBe(added[0]);
  });

  it('by key: what was added comes back as the same object', () => {
    const index = new CombinationIndex();
    const c = combo('3.1;');
    expect(index.getByKey('3.1;')).toBeUndefined();
    expect(index.addByKey('3.1;', c)).toBe(true);
    expect(index.getByKey('3.1;')).toBe(c);
    expect(index.size).toBe(1);
  });

  it(`interns at most ${MAX_INTERNED} keys; later ones are refused and the first ones stay`, () => {
    const index = new CombinationIndex();
    const first = combo('k0');
    for (let i = 0; i < MAX_INTERNED; i++) expect(index.addByKey(`k${i}`, i === 0 ? first : combo(`k${i}`))).toBe(true);
    expect(index.addByKey('one-more', combo('one-more'))).toBe(false);
    expect(index.getByKey('one-more')).toBeUndefined();
    expect(index.size).toBe(MAX_INTERNED);
    expect(index.getByKey('k0')).toBe(first);
  });

  it(`holds at most ${MAX_PATH_EDGES} edges; a path past that is not reachable, earlier ones still are`, () => {
    const index = new CombinationIndex();
    // Paths of 1,000 edges (a mapping's rule limit), each with its own first edge: 1,000 edges held each.
    const longPath = (first: number): Int32Array => Int32Array.from({ length: 1000 }, (_v, i) => pathEdge(i, i === 0 ? first : -1));
    const added: Combination[] = [];
    const fit = Math.floor(MAX_PATH_EDGES / 1000);
    for (let n = 0; n < fit; n++) {
      const c = combo(`long${n}`);
      added.push(c);
      index.addPath(longPath(n), 1000, c);
    }
    const over = combo('over');
    index.addPath(longPath(fit), 1000, over);
    expect(index.byPath(longPath(fit), 1000)).toBeNull();
    for (let n = 0; n < fit; n++) expect(index.byPath(longPath(n), 1000)).toBe(added[n]);
    // What is left still takes a short path.
    const short = combo('short');
    index.addPath(pathOf([0, 900]), 1, short);
    expect(index.byPath(pathOf([0, 900]), 1)).toBe(short);
  });
});

describe('interning through evaluation', () => {
  it('past the key bound a new combination is built per request: correct, equal, but never interned or reachable by path', () => {
    // 13 independent rules: 8,192 possible combinations, more than the bound.
    const rules = Array.from({ length: 13 }, (_v, i) => ({ segment: `f${i}`, when: { [`f${i}`]: true }, patch: { [`f${i}`]: i } }));
    const mapping = compileMapping({ rules });
    const attrs = (n: number): Record<string, unknown> => Object.fromEntries(rules.map((_v, i) => [`f${i}`, (n & (1 << i)) !== 0]));
    for (let n = 1; n <= MAX_INTERNED; n++) evaluateMapping(mapping, attrs(n), NO_VERSION, 0);
    expect(mapping.combinations.size).toBe(MAX_INTERNED);
    const late = MAX_INTERNED + 1;
    const once = evaluateMapping(mapping, attrs(late), NO_VERSION, 0);
    const twice = evaluateMapping(mapping, attrs(late), NO_VERSION, 0);
    expect(twice).not.toBe(once);
    expect(twice.key).toBe(once.key);
    expect(twice.segEntries).toEqual(once.segEntries);
    expect(mapping.combinations.getByKey(once.key)).toBeUndefined();
    // A path that is not interned by key must not be reachable by path either (one object per key).
    expect(mapping.combinations.byPath(Int32Array.of(pathEdge(0, -1), pathEdge(12, -1)), 2)).toBeNull();
    // Interned ones are still the same objects.
    expect(evaluateMapping(mapping, attrs(1), NO_VERSION, 0)).toBe(evaluateMapping(mapping, attrs(1), NO_VERSION, 0));
  });
});
