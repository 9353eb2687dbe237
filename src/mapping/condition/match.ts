/**
 * Matching a compiled condition (nodes.ts) against p, per request. HOT PATH: allocation-free.
 *
 * Two matchers share the tree. The shortcut (matchQuery → matchField → matchPath/matchOps) answers
 * the common case directly: a path through plain objects, operators that test values. Everything
 * else takes the general walk (walk → visitField → feedOp), which reproduces sift's visiting order
 * with the nodes' mutable match state (done/keep), reset before each use: that is what lets one node
 * decide across all the values a path reaches (array elements) without allocating.
 *
 * Because of that state a compiled condition is not re-entrant: one evaluation must finish before
 * the next starts on the same tree. That holds because conditions are evaluated only on the delivery
 * thread (rules/evaluate.ts, per wrapped request), synchronously, and never call back into a
 * condition: one request's rules run to completion before the next request is looked at. Worker
 * threads compile mappings for their patches but never evaluate conditions; each thread compiles
 * its own tree, and a tree is never shared (it holds class instances and a compiled RE2 program).
 *
 * Semantics are sift's (the engine's reference, kept as the test oracle in
 * test/unit/mapping/condition/predicate.test.ts), i.e. MongoDB's, including the order in which a path
 * visits values (array elements first, then the array itself) and when an operator stops looking.
 * Where this evaluator deliberately differs from sift (documented in docs/api.md):
 * - only own properties are read: an attribute named like an inherited member (`toString`,
 *   `hasOwnProperty`) is missing, and strings and numbers are scalars (`s.0`, `s.length` are
 *   missing), arrays only have their elements (`tags.length` looks for `length` in the elements);
 * - literal objects compare by deep equality with the same key set (sift also treats a null member
 *   of the literal as equal to a missing key);
 * - `$all: []` matches nothing (sift: everything, even a missing attribute);
 * - `$all` members are values or queries made of the same operators as the rest of the language,
 *   never `$where`/`$mod`/`$type` (sift would compile and run `$where` code found there);
 * - `$regex` is RE2 (regex.ts: linear time, bounded pattern and input), not JavaScript's RegExp.
 *
 * Why our own evaluator: sift interprets a generic operation graph per call (closures per value,
 * `Object.prototype.toString` type checks, `comparable()` copying arrays), 0.7-1.3 µs for a 3-field
 * condition in bench/micro/mapping.ts; this one runs the same language 7-12x faster (~90-110 ns
 * there) and allocates nothing per call.
 */
import { isPlainObject } from '../problems.js';
import { readMember } from './member-read.js';
import { FastMode, type Field, type Op, type Query } from './nodes.js';
import { OpKind } from './operators.js';
import { beginEvaluation, compareTest, hasOwnKey, inList, isComparable, isPresentForSet, literalEquals, regexTest, versionTest } from './value-tests.js';

/** Whether the condition compiled to `root` matches p. */
export function evaluateCondition(root: Query, p: Record<string, unknown>): boolean {
  beginEvaluation();
  return matchQuery(root, p, undefined, undefined);
}

// ---------------------------------------------------------------------------------------------
// Per request. Indexed reads carry `!` where the loop bound is the array's length, or the depth is
// below the path's length (walk descends only while depth < segments.length; index and numeric have
// one entry per segment). Every function below is allocation-free; `key`/`owner` say where a value was read
// (its property name or element index, and the object or array it was read from), which some
// operators look at: a read of a non-element from an array is no value at all, and $exists asks
// whether the key is really there.
// ---------------------------------------------------------------------------------------------

/**
 * A query seen once on a fresh state: `when` on p, an $elemMatch query on one element. Fields
 * short-circuit (the first failing one decides) and take matchField's shortcuts where they apply.
 */
function matchQuery(query: Query, item: unknown, key: string | number | undefined, owner: unknown): boolean {
  const fields = query.fields;
  for (let i = 0; i < fields.length; i++) if (!matchField(fields[i]!, item, key, owner)) return false;
  return true;
}

/**
 * One field of a query on `item` (at `key` of `owner`, both undefined at the top of `when`), decided
 * from scratch. Also where generated code (emit.ts) hands over a field it does not inline.
 */
