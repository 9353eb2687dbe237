/**
 * A Map split into a fixed number of smaller Maps, for the delivery loop's tables that grow with the
 * store (an environment's contents, mapping references).
 *
 * Why: a V8 Map grows by copying every entry into a table twice the size, in one synchronous step,
 * so the insert that crosses a large size stalls the delivery loop inside one delta slice, whatever
 * the slice budget. Split 64 ways, a growth copies 1/64 of the entries (bench/micro/sharded-map.ts:
 * the worst insert and the cost of a lookup, against a plain Map).
 *
 * Change with care: `get` is on the hot path (one per content request). Iteration order is by
 * shard, not insertion; nothing that iterates these tables depends on order.
 */

/** Shards per map: a power of two, so that a shard is `hash & (SHARDS - 1)`. */
export const SHARDS = 64;

/** How a key picks its shard: an integer in 0..SHARDS-1, the same every time for the same key. */
export type ShardOf<K> = (key: K) => number;

/**
 * The shard of a string key: FNV-1a over its last 12 characters and its length. Content ids in one
 * environment usually differ at their end (Item000123, level-12), and bounding the characters read
 * bounds the cost per lookup; ids that differ only further left share a shard, which is
 * never worse than one Map.
 */
export function stringShard(key: string): number {
  const n = key.length;
  let h = Math.imul(2166136261 ^ n, 16777619);
  for (let i = n > 12 ? n - 12 : 0; i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), 16777619);
  return (h ^ (h >>> 15) ^ (h >>> 26)) & (SHARDS - 1);
}

/** The shard of an integer key (ids handed out in sequence spread evenly). */
export function integerShard(key: number): number {
  return key & (SHARDS - 1);
}

export class ShardedMap<K, V> implements ReadonlyMap<K, V> {
  private readonly shards: Map<K, V>[];
  private readonly shardOf: ShardOf<K>;
  private count = 0;

  constructor(shardOf: ShardOf<K>) {
    this.shardOf = shardOf;
    this.shards = new Array<Map<K, V>>(SHARDS);
    for (let i = 0; i < SHARDS; i++) this.shards[i] = new Map<K, V>();
  }

  get size(): number {
    return this.count;
  }

  get(key: K): V | undefined {
    return this.shards[this.shardOf(key)]!.get(key);
  }

  has(key: K): boolean {
    return this.shards[this.shardOf(key)]!.has(key);
  }

  set(key: K, value: V): this {
    const shard = this.shards[this.shardOf(key)]!;
    const before = shard.size;
    shard.set(key, value);
    this.count += shard.size - before;
    return this;
  }

  delete(key: K): boolean {
    const gone = this.shards[this.shardOf(key)]!.delete(key);
    if (gone) this.count--;
    return gone;
  }

  /** How many entries each shard holds (tests: the spread of a key set). */
  shardSizes(): number[] {
    return this.shards.map((s) => s.size);
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this) callback.call(thisArg, v, k, this);
  }

  *entries(): MapIterator<[K, V]> {
    for (const shard of this.shards) yield* shard.entries();
  }

  *keys(): MapIterator<K> {
    for (const shard of this.shards) yield* shard.keys();
  }

  *values(): MapIterator<V> {
    for (const shard of this.shards) yield* shard.values();
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }
}
