/**
 * The mapping engine's public surface. A mapping (docs/api.md, "Dynamic mappings") is a list of rules;
 * each applies a patch, or one variant's patch of an A/B test, to the content of the users it selects.
 *
 * Who calls what, on which thread:
 * - store and admin, on writes (admin PUT, bundle import, sync: the control thread of `rcd serve`, or
 *   the CLI process of `rcd import`): validateMapping, which collects every problem with its path and
 *   checks every patch against the content;
 * - delivery thread (a front-end event loop, per wrapped request): evaluateMapping, on a mapping that
 *   loop compiled once per mapping id (compileStoredMapping): (p, app version, mod) → an interned
 *   Combination, whose key names the front cache entry; or its two halves, evaluatePath (the applied
 *   rules as a path of small integers written into the caller's array, by which the front end finds a kept answer first)
 *   and combinationOfPath. HOT PATH: a repeat combination allocates nothing. It never renders;
 * - worker threads (render pool, on a front-cache miss only): compileStoredMapping, prepareDoc once per
 *   revision, combinationForKey (the key the front end sent) and selectCombination, then
 *   renderSelectionInto (or renderSelection for the serialized form).
 * Compiled mappings and prepared documents are per thread: they hold mutable caches and match state
 * and are never shared or transferred.
 *
 * The folders: rules/ (compile a mapping, evaluate it per request, intern combinations, version
 * ranges), condition/ (the `when` language: operator table, validation, compiled matcher, RE2
 * regexes), patch/ (merge and JSON patches), render/ (the fast path and its fallback).
 *
 * Rendering composes the selection's patches into an edit tree (render/fast/edit-tree.ts) and splices
 * it into the base's UTF-8 bytes (render/fast/byte-splice.ts): the cost grows with the patches, not the
 * content. What the tree does not express (JSON Patch on array elements, move, copy) is rendered by the
 * copy-on-write fallback (render/fallback/copy-on-write.ts) instead, with the same output.
 */
import { createByteBase, type ByteBase } from './render/fast/byte-index.js';
import { renderEditsOwned, renderEditsText } from './render/fast/byte-splice.js';
import { compileMapping as compileChecked } from './rules/compile.js';
import type { CompiledMapping } from './rules/compiled.js';
import { EMPTY_SELECTION, type Combination, type Selection } from './rules/combination.js';
import { composeEdits } from './render/fast/edit-tree.js';
import { partialSelection } from './rules/evaluate.js';
import type { CompiledPatch } from './patch/patch.js';
import { createBaseDocument, patchesThatApply as patchesThatApplyCopying, renderPatched, type BaseDocument } from './render/fallback/copy-on-write.js';

export type { CompiledMapping } from './rules/compiled.js';
export type { Combination, FrontKeyMemo, KeyedEntry, Selection } from './rules/combination.js';
export type { MappingProblem } from './problems.js';
export { compileStoredMapping } from './rules/compile.js';
export { EMPTY_SELECTION, rememberIn } from './rules/combination.js';
export { combinationForKey, combinationOfPath, evaluateMapping, evaluatePath, interpretRules, newRulePath, variantEdgesOf } from './rules/evaluate.js';
export { choiceOfEdge, ruleOfEdge } from './rules/interning.js';
export type { CompiledRule, ExperimentNames } from './rules/compiled.js';

/**
 * A revision prepared for mutation: its UTF-8 bytes with the objects on patched paths indexed on first
 * use, the parsed value only if a patch needs the copy-on-write renderer, selections memoized.
 */
export interface PreparedDoc extends BaseDocument, ByteBase {
  /** Per combination (of any mapping): which of its patches apply to this revision. */
  readonly selections: WeakMap<Combination, Selection>;
}

/**
 * `minified` is the revision's JSON text as stored (JSON.stringify output). `utf8`, when given, must be
 * its UTF-8 bytes (e.g. the plain body the worker already holds): they are shared instead of encoding
 * a second copy.
 */
