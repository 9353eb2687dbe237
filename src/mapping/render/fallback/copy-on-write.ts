/**
 * Rendering a mutated revision without re-serializing it: the output is the base JSON text with the
 * changed parts spliced in.
 *
 * Patches are applied to a copy-on-write view of the parsed base (patch.ts), so only the containers
 * on patched paths are copies. Serialization then walks only those copies: every member that is
 * still the base's own value is emitted as a slice of the base text (consecutive untouched members
 * become one slice), and only new values are stringified. Slices and concatenation are O(1) in V8
 * (sliced and cons strings), so the output is flattened only once, when the caller encodes it. Member offsets of a base container are
 * found by one scan of its text the first time a render needs them and kept with the revision, so a
 * render-cache miss costs about the size of the patch plus the one copy of the output; the first
 * miss on a revision also pays one scan of the containers on the patched paths.
 */
import { applyPatch, newPatchState, PATCH_FAILED, type CompiledPatch, type PatchState } from '../../patch/patch.js';
import { decodeKeyText, skipStringText, skipValueText, skipWsText } from '../json-scan.js';

interface Span {
  readonly start: number;
  readonly end: number;
}

/** Member offsets of one base container (objects: `"key":value`; arrays: the value). */
interface ContainerIndex {
  /** Object members by key (last occurrence wins, as with JSON.parse); null for an array. */
  readonly keys: Map<string, number> | null;
  /** Where member i's slice starts (the key's quote for objects). */
  readonly memberStart: Int32Array;
  readonly memberEnd: Int32Array;
  /** Where the text between member i-1 and member i starts (the end of member i-1). */
  readonly sepStart: Int32Array;
}

/** A revision prepared for mutation rendering; cache it with the revision (it only grows its index). */
export interface BaseDocument {
  readonly text: string;
  /** JSON.parse(text), made on the first render that needs it. */
  value: unknown;
  parsed: boolean;
  /** Base containers whose text position is known. */
  readonly spans: Map<object, Span>;
  readonly indexes: Map<object, ContainerIndex>;
}

export function createBaseDocument(minified: string): BaseDocument {
  return {
    text: minified,
    value: undefined,
    parsed: false,
    spans: new Map(),
    indexes: new Map(),
  };
}

export function baseValue(doc: BaseDocument): unknown {
  if (!doc.parsed) {
    doc.value = JSON.parse(doc.text) as unknown;
    doc.parsed = true;
    if (typeof doc.value === 'object' && doc.value !== null) {
      const start = skipWsText(doc.text, 0);
      doc.spans.set(doc.value, { start, end: skipValueText(doc.text, start) });
    }
  }
  return doc.value;
}

/**
 * Applies `patches` in order (those flagged 0 in `applied` are skipped; null applies all) and returns
 * the resulting JSON text. A patch that does not apply is skipped; `appliedOut`, when given, receives
 * 1 for every patch that took effect.
 */
export function renderPatched(
  doc: BaseDocument,
  patches: readonly CompiledPatch[],
  applied: Uint8Array | null,
  appliedOut: Uint8Array | null,
): string {
  const root = applyAll(doc, patches, applied, appliedOut);
  if (root.value === baseValue(doc)) return doc.text;
  const emitter: Emitter = { doc, state: root.state, out: '', runStart: -1, runEnd: -1 };
  emitValue(emitter, root.value);
  flushRun(emitter);
  return emitter.out;
}

/** Which of `patches` apply to this revision, in order (1 applied, 0 skipped), without rendering. */
export function patchesThatApply(doc: BaseDocument, patches: readonly CompiledPatch[]): Uint8Array {
  const out = new Uint8Array(patches.length);
  applyAll(doc, patches, null, out);
  return out;
}

interface Applied {
  readonly value: unknown;
  readonly state: PatchState;
}

function applyAll(doc: BaseDocument, patches: readonly CompiledPatch[], applied: Uint8Array | null, appliedOut: Uint8Array | null): Applied {
  const state = newPatchState();
  let root = baseValue(doc);
  for (let i = 0; i < patches.length; i++) {
    if (applied !== null && applied[i] === 0) continue;
    const next = applyPatch(root, patches[i]!, state, null);
    if (next === PATCH_FAILED) continue;
    root = next;
    if (appliedOut !== null) appliedOut[i] = 1;
  }
  return { value: root, state };
}

// ---------------------------------------------------------------- emission

interface Emitter {
  readonly doc: BaseDocument;
  readonly state: PatchState;
  /** The output so far (a rope of slices and small strings). */
  out: string;
  /** The base slice being extended, or -1. */
  runStart: number;
  runEnd: number;
}

function flushRun(e: Emitter): void {
  if (e.runStart < 0) return;
  e.out += e.doc.text.slice(e.runStart, e.runEnd);
  e.runStart = -1;
}

function emitText(e: Emitter, text: string): void {
  flushRun(e);
  e.out += text;
}

function emitSlice(e: Emitter, start: number, end: number): void {
  if (e.runStart >= 0 && e.runEnd === start) {
    e.runEnd = end;
    return;
  }
  flushRun(e);
  e.runStart = start;
  e.runEnd = end;
}

