/**
 * A table of kept answers found by the rule path a user's attributes selected (mapping/rules
 * evaluatePath: the applied (rule, choice) pairs as small integers), before the path is turned into
 * its interned Combination: front-cache.ts files a mapped item's entry by (revision, mapping, kind,
 * path), combine-plan.ts a dynamic plan's PlanTag by (plan, path).
 *
 * Why: the way through the combination reads ~10 objects that each sit in a line of their own (the
 * interning table's slot and entry, the path's copy and its bytes, the combination's fields, its memo
 * arrays and the memos), and with a few hundred rule combinations in use, the last request of a
 * combination left them cold long ago. A key here is one 64-byte row of int32 in one typed array
 * ([k0, k1, k2, path length, edges...]) and its value one slot of an array beside it.
 *
 * Two ways per set (a row and its neighbour: one 128-byte pair), the one to replace taken in turn:
 * direct-mapped, keys sharing a row would take it from each other on every request. A key longer
 * than PATH_EDGES edges is not kept.
 *
 * HOT PATH: find reads one or two rows and one slot.
 */

/** Rows (a power of two), in sets of two. */
const ROWS = 4096;
const STRIDE = 16;
/** Edges a row holds: a longer path goes the way through its combination. */
export const PATH_EDGES = STRIDE - 4;

export class PathTable<T> {
  private readonly rows = new Int32Array(ROWS * STRIDE);
  private readonly values: (T | null)[] = new Array<T | null>(ROWS).fill(null);
  /** Per set, the way the next key that finds both taken replaces. */
  private readonly victims = new Uint8Array(ROWS / 2);

  /** The value kept for (k0, k1, k2, the first `length` edges of `path`), or null. */
  find(k0: number, k1: number, k2: number, path: Int32Array, length: number): T | null {
    if (length > PATH_EDGES) return null;
    const first = setOf(k0, k1, k2, path, length) * 2;
    if (this.holds(first, k0, k1, k2, path, length)) return this.values[first]!;
    if (this.holds(first + 1, k0, k1, k2, path, length)) return this.values[first + 1]!;
    return null;
  }

  /** Keeps `value` for the key; returns its row (for clear), or -1 when the path is too long to keep. */
  keep(k0: number, k1: number, k2: number, path: Int32Array, length: number, value: T): number {
    if (length > PATH_EDGES) return -1;
    const set = setOf(k0, k1, k2, path, length);
    const first = set * 2;
    let row: number;
    if (this.holds(first, k0, k1, k2, path, length) || this.values[first] === null) row = first;
    else if (this.holds(first + 1, k0, k1, k2, path, length) || this.values[first + 1] === null) row = first + 1;
    else {
      row = first + this.victims[set]!;
      this.victims[set] = this.victims[set]! ^ 1;
    }
    const rows = this.rows;
    const at = row * STRIDE;
    rows[at] = k0;
    rows[at + 1] = k1;
    rows[at + 2] = k2;
    rows[at + 3] = length;
    for (let i = 0; i < length; i++) rows[at + 4 + i] = path[i]!;
    this.values[row] = value;
    return row;
  }

  /** Empties `row` (keep's result) when it still holds `value`. */
  clear(row: number, value: T): void {
    if (this.values[row] === value) this.values[row] = null;
  }

  /** Empties every row whose value `drop` says goes. */
  clearWhere(drop: (value: T) => boolean): void {
    const values = this.values;
    for (let row = 0; row < values.length; row++) {
      const value = values[row]!;
      if (value !== null && drop(value)) values[row] = null;
    }
  }

  private holds(row: number, k0: number, k1: number, k2: number, path: Int32Array, length: number): boolean {
    const rows = this.rows;
    const at = row * STRIDE;
    if (rows[at] !== k0 || rows[at + 1] !== k1 || rows[at + 2] !== k2 || rows[at + 3] !== length || this.values[row] === null) return false;
    for (let i = 0; i < length; i++) if (rows[at + 4 + i] !== path[i]) return false;
    return true;
  }
}

/** The set of a key: a hash of its numbers and edges (exported for the table's tests). */
export function setOf(k0: number, k1: number, k2: number, path: Int32Array, length: number): number {
  let h = Math.imul(k0 ^ 0x2545f491, 0x9e3779b1) ^ Math.imul(k1, 0x85ebca77) ^ Math.imul(k2 + length, 0xc2b2ae3d);
  for (let i = 0; i < length; i++) h = Math.imul(h ^ path[i]!, 0x9e3779b1);
  return (h ^ (h >>> 15)) & (ROWS / 2 - 1);
}