export function matchField(field: Field, item: unknown, key: string | number | undefined, owner: unknown): boolean {
  switch (field.fast) {
    case FastMode.Path:
      if (isPlainObject(item)) {
        const result = matchPath(field, item);
        if (result !== UNDECIDED) return result === MATCH;
      }
      break;
    case FastMode.Element:
      // An element of an array: there, present and comparable.
      if (typeof key === 'number') return matchOps(field.ops, item, true);
      break;
    case FastMode.Logic:
      if (isPlainObject(item)) return matchLogic(field.ops, item, key, owner);
      break;
    default:
  }
  resetField(field);
  walk(field, item, 0, key, owner, true);
  return field.keep;
}

const MATCH = 1;
const NO_MATCH = 0;
const UNDECIDED = -1;

/**
 * The path's value when every step is a plain object (own members only); UNDECIDED when it runs
 * into an array before its end, which the general walk handles (elements are searched there).
 */
function matchPath(field: Field, item: Record<string, unknown>): number {
  const segments = field.segments;
  const inherited = field.inherited;
  const sites = field.sites;
  const last = segments.length - 1;
  let current = item;
  let value: unknown = undefined;
  let present = false;
  for (let depth = 0; depth <= last; depth++) {
    const segment = segments[depth]!;
    // One keyed read where the member is found; the own-property test only where the read may have
    // found an inherited member (p is parsed JSON: plain objects over Object.prototype), so a segment
    // costs one read, not two. A read of undefined is a member that is not there: JSON holds no
    // undefined, as the generated tests (emit.ts) assume too, so no own-property test is needed then.
    value = readMember(current, segment, sites[depth]!);
    if (value === undefined) break;
    if (inherited[depth]! && !Object.hasOwn(current, segment)) {
      value = undefined;
      break;
    }
    if (depth === last) {
      present = true;
      break;
    }
    // A null on the way is the value the operators see (`{"a.b":null}` matches `{"a":null}`),
    // but nothing exists at the full path; a scalar on the way has no members.
    if (value === null) break;
    if (Array.isArray(value)) return UNDECIDED;
    if (typeof value !== 'object') {
      value = undefined;
      break;
    }
    current = value as Record<string, unknown>;
  }
  // sift settles $elemMatch on the first array among nested ones: the general walk knows that order.
  if (field.hasElemMatch && hasNestedArray(value)) return UNDECIDED;
  return matchOps(field.ops, value, present) ? MATCH : NO_MATCH;
}

/**
 * Every operator holds for the value at the end of a path (`present`: the key is really there).
 * An array value stands for itself and all its elements (nested ones too, as sift visits them).
 */
function matchOps(ops: readonly Op[], value: unknown, present: boolean): boolean {
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    switch (op.kind) {
      case OpKind.Exists:
        if (present !== op.flag) return false;
        break;
      case OpKind.Ne:
      case OpKind.Nin:
        if (anyValue(op, value)) return false;
        break;
      case OpKind.Not: {
        const inner = op.sub!.fields[0]!.ops; // FastMode.Path: a Not holds one field (nodes.ts, isValueTest)
        if (matchOps(inner, value, present)) return false;
        break;
      }
      case OpKind.ElemMatch:
        if (!elemMatchValue(op, value)) return false;
        break;
      default:
        if (!anyValue(op, value)) return false;
    }
  }
  return true;
}

function hasNestedArray(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (Array.isArray(value[i])) return true;
  return false;
}

/** $elemMatch on a path value without nested arrays: one element matches the whole query. */
function elemMatchValue(op: Op, value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  const sub = op.sub!;
  for (let i = 0; i < value.length; i++) if (matchQuery(sub, value[i], i, value)) return true;
  return false;
}

function anyValue(op: Op, value: unknown): boolean {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (anyValue(op, value[i])) return true;
  }
  return testValue(op, value);
}

