/**
 * Patches: validation/compilation of RFC 7396 merge patches and RFC 6902 JSON Patch arrays, and their
 * application on a copy-on-write view of the base content.
 *
 * Application never mutates a container it did not create during the current patch: the base value
 * (shared by every render of a revision) and the compiled patch values (shared by every request) stay
 * untouched, and a JSON Patch that fails halfway (a `test` that does not hold, a missing path) is
 * dropped whole simply by keeping the previous root. The cost is a shallow copy of each container on
 * the patched paths, which grows with the patch, not with the content.
 */
import { FORBIDDEN_KEYS, findForbiddenKeys, isPlainObject, type MappingProblem } from '../problems.js';

export const enum PatchKind {
  Merge = 0,
  Json = 1,
}

export const enum OpCode {
  Add = 0,
  Remove = 1,
  Replace = 2,
  Move = 3,
  Copy = 4,
  Test = 5,
}

const OP_CODES: Record<string, OpCode> = {
  add: OpCode.Add,
  remove: OpCode.Remove,
  replace: OpCode.Replace,
  move: OpCode.Move,
  copy: OpCode.Copy,
  test: OpCode.Test,
};

export interface CompiledOp {
  readonly op: OpCode;
  /** Decoded JSON Pointer tokens; [] is the whole document. */
  readonly path: readonly string[];
  /** For move and copy, else null. */
  readonly from: readonly string[] | null;
  /** For add, replace and test, else undefined. */
  readonly value: unknown;
}

export interface CompiledPatch {
  readonly kind: PatchKind;
  /** The merge patch object (kind Merge), else null. */
  readonly merge: Record<string, unknown> | null;
  /** The operations (kind Json), else null. */
  readonly ops: readonly CompiledOp[] | null;
}

/** Marks a patch that does not apply to a document (the render keeps the previous state). */
export const PATCH_FAILED: unique symbol = Symbol('patch failed');

/**
 * What one render shares across its patches: which containers the current patch may mutate in place,
 * and for every copied container the base container it descends from (the splicer reuses the base
 * text of the members that did not change).
 */
export interface PatchState {
  owned: Set<object>;
  origin: Map<object, object>;
}

export function newPatchState(): PatchState {
  return { owned: new Set(), origin: new Map() };
}

// ---------------------------------------------------------------- compile

export function compilePatch(raw: unknown, path: string, rule: number, problems: MappingProblem[]): CompiledPatch | null {
  const before = problems.length;
  if (isPlainObject(raw)) {
    findForbiddenKeys(raw, path, rule, problems);
    return problems.length === before ? { kind: PatchKind.Merge, merge: raw, ops: null } : null;
  }
  if (!Array.isArray(raw)) {
    problems.push({ rule, path, reason: 'patch must be a JSON Merge Patch object or a JSON Patch array' });
    return null;
  }
  const ops: CompiledOp[] = [];
  for (let i = 0; i < raw.length; i++) {
    const op = compileOp(raw[i], `${path}[${i}]`, rule, problems);
    if (op !== null) ops.push(op);
  }
  return problems.length === before ? { kind: PatchKind.Json, merge: null, ops } : null;
}

function compileOp(raw: unknown, path: string, rule: number, problems: MappingProblem[]): CompiledOp | null {
  if (!isPlainObject(raw)) {
    problems.push({ rule, path, reason: 'a JSON Patch operation must be an object' });
    return null;
  }
  const code = typeof raw.op === 'string' && Object.hasOwn(OP_CODES, raw.op) ? OP_CODES[raw.op] : undefined;
  if (code === undefined) {
    problems.push({ rule, path: `${path}.op`, reason: 'op must be one of add, remove, replace, move, copy, test' });
    return null;
  }
  const target = parsePointer(raw.path, `${path}.path`, rule, problems);
  let from: string[] | null = null;
  if (code === OpCode.Move || code === OpCode.Copy) {
    from = parsePointer(raw.from, `${path}.from`, rule, problems);
  }
  const needsValue = code === OpCode.Add || code === OpCode.Replace || code === OpCode.Test;
  if (needsValue) {
    if (!Object.hasOwn(raw, 'value')) problems.push({ rule, path, reason: `${String(raw.op)} needs a value` });
    else findForbiddenKeys(raw.value, `${path}.value`, rule, problems);
  }
  if (target === null || ((code === OpCode.Move || code === OpCode.Copy) && from === null)) return null;
  if (code === OpCode.Remove && target.length === 0) {
    problems.push({ rule, path: `${path}.path`, reason: 'cannot remove the whole document' });
    return null;
  }
  if (code === OpCode.Move && from !== null && from.length < target.length && isPrefix(from, target)) {
    problems.push({ rule, path: `${path}.from`, reason: 'cannot move a value into one of its own children' });
    return null;
  }
  return { op: code, path: target, from, value: needsValue ? raw.value : undefined };
}

