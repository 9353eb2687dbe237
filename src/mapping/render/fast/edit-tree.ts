/**
 * The patches of a selection, composed into one edit tree against the base bytes.
 *
 * Instead of applying each patch to a copy-on-write copy of the parsed content (whose cost is a
 * shallow copy of every container on the patched paths, 3,000 members for a wide table), the patches
 * are folded in rule order into a tree that only holds what changes: Replace(value), Delete, or
 * Merge(children by key) over whatever the base has there. The tree grows with the patches, not with
 * the content; the base is only consulted (through its lazily built byte index) where a JSON Patch
 * operation must know whether a member exists or what it holds.
 *
 * Handled: merge patches, and JSON Patch add/replace/remove/test whose paths go through objects
 * only. Anything else (array indices, "-", move, copy, a path through an array) makes the whole
 * composition return null and the caller renders with the copy-on-write renderer (copy-on-write.ts), which
 * implements all of RFC 6902.
 */
import { isArrayAt, isObjectAt, objectIndex, valueEndAt, type ByteBase } from './byte-index.js';
import { jsonEqual, OpCode, PatchKind, type CompiledOp, type CompiledPatch } from '../../patch/patch.js';
import { isPlainObject } from '../../problems.js';

export const enum EditKind {
  Replace = 0,
  Delete = 1,
  Merge = 2,
}

/**
 * One node of the edit tree. Replace and Delete nodes are never modified once built (a Replace value
 * may be a compiled patch's own value, shared by every request); Merge nodes belong to one
 * composition.
 */
export interface Edit {
  readonly kind: EditKind;
  /** The new value (Replace). */
  readonly value: unknown;
  /**
   * Replace of a member that an earlier patch deleted: like a JavaScript property deleted and set
   * again, it now comes after the members that were never deleted.
   */
  readonly moved: boolean;
  /** Member edits in the order they were first made (Merge), else null. */
  readonly children: Map<string, Edit> | null;
}

const DELETE: Edit = { kind: EditKind.Delete, value: undefined, moved: false, children: null };

/**
 * The root before any patch took effect: the base as it is (an empty Merge would turn a base that is
 * not an object into `{}`). Never modified: the first edit replaces it.
 */
export const UNCHANGED: Edit = { kind: EditKind.Merge, value: undefined, moved: false, children: new Map() };

function replaceEdit(value: unknown, moved: boolean): Edit {
  return { kind: EditKind.Replace, value, moved, children: null };
}

function mergeEdit(): Edit {
  return { kind: EditKind.Merge, value: undefined, moved: false, children: new Map() };
}

// Outcomes of one JSON Patch operation.
const OK = 0;
const FAILED = 1;
const UNSUPPORTED = 2;

/** Marks a value lookup or concrete edit that failed, or that the edit tree cannot express. */
const FAIL_VALUE: unique symbol = Symbol('fail');
const UNSUPPORTED_VALUE: unique symbol = Symbol('unsupported');

/**
 * Folds `patches` (those flagged 0 in `applied` skipped; null: all) into one edit tree over the base.
 * `appliedOut`, when given, receives 1 for every patch that took effect (a JSON Patch whose operation
 * fails is skipped whole, as RFC 6902 requires). Returns null when a patch needs an operation the
 * tree does not express.
 */
export function composeEdits(
  base: ByteBase,
  patches: readonly CompiledPatch[],
  applied: Uint8Array | null,
  appliedOut: Uint8Array | null,
): Edit | null {
  let root = UNCHANGED;
  for (let i = 0; i < patches.length; i++) {
    if (applied !== null && applied[i] === 0) continue;
    const patch = patches[i]!;
    if (patch.kind === PatchKind.Merge) {
      root = mergeRoot(root, patch.merge as Record<string, unknown>);
      if (appliedOut !== null) appliedOut[i] = 1;
      continue;
    }
    // A JSON Patch applies whole or not at all: it works on a copy of the (small) tree.
    const holder: Holder = { root: cloneEdit(root) };
    const outcome = applyOps(base, holder, patch.ops as readonly CompiledOp[]);
    if (outcome === UNSUPPORTED) return null;
    if (outcome === OK) {
      root = holder.root;
      if (appliedOut !== null) appliedOut[i] = 1;
    }
  }
  return root;
}

/** A merge patch's keys that are not objects become Replace/Delete, objects become nested Merges. */
function mergeRoot(current: Edit, patch: Record<string, unknown>): Edit {
  const root = current === UNCHANGED ? mergeEdit() : current;
  if (root.kind === EditKind.Replace) return replaceEdit(mergeValue(root.value, patch), false);
  mergeChildren(root.children as Map<string, Edit>, patch);
  return root;
}