/** The test of a value-testing operator on one value ($ne/$nin: the equality they negate). */
function testValue(op: Op, value: unknown): boolean {
  switch (op.kind) {
    case OpKind.Eq:
    case OpKind.Ne:
      return literalEquals(op.literal!, value);
    case OpKind.Gt:
    case OpKind.Gte:
    case OpKind.Lt:
    case OpKind.Lte:
      return compareTest(op.kind, value, op.operand);
    case OpKind.In:
    case OpKind.Nin:
      return inList(op.list, value);
    case OpKind.Regex:
      return typeof value === 'string' && regexTest(op, value);
    case OpKind.Size:
      return Array.isArray(value) && value.length === op.count;
    case OpKind.Version:
      return typeof value === 'string' && versionTest(op, value);
    default:
      return false;
  }
}

/** $and/$or/$nor on one object (each branch sees it once). */
function matchLogic(ops: readonly Op[], item: unknown, key: string | number | undefined, owner: unknown): boolean {
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    const subs = op.subs;
    if (op.kind === OpKind.And) {
      for (let j = 0; j < subs.length; j++) if (!matchQuery(subs[j]!, item, key, owner)) return false;
      continue;
    }
    let any = false;
    for (let j = 0; j < subs.length && !any; j++) any = matchQuery(subs[j]!, item, key, owner);
    if (any !== (op.kind === OpKind.Or)) return false;
  }
  return true;
}

function resetQuery(query: Query): void {
  query.done = false;
  query.keep = false;
  const fields = query.fields;
  for (let i = 0; i < fields.length; i++) resetField(fields[i]!);
}

function resetField(field: Field): void {
  field.done = false;
  field.keep = false;
  const ops = field.ops;
  for (let j = 0; j < ops.length; j++) resetOp(ops[j]!);
}

function resetOp(op: Op): void {
  op.done = false;
  // Negations hold until a value refutes them; $exists:false holds until a value turns up.
  op.keep = op.kind === OpKind.Exists ? !op.flag : op.flag;
  if (op.sub !== null) resetQuery(op.sub);
  const subs = op.subs;
  for (let i = 0; i < subs.length; i++) resetQuery(subs[i]!);
  // $all of nothing matches nothing: decided before any value is seen.
  if (op.kind === OpKind.All && subs.length === 0) op.done = true;
}

/** One more value for a query: every field not yet decided looks at it. */
function feedQuery(query: Query, item: unknown, key: string | number | undefined, owner: unknown, leaf: boolean): void {
  let done = true;
  let keep = true;
  const fields = query.fields;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (!field.done) walk(field, item, 0, key, owner, leaf);
    if (!field.keep) keep = false;
    if (field.done) {
      if (!field.keep) break;
    } else {
      done = false;
    }
  }
  query.done = done;
  query.keep = keep;
}

/**
 * Visits every value the field's path reaches from `item`, in sift's order: through an array the
 * remaining path is followed into each element first, then on the array itself (which is how
 * `{"tags":"vip"}` matches an element and `{"tags":["vip","new"]}` the whole array). A numeric
 * segment indexes an array instead. Returns true once the field is decided (stop walking).
 */
function walk(field: Field, item: unknown, depth: number, key: string | number | undefined, owner: unknown, leaf: boolean): boolean {
  const length = field.segments.length;
  if (Array.isArray(item) && (depth === length || !field.numeric[depth])) {
    for (let i = 0; i < item.length; i++) {
      if (walk(field, item[i], depth, i, item, leaf)) return true;
    }
  }
  if (depth === length || item === null || item === undefined) {
    // leaf is false when the path ended early on null/missing: nothing exists at the full path.
    visitField(field, item, key, owner, depth === length && (depth > 0 || leaf));
    return field.done;
  }
  return walk(field, childOf(field, item, depth), depth + 1, field.segments[depth], item, true);
}

/** Own members only: p comes from JSON.parse and may carry keys such as `__proto__`. */
function childOf(field: Field, item: unknown, depth: number): unknown {
  if (Array.isArray(item)) {
    const index = field.index[depth]!;
    return index >= 0 && index < item.length ? item[index] : undefined;
  }
  if (typeof item !== 'object') return undefined;
  const segment = field.segments[depth]!;
  return Object.hasOwn(item as object, segment) ? (item as Record<string, unknown>)[segment] : undefined;
}