function isPrefix(prefix: readonly string[], tokens: readonly string[]): boolean {
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== tokens[i]) return false;
  return true;
}

/** RFC 6901: "" or "/a/b", with ~1 for "/" and ~0 for "~". */
function parsePointer(raw: unknown, path: string, rule: number, problems: MappingProblem[]): string[] | null {
  if (typeof raw !== 'string') {
    problems.push({ rule, path, reason: 'must be a JSON Pointer string' });
    return null;
  }
  if (raw === '') return [];
  if (!raw.startsWith('/')) {
    problems.push({ rule, path, reason: `"${raw}" is not a JSON Pointer (it must start with "/")` });
    return null;
  }
  if (/~[^01]|~$/.test(raw)) {
    problems.push({ rule, path, reason: `"${raw}" has a "~" not followed by 0 or 1` });
    return null;
  }
  const tokens = raw.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
  for (const token of tokens) {
    if (FORBIDDEN_KEYS.has(token)) {
      problems.push({ rule, path, reason: `key "${token}" is not allowed` });
      return null;
    }
  }
  return tokens;
}

export function describeOp(op: CompiledOp, index: number): string {
  const names = ['add', 'remove', 'replace', 'move', 'copy', 'test'];
  return `operation ${index} (${names[op.op]} ${pointerText(op.path)})`;
}

function pointerText(tokens: readonly string[]): string {
  let out = '';
  for (const t of tokens) out += '/' + t.replace(/~/g, '~0').replace(/\//g, '~1');
  return out;
}

// ---------------------------------------------------------------- apply

/**
 * Applies one patch on top of `root`. Returns the new root, or PATCH_FAILED (with `failure[0]` set to
 * the reason) when a JSON Patch does not apply; `root` itself is never modified.
 */
export function applyPatch(root: unknown, patch: CompiledPatch, state: PatchState, failure: string[] | null): unknown {
  state.owned.clear();
  if (patch.kind === PatchKind.Merge) return mergeInto(root, patch.merge, state);
  const ops = patch.ops as readonly CompiledOp[];
  let current = root;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    const next = applyOp(current, op, state);
    if (next === PATCH_FAILED) {
      if (failure !== null) failure[0] = `${describeOp(op, i)} ${lastFailure}`;
      return PATCH_FAILED;
    }
    current = next;
  }
  return current;
}

// Set next to every PATCH_FAILED so a caller that wants the reason (validation) can report it
// without the hot path allocating an error object per failed render.
let lastFailure = '';

function fail(reason: string): typeof PATCH_FAILED {
  lastFailure = reason;
  return PATCH_FAILED;
}

/** RFC 7396 MergePatch(target, patch). */
function mergeInto(target: unknown, patch: unknown, state: PatchState): unknown {
  // Arrays and scalars replace the target; they are shared with the compiled patch, which is safe
  // because nothing mutates a container it does not own.
  if (!isPlainObject(patch)) return patch;
  const result = isPlainObject(target) ? own(target, state) : newOwnedObject(state);
  for (const key of Object.keys(patch)) {
    const value = patch[key];
    if (value === null) {
      delete result[key];
    } else {
      const existing = Object.hasOwn(result, key) ? result[key] : undefined;
      result[key] = mergeInto(existing, value, state);
    }
  }
  return result;
}

function newOwnedObject(state: PatchState): Record<string, unknown> {
  // Null prototype: a key such as "__proto__" in the base content stays a plain own property.
  const obj = Object.create(null) as Record<string, unknown>;
  state.owned.add(obj);
  return obj;
}

/** The container itself when this patch created it, else a shallow copy that this patch owns. */
function own<T extends object>(node: T, state: PatchState): T {
  if (state.owned.has(node)) return node;
  let copy: object;
  if (Array.isArray(node)) {
    copy = node.slice();
  } else {
    const obj = Object.create(null) as Record<string, unknown>;
    const src = node as Record<string, unknown>;
    for (const key of Object.keys(src)) obj[key] = src[key];
    copy = obj;
  }
  state.owned.add(copy);
  // The oldest ancestor copy is the one whose text may be in the base JSON (the splicer checks).
  state.origin.set(copy, state.origin.get(node) ?? node);
  return copy as T;
}

/**
 * Makes the containers this patch created inside `value` copy-on-write again. Only owned containers
 * can hold owned containers (an edit always owns the parent first), so the walk stays inside what
 * this patch built.
 */