export function prepareDoc(minified: string, utf8?: Uint8Array): PreparedDoc {
  const text = createBaseDocument(minified);
  const bytes = createByteBase(minified, utf8);
  return {
    text: text.text,
    value: text.value,
    parsed: text.parsed,
    spans: text.spans,
    indexes: text.indexes,
    bytes: bytes.bytes,
    rootStart: bytes.rootStart,
    rootEnd: bytes.rootEnd,
    objects: bytes.objects,
    selections: new WeakMap<Combination, Selection>(),
  };
}

/**
 * Validates a mapping for storing: the format, and that every patch applies to `content` (the parsed
 * newest revision). Throws RcdError invalid_mapping whose details list every problem
 * (`[{rule, path, reason}]`).
 */
export function validateMapping(raw: unknown, content: unknown): CompiledMapping {
  return compileChecked(raw, content);
}

/** Compiles a mapping without checking it against content (it was validated on write); throws invalid_mapping. */
export function compileMapping(raw: unknown): CompiledMapping {
  return compileChecked(raw);
}

/**
 * Worker side: the selection of a combination on this revision (which of its patches apply to it).
 * Allocation-free for a repeat (revision, combination).
 */
export function selectCombination(doc: PreparedDoc, combination: Combination): Selection {
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

/**
 * Which of `patches` apply to this revision, in order (1 applied, 0 skipped). Decided on the edit tree
 * (no container copied, only the objects on the operations' paths indexed) unless a patch needs the
 * copy-on-write renderer.
 */
export function patchesThatApply(doc: PreparedDoc, patches: readonly CompiledPatch[]): Uint8Array {
  const out = new Uint8Array(patches.length);
  if (composeEdits(doc, patches, null, out) !== null) return out;
  return patchesThatApplyCopying(doc, patches);
}

/** Render-cache miss: the data JSON text of the revision with the selection's patches applied. */
export function renderSelection(doc: PreparedDoc, selection: Selection): string {
  if (selection.key === '') return doc.text;
  const root = composeEdits(doc, selection.patches, selection.applied, null);
  const text = root === null ? null : renderEditsText(doc, root);
  return text ?? renderPatched(doc, selection.patches, selection.applied, null);
}

/**
 * Render-cache miss, straight into the bytes a response is built from: UTF-8 of `prefix` + the data
 * JSON (as renderSelection) + `suffix`, written once into an ArrayBuffer of exactly that size. The
 * buffer is its own memory (transferable): rendered bodies move to the front end without a copy.
 * prefix and suffix are short texts around the data (e.g. `{"data":` and `,"hash":"…","meta":{"uid":`).
 */
export function renderSelectionInto(
  doc: PreparedDoc,
  selection: Selection,
  prefix: string,
  suffix: string,
): ArrayBuffer {
  if (selection.key !== '') {
    const root = composeEdits(doc, selection.patches, selection.applied, null);
    const out = root === null ? null : renderEditsOwned(doc, root, prefix, suffix);
    if (out !== null) return out;
    return ownedText(prefix + renderPatched(doc, selection.patches, selection.applied, null) + suffix);
  }
  return ownedWithBase(doc, prefix, suffix);
}

/** UTF-8 of `text` in an ArrayBuffer of its own (Buffer.from(string) may hand out a pooled slice). */
export function ownedText(text: string): ArrayBuffer {
  const buffer = new ArrayBuffer(Buffer.byteLength(text, 'utf8'));
  Buffer.from(buffer).write(text, 0, 'utf8');
  return buffer;
}

function ownedWithBase(doc: PreparedDoc, prefix: string, suffix: string): ArrayBuffer {
  const head = Buffer.byteLength(prefix, 'utf8');
  const buffer = new ArrayBuffer(head + doc.bytes.length + Buffer.byteLength(suffix, 'utf8'));
  const out = Buffer.from(buffer);
  out.write(prefix, 0, 'utf8');
  doc.bytes.copy(out, head);
  out.write(suffix, head + doc.bytes.length, 'utf8');
  return buffer;
}