function visitField(field: Field, item: unknown, key: string | number | undefined, owner: unknown, leaf: boolean): void {
  let done = true;
  let keep = true;
  const ops = field.ops;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (!op.done) feedOp(op, item, key, owner, leaf);
    if (!op.keep) keep = false;
    if (op.done) {
      if (!op.keep) break;
    } else {
      done = false;
    }
  }
  field.done = done;
  field.keep = keep;
}

function feedOp(op: Op, item: unknown, key: string | number | undefined, owner: unknown, leaf: boolean): void {
  switch (op.kind) {
    case OpKind.Eq:
      if (isComparable(key, owner) && literalEquals(op.literal!, item)) decide(op, true);
      return;
    case OpKind.Ne:
      if (isPresentForSet(key, owner) && literalEquals(op.literal!, item)) decide(op, false);
      return;
    case OpKind.Gt:
    case OpKind.Gte:
    case OpKind.Lt:
    case OpKind.Lte:
      if (isComparable(key, owner) && compareTest(op.kind, item, op.operand)) decide(op, true);
      return;
    case OpKind.In:
      if (isPresentForSet(key, owner) && inList(op.list, item)) decide(op, true);
      return;
    case OpKind.Nin:
      if (isPresentForSet(key, owner) && inList(op.list, item)) decide(op, false);
      return;
    case OpKind.Exists:
      if (leaf && hasOwnKey(owner, key, item)) decide(op, op.flag);
      return;
    case OpKind.Regex:
      if (isComparable(key, owner) && typeof item === 'string' && regexTest(op, item)) decide(op, true);
      return;
    case OpKind.Size:
      if (Array.isArray(item) && item.length === op.count) decide(op, true);
      return;
    case OpKind.Version:
      if (isComparable(key, owner) && typeof item === 'string' && versionTest(op, item)) decide(op, true);
      return;
    case OpKind.All:
      feedAll(op, item, key, owner, leaf);
      return;
    case OpKind.ElemMatch:
      feedElemMatch(op, item, owner);
      return;
    case OpKind.Not: {
      const sub = op.sub!;
      feedQuery(sub, item, key, owner, leaf);
      op.done = sub.done;
      op.keep = !sub.keep;
      return;
    }
    case OpKind.And:
      feedAll(op, item, key, owner, leaf);
      return;
    default:
      feedOr(op, item, key, owner, leaf);
  }
}

function decide(op: Op, keep: boolean): void {
  op.done = true;
  op.keep = keep;
}

/** $all and $and: every member query holds (each may be satisfied by a different value). */
function feedAll(op: Op, item: unknown, key: string | number | undefined, owner: unknown, leaf: boolean): void {
  let done = true;
  let keep = true;
  const subs = op.subs;
  for (let i = 0; i < subs.length; i++) {
    const sub = subs[i]!;
    if (!sub.done) feedQuery(sub, item, key, owner, leaf);
    if (!sub.keep) keep = false;
    if (sub.done) {
      if (!sub.keep) break;
    } else {
      done = false;
    }
  }
  op.done = done;
  op.keep = keep;
}

/** $or/$nor: decided by the first value on which a branch holds. */
function feedOr(op: Op, item: unknown, key: string | number | undefined, owner: unknown, leaf: boolean): void {
  let success = false;
  const subs = op.subs;
  for (let i = 0; i < subs.length; i++) {
    const sub = subs[i]!;
    feedQuery(sub, item, key, owner, leaf);
    if (sub.keep) {
      success = true;
      break;
    }
  }
  op.done = success;
  op.keep = op.kind === OpKind.Nor ? !success : success;
}

/**
 * One element must match the whole query. An array read from an object member may be one of
 * several candidates (`a.b` over the elements of a), so a miss keeps looking; an array nested in an
 * array (or the root) settles it, as in sift.
 */
function feedElemMatch(op: Op, item: unknown, owner: unknown): void {
  if (!Array.isArray(item)) {
    op.done = false;
    op.keep = false;
    return;
  }
  const sub = op.sub!;
  for (let i = 0; i < item.length; i++) {
    if (matchQuery(sub, item[i], i, item)) {
      op.keep = true;
      break;
    }
  }
  op.done = op.keep || !isPlainObject(owner);
}

