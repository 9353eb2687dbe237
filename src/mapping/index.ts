/**
 * The mapping engine's public surface, for the store (validation), the bundle import and the worker
 * threads (selection and rendering). The hot path per wrapped request is `selectRules` followed, on a
 * render-cache miss only, by `renderSelectionInto` (or `renderSelection` for the serialized form).
 *
 * Rendering composes the selection's patches into an edit tree (edit-tree.ts) and splices it into the
 * base's UTF-8 bytes (byte-splice.ts): the cost grows with the patches, not the content. What the
 * tree does not express (JSON Patch on array elements, move, copy) is rendered by the copy-on-write
 * renderer (copy-on-write.ts) instead, with the same output.
 */
import { createByteBase, type ByteBase } from './render/fast/byte-index.js';
import { renderEditsOwned, renderEditsText } from './render/fast/byte-splice.js';
import { compileMapping as compileChecked, type CompiledMapping } from './rules/compile.js';
import { EMPTY_SELECTION, type Combination, type Selection } from './rules/combination.js';
import { composeEdits } from './render/fast/edit-tree.js';
import { NO_VERSION_KEY, versionKeyOf } from '../shared/app-version.js';
import { evaluateMapping, partialSelection } from './rules/evaluate.js';
import type { CompiledPatch } from './patch/patch.js';
import { createBaseDocument, patchesThatApply as patchesThatApplyCopying, renderPatched, type BaseDocument } from './render/fallback/copy-on-write.js';

export type { CompiledMapping } from './rules/compile.js';
export type { Combination, Selection } from './rules/combination.js';
export type { MappingProblem } from './problems.js';
export { checkMapping, compileStoredMapping, mappingError } from './rules/compile.js';
export { EMPTY_SELECTION } from './rules/combination.js';
export { combinationForKey, evaluateMapping } from './rules/evaluate.js';
export { compareAppVersions, parseAppVersion } from '../shared/app-version.js';

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

/** Compiles a mapping without checking it against content (worker side: it was validated on write). */
export function compileMapping(raw: unknown): CompiledMapping {
  return compileChecked(raw);
}

/**
 * Per request: the rules and variants that apply to (p, v, mod) on this revision. `v` is "" when the
 * request has none. Allocation-free for a repeat combination.
 */
export function selectRules(mapping: CompiledMapping, doc: PreparedDoc, p: Record<string, unknown>, v: string, mod: number): Selection {
  return selectCombination(doc, evaluateMapping(mapping, p, v === '' ? NO_VERSION_KEY : versionKeyOf(v), mod));
}

/** The part of selectRules that depends on the revision: which of the combination's patches apply to it. */
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
