import { describe, expect, it } from 'vitest';
import { SHARDS, ShardedMap, integerShard, stringShard } from '../../../src/delivery/sharded-map.js';

describe('ShardedMap', () => {
  it('behaves as a Map: set, replace, get, has, delete, size, iteration', () => {
    const m = new ShardedMap<string, number>(stringShard);
    const plain = new Map<string, number>();
    // A fixed pseudo-random sequence of sets and deletes over 3,000 ids, mirrored in a plain Map.
    let x = 12345;
    for (let i = 0; i < 20_000; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      const id = `id-${x % 3000}`;
      if ((x >>> 16) % 4 === 0) expect(m.delete(id)).toBe(plain.delete(id));
      else {
        m.set(id, i);
        plain.set(id, i);
      }
      expect(m.size).toBe(plain.size);
    }
    for (const [k, v] of plain) {
      expect(m.get(k)).toBe(v);
      expect(m.has(k)).toBe(true);
    }
    expect(m.get('absent')).toBeUndefined();
    expect(m.has('absent')).toBe(false);
    expect(new Map(m)).toEqual(plain);
    expect(new Set(m.keys())).toEqual(new Set(plain.keys()));
    expect([...m.values()].sort((a, b) => a - b)).toEqual([...plain.values()].sort((a, b) => a - b));
    const seen = new Map<string, number>();
    m.forEach((v, k) => seen.set(k, v));
    expect(seen).toEqual(plain);
  });

  it('spreads ids that differ at the end, or only in the middle of a long common part, over every shard', () => {
    // What bounds the copy a growing table makes: no shard may hold much more than its share.
    const sets: string[][] = [
      Array.from({ length: 100_000 }, (_, i) => `item${String(i).padStart(6, '0')}`),
      Array.from({ length: 20_000 }, (_, i) => `level-${i}-config`),
      Array.from({ length: 20_000 }, (_, i) => `feature_flags.${i}.v2`),
    ];
    for (const ids of sets) {
      const m = new ShardedMap<string, true>(stringShard);
      for (const id of ids) m.set(id, true);
      const sizes = m.shardSizes();
      expect(sizes).toHaveLength(SHARDS);
      expect(Math.max(...sizes)).toBeLessThan((2 * ids.length) / SHARDS);
      expect(Math.min(...sizes)).toBeGreaterThan(ids.length / SHARDS / 2);
    }
  });

  it('spreads integer ids handed out in sequence evenly', () => {
    const m = new ShardedMap<number, number>(integerShard);
    for (let i = 1; i <= 6400; i++) m.set(i, i);
    expect(m.shardSizes().every((n) => n === 100)).toBe(true);
    expect(m.get(6400)).toBe(6400);
  });
});
