/**
 * Arrays a delivery loop reuses for the request it is handling: a loop handles one request at a time,
 * from start to its answer or its pool jobs, so one set per loop (FrontEndState.scratch) serves all.
 * Each is passed to the functions that fill and read it; none is read after the request's turn.
 */
import { newRulePath, type Combination } from '../mapping/index.js';
import type { Rendered } from './front-cache.js';
import { PATH_EDGES } from './path-table.js';

export interface RequestScratch {
  /** The rule path a mapping evaluation writes (mapping evaluatePath). */
  readonly rulePath: Int32Array;
  /** The rule path every mapped item of a combine plan selected, when they agree (combine.ts sharedRulePath). */
  readonly planPath: Int32Array;
  /** Per mapped item of a combine plan: its combination, then its front-cache entry. */
  readonly planCombinations: (Combination | null)[];
  readonly planHeads: Rendered[];
}

export function newRequestScratch(): RequestScratch {
  return { rulePath: newRulePath(), planPath: new Int32Array(PATH_EDGES), planCombinations: [], planHeads: [] };
}
