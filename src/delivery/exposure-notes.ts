/**
 * The one call from a request's meaning to experiment exposures (docs/experiments.md): once an
 * item's rule path is known, each variant it chose is staged for the answer (src/exposures/recorder.ts),
 * which counts it only if it succeeds (settled by lifecycle.ts). Called by single.ts (a wrapped
 * item), combine.ts (every mapped item of a dynamic combine, from its plan or item by item) and
 * ofrep/request.ts (a flag, every flag of a bulk evaluation), only where state.exposures is set.
 *
 * HOT PATH (with exposures on): a rule path's edges read, a name and its hash read from arrays
 * built once per mapping; a repeat allocates nothing.
 */
import * as mapping from '../mapping/index.js';
import type { Combination } from '../mapping/index.js';
import * as naming from '../exposures/naming.js';
import * as recorder from '../exposures/recorder.js';
import type { ExposureRecorder } from '../exposures/recorder.js';
import type { ContentView } from './directory.js';
import type { UserContext } from './context.js';
import type { DeliveryRequest } from './lifecycle.js';
import type { CombinePlan } from './combine-plan.js';

// The functions a request calls, as this module's own consts (wire/README.md, "Module consts").
const { choiceOfEdge, ruleOfEdge, variantEdgesOf } = mapping;
const { experimentNamesOf } = naming;
const { stageExposure } = recorder;

/** Stages the variants chosen in the first `length` edges of a mapped item's rule path `path`. */
export function notePathExposures(x: ExposureRecorder, r: DeliveryRequest, content: ContentView, path: Int32Array, length: number, ctx: UserContext): void {
  const compiled = content.mapping!;
  let names: mapping.ExperimentNames | null = null;
  for (let i = 0; i < length; i++) {
    const edge = path[i]!;
    const choice = choiceOfEdge(edge);
    if (choice < 0) continue;
    const rule = ruleOfEdge(edge);
    if (names === null) names = experimentNamesOf(content.id, compiled);
    stageExposure(x, r, r.env.id, names.names[rule]!, names.hashes[rule]!, compiled.rules[rule]!.variants[choice]!.name, r.uid, ctx.u, ctx.v, ctx.p);
  }
}

/** Stages the variants of a mapped item's combination (where the front end holds it and not its path). */
export function noteCombinationExposures(x: ExposureRecorder, r: DeliveryRequest, content: ContentView, combination: Combination, ctx: UserContext): void {
  const edges = variantEdgesOf(combination);
  if (edges.length > 0) notePathExposures(x, r, content, edges, edges.length, ctx);
}

/** A combine answered from its plan whose mapped items all chose the rule path `path`: each item's variants. */
export function notePlanPathExposures(x: ExposureRecorder, r: DeliveryRequest, plan: CombinePlan, path: Int32Array, length: number, ctx: UserContext): void {
  const mapped = plan.mapped;
  for (let k = 0; k < mapped.length; k++) notePathExposures(x, r, mapped[k]!.content, path, length, ctx);
}

/** A combine answered from its plan: each mapped item's variants, from its combination. */
export function notePlanExposures(x: ExposureRecorder, r: DeliveryRequest, plan: CombinePlan, combinations: readonly (Combination | null)[], ctx: UserContext): void {
  const mapped = plan.mapped;
  for (let k = 0; k < mapped.length; k++) {
    const combination = combinations[k];
    if (combination !== null && combination !== undefined) noteCombinationExposures(x, r, mapped[k]!.content, combination, ctx);
  }
}