function emitValue(e: Emitter, node: unknown): void {
  if (typeof node !== 'object' || node === null) {
    emitText(e, JSON.stringify(node));
    return;
  }
  const span = e.doc.spans.get(node);
  if (span !== undefined) {
    emitSlice(e, span.start, span.end);
    return;
  }
  const origin = e.state.origin.get(node);
  const index = origin === undefined ? null : containerIndex(e.doc, origin);
  if (Array.isArray(node)) emitArray(e, node, origin as unknown[] | undefined, index);
  else emitObject(e, node as Record<string, unknown>, origin as Record<string, unknown> | undefined, index);
}

function emitArray(e: Emitter, node: readonly unknown[], origin: readonly unknown[] | undefined, index: ContainerIndex | null): void {
  emitText(e, '[');
  for (let i = 0; i < node.length; i++) {
    const value = node[i];
    if (index !== null && origin !== undefined && i < index.memberStart.length && origin[i] === value) {
      emitBaseMember(e, index, i, i === 0);
    } else {
      if (i > 0) emitText(e, ',');
      emitValue(e, value);
    }
  }
  emitText(e, ']');
}

function emitObject(
  e: Emitter,
  node: Record<string, unknown>,
  origin: Record<string, unknown> | undefined,
  index: ContainerIndex | null,
): void {
  emitText(e, '{');
  let first = true;
  for (const key of Object.keys(node)) {
    const value = node[key];
    const m = index !== null && index.keys !== null ? index.keys.get(key) : undefined;
    if (m !== undefined && (origin as Record<string, unknown>)[key] === value) {
      emitBaseMember(e, index as ContainerIndex, m, first);
    } else {
      emitText(e, first ? JSON.stringify(key) + ':' : ',' + JSON.stringify(key) + ':');
      emitValue(e, value);
    }
    first = false;
  }
  emitText(e, '}');
}

/** A member unchanged from the base (`m` is one of its members): extend the current slice when it directly follows it. */
function emitBaseMember(e: Emitter, index: ContainerIndex, m: number, first: boolean): void {
  const start = index.memberStart[m]!;
  const end = index.memberEnd[m]!;
  if (!first) {
    if (e.runStart >= 0 && e.runEnd === index.sepStart[m]) {
      e.runEnd = end;
      return;
    }
    emitText(e, ',');
  }
  emitSlice(e, start, end);
}

// ---------------------------------------------------------------- base text index

/** The member offsets of a base container, scanning its text once; null when its text is unknown. */
function containerIndex(doc: BaseDocument, container: object): ContainerIndex | null {
  const known = doc.indexes.get(container);
  if (known !== undefined) return known;
  const span = doc.spans.get(container);
  if (span === undefined) return null;
  const index = Array.isArray(container)
    ? indexArray(doc, container, span.start)
    : indexObject(doc, container as Record<string, unknown>, span.start);
  doc.indexes.set(container, index);
  return index;
}

function indexArray(doc: BaseDocument, array: readonly unknown[], start: number): ContainerIndex {
  const b = doc.text;
  const n = array.length;
  const memberStart = new Int32Array(n);
  const memberEnd = new Int32Array(n);
  const sepStart = new Int32Array(n);
  let i = skipWsText(b, start + 1);
  let prevEnd = start + 1;
  for (let k = 0; k < n; k++) {
    if (k > 0) i = skipWsText(b, skipWsText(b, i) + 1); // past ","
    const end = skipValueText(b, i);
    memberStart[k] = i;
    memberEnd[k] = end;
    sepStart[k] = prevEnd;
    prevEnd = end;
    const child = array[k];
    if (typeof child === 'object' && child !== null) doc.spans.set(child, { start: i, end });
    i = end;
  }
  return { keys: null, memberStart, memberEnd, sepStart };
}

function indexObject(doc: BaseDocument, obj: Record<string, unknown>, start: number): ContainerIndex {
  const b = doc.text;
  const starts: number[] = [];
  const ends: number[] = [];
  const seps: number[] = [];
  const valueStarts: number[] = [];
  const keys = new Map<string, number>();
  let i = skipWsText(b, start + 1);
  let prevEnd = start + 1;
  while (b.charCodeAt(i) !== 0x7d /* } */) {
    if (starts.length > 0) i = skipWsText(b, i + 1); // past ","
    const keyEnd = skipStringText(b, i);
    const key = decodeKeyText(b, i, keyEnd);
    const valueStart = skipWsText(b, skipWsText(b, keyEnd) + 1); // past ":"
    const end = skipValueText(b, valueStart);
    keys.set(key, starts.length);
    starts.push(i);
    ends.push(end);
    seps.push(prevEnd);
    valueStarts.push(valueStart);
    prevEnd = end;
    i = skipWsText(b, end);
  }
  // Registered after the scan so that a duplicated key maps its (last) value to the last text.
  for (const [key, m] of keys) {
    const child = obj[key];
    if (typeof child === 'object' && child !== null && Object.hasOwn(obj, key)) {
      doc.spans.set(child, { start: valueStarts[m]!, end: ends[m]! }); // m indexes the members scanned above
    }
  }
  return { keys, memberStart: Int32Array.from(starts), memberEnd: Int32Array.from(ends), sepStart: Int32Array.from(seps) };
}
