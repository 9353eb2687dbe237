/**
 * Many change sets applied as one, in order: what scheduled changes due together, a rehearsal's
 * replay of pending changes, and a bundle's changes are. Change sets that touch no item in common
 * do not depend on each other's order, so they are grouped in waves (a set sharing an item with the
 * current wave starts the next); within a wave, the sets that are one plain content put are written
 * together per environment (putContents: a few statements for all), the others run in parallel
 * (PostgreSQL pipelines their statements on the transaction's connection). No savepoint per set:
 * the first refusal throws, and the caller rolls the whole batch back and goes one set at a time.
 */
import { compileContent } from '../jsonc.js';
import { putContents, type ContentPut } from '../ops/content.js';
import { ALL_ITEMS, parallel, type Step } from '../ops/rows.js';
import { applyOps, itemsOf, type OpResult } from './changes.js';
import type { ChangeOp } from './change-op.js';

export interface ChangeSet {
  readonly envId: string;
  readonly ops: readonly ChangeOp[];
}

/** Each set's results, in order; throws the first refusal. */
export function* applyAll(sets: readonly ChangeSet[]): Step<OpResult[][]> {
  const results: OpResult[][] = new Array<OpResult[]>(sets.length);
  for (const wave of waves(sets)) {
    const puts = new Map<string, number[]>();
    const steps: Step<void>[] = [];
    for (const i of wave) {
      const set = sets[i]!;
      const op = set.ops[0]!;
      if (set.ops.length === 1 && op.op === 'content.put' && op.baseRevision === undefined) {
        const list = puts.get(set.envId);
        if (list === undefined) puts.set(set.envId, [i]);
        else list.push(i);
      } else {
        steps.push(applyInto(results, i, set));
      }
    }
    for (const [envId, indexes] of puts) steps.push(putAllInto(results, envId, indexes, sets));
    yield* parallel(steps);
  }
  return results;
}

function* applyInto(results: OpResult[][], i: number, set: ChangeSet): Step<void> {
  results[i] = yield* applyOps(set.envId, set.ops);
}

function* putAllInto(results: OpResult[][], envId: string, indexes: readonly number[], sets: readonly ChangeSet[]): Step<void> {
  const puts: ContentPut[] = indexes.map((i) => {
    const op = sets[i]!.ops[0] as Extract<ChangeOp, { op: 'content.put' }>;
    const text = op.text as string;
    return { id: op.id, text, compiled: compileContent(text), minAppVersion: op.minAppVersion ?? null };
  });
  const done = yield* putContents(envId, puts);
  indexes.forEach((i, k) => {
    const r = done[k]!;
    results[i] = [{ op: 'content.put', env: envId, id: r.id, hash: r.hash, revision: r.revision, changed: r.changed }];
  });
}

/** The sets' indexes in waves whose sets touch no item in common, in order. */
function waves(sets: readonly ChangeSet[]): number[][] {
  const out: number[][] = [];
  let wave: number[] = [];
  let touched = new Set<string>();
  let wholeEnvs = new Set<string>();
  sets.forEach((set, i) => {
    const items = itemsOf(set.envId, set.ops);
    const conflict = items.some(
      (it) => wholeEnvs.has(it.envId) || (it.idLower === ALL_ITEMS ? [...touched].some((k) => k.startsWith(it.envId + '\0')) : touched.has(it.envId + '\0' + it.idLower)),
    );
    if (conflict) {
      out.push(wave);
      wave = [];
      touched = new Set();
      wholeEnvs = new Set();
    }
    wave.push(i);
    for (const it of items) {
      if (it.idLower === ALL_ITEMS) wholeEnvs.add(it.envId);
      touched.add(it.envId + '\0' + it.idLower);
    }
  });
  if (wave.length > 0) out.push(wave);
  return out;
}
