/**
 * The mapping engine's public surface, for the store (validation), the bundle import and the worker
 * threads (selection and rendering). The hot path per wrapped request is `selectRules` followed, on a
 * render-cache miss only, by `renderSelection`.
 */
import { compileMapping as compileChecked, type Combination, type CompiledMapping, type Selection } from './compile.js';
import { EMPTY_SELECTION, evaluateMapping, partialSelection } from './evaluate.js';
import { createBaseDocument, patchesThatApply, renderPatched, type BaseDocument } from './splice.js';

export type { CompiledMapping, Selection, Combination } from './compile.js';
export type { MappingProblem } from './problems.js';
export { checkMapping, mappingError } from './compile.js';
export { EMPTY_SELECTION, evaluateMapping } from './evaluate.js';
export { compareAppVersions, parseAppVersion } from './version.js';

/** A revision prepared for mutation: parsed once, text offsets found once, selections memoized. */
export interface PreparedDoc extends BaseDocument {
  /** Per combination (of any mapping): which of its patches apply to this revision. */
  readonly selections: WeakMap<Combination, Selection>;
}

export function prepareDoc(minified: string): PreparedDoc {
  return Object.assign(createBaseDocument(minified), { selections: new WeakMap<Combination, Selection>() });
}

/**
 * Validates a mapping for storing: the format, and that every patch applies to `content` (the parsed
 * newest revision). Throws RcdError invalid_mapping whose details list every problem
 * (`[{rule, path, reason}]`).
 */
export function validateMapping(raw: unknown, content: unknown): CompiledMapping {
  return compileChecked(raw, content);
}

/** Compiles a mapping without checking it against content (worker side: it was validated on write). */
export function compileMapping(raw: unknown): CompiledMapping {
  return compileChecked(raw);
}

/**
 * Per request: the rules and variants that apply to (p, v, mod) on this revision. `v` is "" when the
 * request has none. Allocation-free for a repeat combination.
 */
export function selectRules(mapping: CompiledMapping, doc: PreparedDoc, p: Record<string, unknown>, v: string, mod: number): Selection {
  const combination = evaluateMapping(mapping, p, v, mod);
  if (combination.key === '') return EMPTY_SELECTION;
  if (!combination.mayFail) return combination.whole;
  // A JSON Patch may not apply to this (older or newer) revision: such a rule is skipped and not
  // reported. Decided once per (revision, combination).
  const known = doc.selections.get(combination);
  if (known !== undefined) return known;
  const selection = partialSelection(combination, patchesThatApply(doc, combination.patches));
  doc.selections.set(combination, selection);
  return selection;
}

/** Render-cache miss: the data JSON text of the revision with the selection's patches applied. */
export function renderSelection(doc: PreparedDoc, _mapping: CompiledMapping, selection: Selection): string {
  if (selection.key === '') return doc.text;
  return renderPatched(doc, selection.patches, selection.applied, null);
}