function disown(value: unknown, state: PatchState): void {
  if (typeof value !== 'object' || value === null || !state.owned.delete(value)) return;
  if (Array.isArray(value)) {
    for (const item of value) disown(item, state);
  } else {
    const obj = value as Record<string, unknown>;
    for (const key of Object.keys(obj)) disown(obj[key], state);
  }
}

const MISSING: unique symbol = Symbol('missing');

function arrayIndex(token: string, length: number, allowEnd: boolean): number {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9]\d*)$/.test(token)) return -1;
  const i = Number(token);
  return i < length || (allowEnd && i === length) ? i : -1;
}

function getChild(node: unknown, token: string): unknown {
  if (Array.isArray(node)) {
    const i = arrayIndex(token, node.length, false);
    return i < 0 ? MISSING : node[i];
  }
  if (isPlainObject(node)) return Object.hasOwn(node, token) ? node[token] : MISSING;
  return MISSING;
}

function getAt(root: unknown, tokens: readonly string[]): unknown {
  let node = root;
  for (let i = 0; i < tokens.length; i++) {
    node = getChild(node, tokens[i]!);
    if (node === MISSING) return MISSING;
  }
  return node;
}

function applyOp(root: unknown, op: CompiledOp, state: PatchState): unknown {
  switch (op.op) {
    case OpCode.Add:
      return editAt(root, op.path, 0, OpCode.Add, op.value, state);
    case OpCode.Remove:
      return editAt(root, op.path, 0, OpCode.Remove, undefined, state);
    case OpCode.Replace:
      return editAt(root, op.path, 0, OpCode.Replace, op.value, state);
    case OpCode.Move: {
      const from = op.from as readonly string[];
      const value = getAt(root, from);
      if (value === MISSING) return fail('"from" does not exist');
      if (from.length === op.path.length && isPrefix(from, op.path)) return root;
      const removed = editAt(root, from, 0, OpCode.Remove, undefined, state);
      if (removed === PATCH_FAILED) return removed;
      return editAt(removed, op.path, 0, OpCode.Add, value, state);
    }
    case OpCode.Copy: {
      const value = getAt(root, op.from as readonly string[]);
      if (value === MISSING) return fail('"from" does not exist');
      // The value is now shared by two places: neither may be edited in place any more.
      disown(value, state);
      return editAt(root, op.path, 0, OpCode.Add, value, state);
    }
    case OpCode.Test: {
      const value = getAt(root, op.path);
      if (value === MISSING) return fail('path does not exist');
      return jsonEqual(value, op.value) ? root : fail('test failed: the value differs');
    }
  }
}

/** Walks to the parent of the target, copying containers on the way, and edits the last token there. */
function editAt(node: unknown, tokens: readonly string[], depth: number, code: OpCode, value: unknown, state: PatchState): unknown {
  if (tokens.length === 0) return code === OpCode.Remove ? fail('cannot remove the whole document') : value;
  if (typeof node !== 'object' || node === null) return fail('parent is not an object or array');
  const token = tokens[depth]!; // depth < tokens.length: the recursion stops at the last token
  if (depth < tokens.length - 1) {
    const child = getChild(node, token);
    if (child === MISSING) return fail('path does not exist');
    const edited = editAt(child, tokens, depth + 1, code, value, state);
    if (edited === PATCH_FAILED) return edited;
    const copy = own(node, state);
    if (Array.isArray(copy)) copy[Number(token)] = edited;
    else (copy as Record<string, unknown>)[token] = edited;
    return copy;
  }
  if (Array.isArray(node)) {
    const i = arrayIndex(token, node.length, code === OpCode.Add);
    if (i < 0) return fail('array index out of range');
    const copy = own(node, state);
    if (code === OpCode.Add) copy.splice(i, 0, value);
    else if (code === OpCode.Remove) copy.splice(i, 1);
    else copy[i] = value;
    return copy;
  }
  const obj = node as Record<string, unknown>;
  if (code !== OpCode.Add && !Object.hasOwn(obj, token)) return fail('path does not exist');
  const copy = own(obj, state);
  if (code === OpCode.Remove) delete copy[token];
  else copy[token] = value;
  return copy;
}

/** JSON equality (RFC 6902 `test`): member order does not matter, numbers compare by value. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const keys = Object.keys(ao);
  if (keys.length !== Object.keys(bo).length) return false;
  for (const key of keys) if (!Object.hasOwn(bo, key) || !jsonEqual(ao[key], bo[key])) return false;
  return true;
}

/** Applies patches in order to a plain value (validation and reference semantics); never mutates `value`. */
export function applyPatchToValue(value: unknown, patch: CompiledPatch, failure: string[] | null): unknown {
  return applyPatch(value, patch, newPatchState(), failure);
}