function mergeChildren(children: Map<string, Edit>, patch: Record<string, unknown>): void {
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    const existing = children.get(key);
    if (value === null) {
      children.set(key, DELETE);
    } else if (!isPlainObject(value)) {
      setReplace(children, key, existing, value);
    } else if (existing === undefined) {
      const node = mergeEdit();
      mergeChildren(node.children as Map<string, Edit>, value);
      children.set(key, node);
    } else if (existing.kind === EditKind.Merge) {
      mergeChildren(existing.children as Map<string, Edit>, value);
    } else {
      setReplace(children, key, existing, mergeValue(existing.kind === EditKind.Replace ? existing.value : undefined, value));
    }
  }
}

/** Sets a member to `value`, moving it to the end when an earlier patch had deleted it. */
function setReplace(children: Map<string, Edit>, key: string, existing: Edit | undefined, value: unknown): void {
  if (existing !== undefined && existing.kind === EditKind.Delete) {
    children.delete(key);
    children.set(key, replaceEdit(value, true));
    return;
  }
  children.set(key, replaceEdit(value, existing !== undefined && existing.moved));
}

/** RFC 7396 MergePatch on plain values, building new objects (neither argument is modified). */
export function mergeValue(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out = Object.create(null) as Record<string, unknown>;
  if (isPlainObject(target)) for (const key of Object.keys(target)) out[key] = target[key];
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === null) delete out[key];
    else out[key] = mergeValue(Object.hasOwn(out, key) ? out[key] : undefined, value);
  }
  return out;
}

/** The object a Merge stands for where the base has no object to merge into. */
export function materialize(node: Edit): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  for (const [key, child] of node.children as Map<string, Edit>) {
    if (child.kind === EditKind.Replace) out[key] = child.value;
    else if (child.kind === EditKind.Merge) out[key] = materialize(child);
  }
  return out;
}

function cloneEdit(node: Edit): Edit {
  if (node.kind !== EditKind.Merge || node === UNCHANGED) return node;
  const copy = mergeEdit();
  const children = copy.children as Map<string, Edit>;
  for (const [key, child] of node.children as Map<string, Edit>) children.set(key, cloneEdit(child));
  return copy;
}

// ---------------------------------------------------------------- JSON Patch

interface Holder {
  root: Edit;
}

function applyOps(base: ByteBase, holder: Holder, ops: readonly CompiledOp[]): number {
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    let outcome: number;
    if (op.op === OpCode.Test) outcome = testOp(base, holder.root, op);
    else if (op.op === OpCode.Add || op.op === OpCode.Replace || op.op === OpCode.Remove) outcome = editOp(base, holder, op);
    else outcome = UNSUPPORTED;
    if (outcome !== OK) return outcome;
  }
  return OK;
}

/**
 * The base offset of member `key` of the object value at `at` (-1 when absent or when `at` is not an
 * object), or -2 when that object's text is not canonical (left to the copy-on-write renderer).
 */
function baseMember(base: ByteBase, at: number, key: string): number {
  if (!isObjectAt(base, at)) return -1;
  const index = objectIndex(base, at);
  if (!index.canonical) return -2;
  const m = index.keys.get(key);
  return m === undefined ? -1 : index.valueStart[m]!; // keys maps to member positions
}

/** add, replace and remove on an object member. */
function editOp(base: ByteBase, holder: Holder, op: CompiledOp): number {
  const tokens = op.path;
  const n = tokens.length;
  if (n === 0) {
    // remove "" is refused when compiling; add and replace of the root replace the document.
    holder.root = replaceEdit(op.value, false);
    return OK;
  }
  if (holder.root === UNCHANGED) {
    if (isArrayAt(base, base.rootStart)) return UNSUPPORTED;
    if (!isObjectAt(base, base.rootStart)) return FAILED;
    holder.root = mergeEdit();
  }
  let node = holder.root;
  let parent: Edit | null = null;
  let at = base.rootStart;
  // d < n = tokens.length, and d - 1 >= 0 once a parent is set: the token reads carry `!`.
  for (let d = 0; d < n; d++) {
    if (node.kind === EditKind.Replace) {
      const edited = editConcrete(node.value, tokens, d, op.op, op.value);
      if (edited === FAIL_VALUE) return FAILED;
      if (edited === UNSUPPORTED_VALUE) return UNSUPPORTED;
      const replaced = replaceEdit(edited, node.moved);
      if (parent === null) holder.root = replaced;
      else (parent.children as Map<string, Edit>).set(tokens[d - 1]!, replaced);
      return OK;
    }
    // node is a Merge: over the base object at `at`, or (no object there) standing for a new object.
    const children = node.children as Map<string, Edit>;
    const key = tokens[d]!;
    const child = children.get(key);
    const member = isObjectAt(base, at) ? baseMember(base, at, key) : -1;
    if (member === -2) return UNSUPPORTED;
    if (d === n - 1) return editMember(children, key, child, member >= 0, op);
    if (child !== undefined) {
      if (child.kind === EditKind.Delete) return FAILED;
      parent = node;
      node = child;
      at = child.moved ? -1 : member;
      continue;
    }
    if (member < 0) return FAILED;
    if (isArrayAt(base, member)) return UNSUPPORTED;
    if (!isObjectAt(base, member)) return FAILED;
    const created = mergeEdit();
    children.set(key, created);
    parent = node;
    node = created;
    at = member;
  }
  return FAILED;
}

