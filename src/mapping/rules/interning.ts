/**
 * A mapping's interned rule combinations: each distinct set of applied rules/variants is built once
 * and then reached again without allocating.
 *
 * Two ways in, to the same Combination objects:
 * - by path (front end, every wrapped request): the (rule, choice) pairs that applied, in rule order,
 *   as small integers in a scratch array, hashed and looked up in an open-addressing table that holds
 *   each interned path's own copy: one probe, no string built. Building the key string per request
 *   would allocate per mapped request; a trie with a Map per node would walk one Map.get per applied
 *   rule, each node and its Map's table in other cache lines.
 * - by key (worker, per render miss): the key string the front end put in the job.
 *
 * Bounded (a pathological mapping with many independent rules could produce very many combinations):
 * past MAX_INTERNED combinations or MAX_PATH_EDGES edges held, new combinations are still correct, just
 * built per request instead of interned.
 */
import type { Combination } from './combination.js';

const MAX_INTERNED = 4096;
/** Edges the path table holds at most, over all its paths (each path is up to MAX_RULES edges). */
const MAX_PATH_EDGES = 4 * MAX_INTERNED;

/**
 * The path element of rule `rule` (its position in the mapping) with `choice` (-1: its patch; k >= 0:
 * variant k). choice + 1 < 1024 because an A/B test has at most 1000 variants: their mod ranges may
 * not overlap and each covers at least one of the 1000 values (compile.ts).
 */
export function pathEdge(rule: number, choice: number): number {
  return rule * 1024 + choice + 1;
}

/** The rule (its position in the mapping) of a path edge (pathEdge). */
export function ruleOfEdge(edge: number): number {
  return (edge / 1024) | 0;
}

/** The choice of a path edge (pathEdge): -1 for a patch rule, k >= 0 for variant k. */
export function choiceOfEdge(edge: number): number {
  return (edge % 1024) - 1;
}

/** The key of a path, e.g. "0.-1;6.1;" (rule.choice;…), the format Job.comboKey carries. */
export function pathKey(path: Int32Array, length: number): string {
  let key = '';
  for (let i = 0; i < length; i++) {
    const edge = path[i]!;
    key += ruleOfEdge(edge) + '.' + choiceOfEdge(edge) + ';';
  }
  return key;
}

/** An interned path: its hash, its own copy of the edges and the combination it names. */
interface PathEntry {
  readonly hash: number;
  readonly path: Int32Array;
  readonly combination: Combination;
}

/** The table's first size (slots, a power of two); it doubles when half full. */
const FIRST_SLOTS = 8;

/** A hash of a path's first `length` edges (int32). */
function pathHash(path: Int32Array, length: number): number {
  let h = length;
  for (let i = 0; i < length; i++) h = Math.imul(h ^ path[i]!, 0x9e3779b1);
  return h ^ (h >>> 15);
}

function samePath(held: Int32Array, path: Int32Array, length: number): boolean {
  if (held.length !== length) return false;
  for (let i = 0; i < length; i++) if (held[i] !== path[i]) return false;
  return true;
}

export class CombinationIndex {
  private readonly byKey = new Map<string, Combination>();
  /** Open addressing, linear probing; null is an empty slot. */
  private slots: (PathEntry | null)[] = new Array<PathEntry | null>(FIRST_SLOTS).fill(null);
  private paths = 0;
  private edges = 0;

  get size(): number {
    return this.byKey.size;
  }

  /** The interned combination of this path (its first `length` edges), or null. HOT PATH: no allocation. */
  byPath(path: Int32Array, length: number): Combination | null {
    const hash = pathHash(path, length);
    const slots = this.slots;
    const mask = slots.length - 1;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const entry = slots[i]!;
      if (entry === null) return null;
      if (entry.hash === hash && samePath(entry.path, path, length)) return entry.combination;
    }
  }

  getByKey(key: string): Combination | undefined {
    return this.byKey.get(key);
  }

  /** Interns a combination built for `key` when there is room; returns whether it did. */
  addByKey(key: string, combination: Combination): boolean {
    if (this.byKey.size >= MAX_INTERNED) return false;
    this.byKey.set(key, combination);
    return true;
  }

  /** Makes an interned combination reachable by its path (when the table has room); a path held already keeps its entry. */
  addPath(path: Int32Array, length: number, combination: Combination): void {
    if (this.edges + length > MAX_PATH_EDGES || this.byPath(path, length) !== null) return;
    if ((this.paths + 1) * 2 > this.slots.length) this.grow();
    place(this.slots, { hash: pathHash(path, length), path: path.slice(0, length), combination });
    this.paths++;
    this.edges += length;
  }

  private grow(): void {
    const old = this.slots;
    const slots = new Array<PathEntry | null>(old.length * 2).fill(null);
    for (const entry of old) if (entry !== null) place(slots, entry);
    this.slots = slots;
  }
}

function place(slots: (PathEntry | null)[], entry: PathEntry): void {
  const mask = slots.length - 1;
  let i = entry.hash & mask;
  while (slots[i] !== null) i = (i + 1) & mask;
  slots[i] = entry;
}
