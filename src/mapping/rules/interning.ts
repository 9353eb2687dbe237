/**
 * A mapping's interned rule combinations: each distinct set of applied rules/variants is built once
 * and then reached again without allocating.
 *
 * Two ways in, to the same Combination objects:
 * - by path (front end, every wrapped request): the (rule, choice) pairs that applied, in rule order,
 *   as small integers in a scratch array; a trie walk costs one Map.get per applied rule and builds no
 *   string. Building the key string per request allocated 335 bytes per mapped request; the walk
 *   allocates ~40 (bench/micro/alloc.ts; the time is the rule checks' either way).
 * - by key (worker, per render miss): the key string the front end put in the job.
 *
 * Bounded (a pathological mapping with many independent rules could produce very many combinations):
 * past MAX_INTERNED combinations or MAX_TRIE_NODES nodes, new combinations are still correct, just
 * built per request instead of interned.
 */
import type { Combination } from './combination.js';

const MAX_INTERNED = 4096;
const MAX_TRIE_NODES = 4 * MAX_INTERNED;

/**
 * The path element of rule `rule` (its position in the mapping) with `choice` (-1: its patch; k >= 0:
 * variant k). choice + 1 < 1024 because an A/B test has at most 1000 variants: their mod ranges may
 * not overlap and each covers at least one of the 1000 values (compile.ts).
 */
export function pathEdge(rule: number, choice: number): number {
  return rule * 1024 + choice + 1;
}

/** The key of a path, e.g. "0.-1;6.1;" (rule.choice;…), the format Job.comboKey carries. */
export function pathKey(path: Int32Array, length: number): string {
  let key = '';
  for (let i = 0; i < length; i++) {
    const edge = path[i]!;
    key += ((edge / 1024) | 0) + '.' + ((edge % 1024) - 1) + ';';
  }
  return key;
}

interface TrieNode {
  next: Map<number, TrieNode> | null;
  combination: Combination | null;
}

export class CombinationIndex {
  private readonly byKey = new Map<string, Combination>();
  private readonly root: TrieNode = { next: null, combination: null };
  private nodes = 1;

  get size(): number {
    return this.byKey.size;
  }

  /** The interned combination of this path, or null. HOT PATH: no allocation. */
  byPath(path: Int32Array, length: number): Combination | null {
    let node = this.root;
    for (let i = 0; i < length; i++) {
      const next = node.next === null ? undefined : node.next.get(path[i]!);
      if (next === undefined) return null;
      node = next;
    }
    return node.combination;
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

  /** Makes an interned combination reachable by its path (when the trie has room). */
  addPath(path: Int32Array, length: number, combination: Combination): void {
    if (this.nodes + length > MAX_TRIE_NODES) return;
    let node = this.root;
    for (let i = 0; i < length; i++) {
      const edge = path[i]!;
      const children = (node.next ??= new Map<number, TrieNode>());
      let next = children.get(edge);
      if (next === undefined) {
        next = { next: null, combination: null };
        children.set(edge, next);
        this.nodes++;
      }
      node = next;
    }
    node.combination = combination;
  }
}