function editMember(children: Map<string, Edit>, key: string, child: Edit | undefined, inBase: boolean, op: CompiledOp): number {
  const exists = child !== undefined ? child.kind !== EditKind.Delete : inBase;
  if (op.op !== OpCode.Add && !exists) return FAILED;
  if (op.op === OpCode.Remove) children.set(key, DELETE);
  else setReplace(children, key, child, op.value);
  return OK;
}

/** An edit inside a value a patch put there (not base content): done on plain values, copying. */
function editConcrete(node: unknown, tokens: readonly string[], d: number, code: OpCode, value: unknown): unknown {
  if (Array.isArray(node)) return UNSUPPORTED_VALUE;
  if (!isPlainObject(node)) return FAIL_VALUE;
  const key = tokens[d]!; // d < tokens.length (editOp's loop, then this recursion's own test)
  const has = Object.hasOwn(node, key);
  let next: unknown;
  if (d < tokens.length - 1) {
    if (!has) return FAIL_VALUE;
    next = editConcrete(node[key], tokens, d + 1, code, value);
    if (next === FAIL_VALUE || next === UNSUPPORTED_VALUE) return next;
  } else {
    if (code !== OpCode.Add && !has) return FAIL_VALUE;
    next = value;
  }
  const copy = Object.create(null) as Record<string, unknown>;
  for (const k of Object.keys(node)) copy[k] = node[k];
  if (d === tokens.length - 1 && code === OpCode.Remove) delete copy[key];
  else copy[key] = next;
  return copy;
}

function testOp(base: ByteBase, root: Edit, op: CompiledOp): number {
  const current = currentValue(base, root, op.path);
  if (current === UNSUPPORTED_VALUE) return UNSUPPORTED;
  if (current === FAIL_VALUE) return FAILED;
  return jsonEqual(current, op.value) ? OK : FAILED;
}

/**
 * The current value at `tokens` (base with the edits so far), as a plain value. Parses only the base
 * text under that path, so a `test` costs the size of what it compares.
 */
function currentValue(base: ByteBase, root: Edit, tokens: readonly string[]): unknown {
  let node: Edit | undefined = root === UNCHANGED ? undefined : root;
  let at = base.rootStart;
  for (let d = 0; d < tokens.length; d++) {
    const key = tokens[d]!;
    if (node !== undefined && node.kind === EditKind.Replace) return concreteAt(node.value, tokens, d);
    if (node === undefined && isArrayAt(base, at)) return UNSUPPORTED_VALUE;
    const member = baseMember(base, at, key);
    if (member === -2) return UNSUPPORTED_VALUE;
    const child: Edit | undefined = node === undefined ? undefined : (node.children as Map<string, Edit>).get(key);
    if (child !== undefined) {
      if (child.kind === EditKind.Delete) return FAIL_VALUE;
      node = child;
      at = child.moved ? -1 : member;
      continue;
    }
    if (member < 0) return FAIL_VALUE;
    node = undefined;
    at = member;
  }
  if (node === undefined) return parseBase(base, at);
  if (node.kind === EditKind.Replace) return node.value;
  return isObjectAt(base, at) ? mergeOverBase(base, at, node) : materialize(node);
}

function concreteAt(value: unknown, tokens: readonly string[], from: number): unknown {
  let node = value;
  for (let d = from; d < tokens.length; d++) {
    if (Array.isArray(node)) return UNSUPPORTED_VALUE;
    const key = tokens[d]!;
    if (!isPlainObject(node) || !Object.hasOwn(node, key)) return FAIL_VALUE;
    node = node[key];
  }
  return node;
}

function parseBase(base: ByteBase, at: number): unknown {
  return JSON.parse(base.bytes.toString('utf8', at, valueEndAt(base, at))) as unknown;
}

function mergeOverBase(base: ByteBase, at: number, node: Edit): unknown {
  const out = parseBase(base, at) as Record<string, unknown>;
  const index = objectIndex(base, at);
  for (const [key, child] of node.children as Map<string, Edit>) {
    if (child.kind === EditKind.Delete) {
      delete out[key];
    } else if (child.kind === EditKind.Replace) {
      out[key] = child.value;
    } else {
      const m = index.keys.get(key);
      const start = m === undefined ? -1 : index.valueStart[m]!;
      out[key] = isObjectAt(base, start) ? mergeOverBase(base, start, child) : materialize(child);
    }
  }
  return out;
}
