/**
 * Our own compiled evaluator for rule conditions (`when`), replacing sift on the hot path.
 *
 * Why: sift interprets a generic operation graph per call (closures per value, `Object.prototype
 * .toString` type checks, `comparable()` copying arrays), 0.7-1.3 µs for a 3-field condition in
 * bench/micro/mapping.ts; this evaluator runs the same language 7-12x faster (~90-110 ns there)
 * and allocates nothing per call.
 *
 * Shape: a condition compiles once into a tree of plain nodes (Query → Field → Op, Ops holding
 * sub-Queries for $elemMatch/$not/$all/$and/$or/$nor), each kind with one fixed object shape; the
 * per-request side is a handful of top-level functions that switch on the node kind. The common
 * case (a path through plain objects, operators that test values) is answered directly by
 * matchPath. Everything else takes the general walk, which reproduces sift's visiting order with
 * a small mutable match state (done/keep) in the nodes, reset before each use: that is what lets
 * one node decide across all the values a path reaches (array elements) without allocating. A
 * compiled condition is therefore not re-entrant, which is fine: a worker thread runs one request
 * at a time and never evaluates a condition from inside itself.
 *
 * Semantics are sift's (the engine's reference, kept as the test oracle in
 * test/unit/mapping/condition/predicate.test.ts), i.e. MongoDB's, including the order in which a path visits
 * values (array elements first, then the array itself) and when an operator stops looking. Where
 * this evaluator deliberately differs from sift (documented in docs/api.md):
 * - only own properties are read: an attribute named like an inherited member (`toString`,
 *   `hasOwnProperty`) is missing, and strings and numbers are scalars (`s.0`, `s.length` are
 *   missing), arrays only have their elements (`tags.length` looks for `length` in the elements);
 * - literal objects compare by deep equality with the same key set (sift also treats a null member
 *   of the literal as equal to a missing key);
 * - `$all: []` matches nothing (sift: everything, even a missing attribute);
 * - `$all` members are values or queries made of the same operators as the rest of the language,
 *   never `$where`/`$mod`/`$type` (sift would compile and run `$where` code found there);
 * - `$regex` is RE2 (regex.ts: linear time, bounded pattern and input), not JavaScript's RegExp.
 */
import { RcdError } from '../../runtime/errors.js';
import { APP_VERSION_PATTERN } from '../../shared/app-version.js';
import { isPlainObject } from '../problems.js';
import { MAX_REGEX_INPUT, MAX_REGEX_SCAN, compileRegexOperator, regexMatches, type CompiledRegex } from './regex.js';
import { parseAppVersion } from '../../shared/app-version.js';

/** A compiled condition: true when the rule's `when` matches p. */
export type Predicate = (p: Record<string, unknown>) => boolean;

// Op kinds. Numbers (not strings) so that the dispatch switch compiles to a jump table.
const EQ = 0; // implicit equality and $eq
const NE = 1;
const GT = 2;
const GTE = 3;
const LT = 4;
const LTE = 5;
const IN = 6;
const NIN = 7;
const EXISTS = 8;
const REGEX = 9;
const SIZE = 10;
const ALL = 11;
const ELEM_MATCH = 12;
const NOT = 13;
const AND = 14;
const OR = 15;
const NOR = 16;
const VERSION = 17; // $veq..$vlte, `vtest` says which

// How an equality literal is tested: specialised at compile time so the common scalar case is `===`.
const LIT_NULL = 0; // matches null and a missing value
const LIT_SCALAR = 1; // string, number, boolean: ===
const LIT_DEEP = 2; // array or object: deep equality

// Version tests, applied to compare(value, target).
const V_EQ = 0;
const V_NE = 1;
const V_GT = 2;
const V_GTE = 3;
const V_LT = 4;
const V_LTE = 5;
const VERSION_TEST_OF: Readonly<Record<string, number>> = { $veq: V_EQ, $vne: V_NE, $vgt: V_GT, $vgte: V_GTE, $vlt: V_LT, $vlte: V_LTE };

/** An equality literal with its test kind; $in/$nin hold a list of them. */
class Literal {
  readonly kind: number;
  readonly value: unknown;
  constructor(value: unknown) {
    this.kind = value === null ? LIT_NULL : typeof value === 'object' ? LIT_DEEP : LIT_SCALAR;
    this.value = value;
  }
}

/**
 * One operator on the values a path reaches. Every kind uses the same fields (unused ones null or
 * 0) so that all Ops share one hidden class and the dispatch stays monomorphic.
 */
class Op {
  kind: number;
  done = false;
  keep = false;
  /** EQ/NE literal; the operand of $gt..$lte. */
  literal: Literal | null = null;
  operand: number | string = 0;
  /** IN/NIN literals. */
  list: readonly Literal[] = [];
  /** EXISTS operand, or the result an undecided op starts from (NE/NIN: true). */
  flag = false;
  regex: CompiledRegex | null = null;
  /** REGEX: characters it may still read in evaluation number `scanEvaluation` (see regexTest). */
  scanLeft = 0;
  scanEvaluation = -1;
  /** SIZE length; VERSION test (V_*). */
  count = 0;
  /** VERSION target. */
  major = 0;
  minor = 0;
  patch = 0;
  /** ELEM_MATCH/NOT operand. */
  sub: Query | null = null;
  /** ALL members; AND/OR/NOR branches. */
  subs: readonly Query[] = [];
  constructor(kind: number) {
    this.kind = kind;
  }
}

/**
 * The operators on one attribute path (segments of `a.b.c`; no segments: the value itself, as for
 * $elemMatch/$not operands and logical operators). `index[d]` is segment d as an array index (-1:
 * not one) and `numeric[d]` whether it reads as a number at all, which is what decides between
 * indexing an array and searching its elements.
 */
class Field {
  done = false;
  keep = false;
  readonly segments: readonly string[];
  readonly index: readonly number[];
  readonly numeric: readonly boolean[];
  readonly ops: readonly Op[];
  /** Which shortcut of matchField applies (FAST_*), decided from the operators at compile time. */
  readonly fast: number;
  readonly hasElemMatch: boolean;
  constructor(segments: readonly string[], ops: readonly Op[]) {
    this.segments = segments;
    this.index = segments.map(arrayIndexOf);
    this.numeric = segments.map((s) => !Number.isNaN(Number(s)));
    this.ops = ops;
    this.fast = fastModeOf(segments, ops);
    this.hasElemMatch = ops.some((op) => op.kind === ELEM_MATCH);
  }
}

// matchField shortcuts. The general walk (walk/visitField/feedOp) reproduces sift's visiting order
// and per-operator state; when the path only crosses plain objects and the operators are plain
// tests, the result reduces to "some value on the path passes" per operator, computed directly.
const FAST_NONE = 0;
const FAST_PATH = 1; // a path, operators that test values (incl. $not of such, $elemMatch)
const FAST_ELEMENT = 2; // no path, operators that test values: $elemMatch operators on an element
const FAST_LOGIC = 3; // no path, only $and/$or/$nor: the top of `when` or of an $elemMatch query

function isValueTest(op: Op): boolean {
  switch (op.kind) {
    case ALL:
    case AND:
    case OR:
    case NOR:
      return false;
    case ELEM_MATCH:
      return true;
    case NOT: {
      const fields = (op.sub as Query).fields;
      return fields.length === 1 && fields[0].segments.length === 0 && fields[0].ops.every(isPlainTest);
    }
    default:
      return true;
  }
}

/** A test of one value at a time, no sub-query. */
function isPlainTest(op: Op): boolean {
  return op.kind !== ALL && op.kind !== AND && op.kind !== OR && op.kind !== NOR && op.kind !== ELEM_MATCH && op.kind !== NOT;
}

function fastModeOf(segments: readonly string[], ops: readonly Op[]): number {
  if (ops.length === 0) return FAST_NONE;
  if (segments.length > 0) return ops.every(isValueTest) ? FAST_PATH : FAST_NONE;
  if (ops.every(isPlainTest)) return FAST_ELEMENT;
  if (ops.every((op) => op.kind === AND || op.kind === OR || op.kind === NOR)) return FAST_LOGIC;
  return FAST_NONE;
}

/** A query (`when`, an $elemMatch query, a branch of $and/$or/$nor, an $all member): all fields match. */
class Query {
  done = false;
  keep = false;
  readonly fields: readonly Field[];
  constructor(fields: readonly Field[]) {
    this.fields = fields;
  }
}

function arrayIndexOf(segment: string): number {
  // Only the canonical spelling names an element ("01" and "1e0" are other keys).
  if (!/^(0|[1-9]\d{0,8})$/.test(segment)) return -1;
  return Number(segment);
}

function compileError(message: string): RcdError {
  return new RcdError('invalid_mapping', message);
}

// ---------------------------------------------------------------------------------------------
// Compile time
// ---------------------------------------------------------------------------------------------

/**
 * Compiles a condition that passed validation (validate.ts). Throws RcdError invalid_mapping for
 * what validation does not look into (operators inside $all members, operator objects in $in).
 */
export function compilePredicate(when: Record<string, unknown>): Predicate {
  const root = compileQuery(when);
  return (p: Record<string, unknown>): boolean => evaluate(root, p);
}

/**
 * Numbers the evaluations, so that each `$regex` op's read budget starts afresh in a new one
 * without a pass over the tree to reset it (a double: exact far beyond any process's lifetime).
 */
let evaluation = 0;

function evaluate(root: Query, p: Record<string, unknown>): boolean {
  evaluation++;
  return matchQuery(root, p, undefined, undefined);
}

/** sift's rule: a member that is not an object or array is a value to compare with. */
function compileQueryOrValue(value: unknown): Query {
  if (typeof value === 'object' && value !== null) return compileQuery(value as Record<string, unknown>);
  const op = new Op(EQ);
  op.literal = new Literal(value);
  return new Query([new Field([], [op])]);
}

function compileQuery(query: Record<string, unknown>): Query {
  const own: Op[] = [];
  const fields: Field[] = [];
  for (const key of Object.keys(query)) {
    if (key.startsWith('$')) {
      const op = compileOperator(key, query[key], query);
      if (op !== null) own.push(op);
    } else {
      fields.push(compileField(key.split('.'), query[key]));
    }
  }
  // Operators on the value itself come first, as in sift (it only affects which is tried first).
  if (own.length > 0) fields.unshift(new Field([], own));
  return new Query(fields);
}

function hasOperatorKey(value: Record<string, unknown>): boolean {
  for (const key of Object.keys(value)) if (key.startsWith('$')) return true;
  return false;
}

function compileField(segments: string[], condition: unknown): Field {
  if (!isPlainObject(condition) || !hasOperatorKey(condition)) {
    const op = new Op(EQ);
    op.literal = new Literal(condition);
    return new Field(segments, [op]);
  }
  const ops: Op[] = [];
  for (const key of Object.keys(condition)) {
    if (!key.startsWith('$')) throw compileError(`"${key}" mixed with operators`);
    const op = compileOperator(key, condition[key], condition);
    if (op !== null) ops.push(op);
  }
  return new Field(segments, ops);
}

function literalList(name: string, operand: unknown): Literal[] {
  if (!Array.isArray(operand)) throw compileError(`${name} needs an array`);
  return operand.map((value: unknown) => {
    if (isPlainObject(value) && hasOperatorKey(value)) throw compileError(`operators are not allowed inside ${name}`);
    return new Literal(value);
  });
}

function queryList(name: string, operand: unknown): Query[] {
  if (!Array.isArray(operand)) throw compileError(`${name} needs an array`);
  return operand.map(compileQueryOrValue);
}

/** null for `$options`, which only modifies `$regex` beside it. */
function compileOperator(name: string, operand: unknown, owner: Record<string, unknown>): Op | null {
  switch (name) {
    case '$eq':
    case '$ne': {
      const op = new Op(name === '$eq' ? EQ : NE);
      op.literal = new Literal(operand);
      op.flag = name === '$ne';
      return op;
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      if (typeof operand !== 'number' && typeof operand !== 'string') throw compileError(`${name} needs a number or a string`);
      const op = new Op(name === '$gt' ? GT : name === '$gte' ? GTE : name === '$lt' ? LT : LTE);
      op.operand = operand;
      return op;
    }
    case '$in':
    case '$nin': {
      const op = new Op(name === '$in' ? IN : NIN);
      op.list = literalList(name, operand);
      op.flag = name === '$nin';
      return op;
    }
    case '$exists': {
      if (typeof operand !== 'boolean') throw compileError('$exists needs true or false');
      const op = new Op(EXISTS);
      op.flag = operand;
      return op;
    }
    case '$regex': {
      // Compiled by the function validation uses (validate.ts): what was accepted compiles, and
      // matches, exactly as validated.
      const compiled = compileRegexOperator(owner);
      if (compiled.regex === null) throw compileError(compiled.error);
      const op = new Op(REGEX);
      op.regex = compiled.regex;
      return op;
    }
    case '$options':
      return null;
    case '$size': {
      if (typeof operand !== 'number') throw compileError('$size needs a non-negative integer');
      const op = new Op(SIZE);
      op.count = operand;
      return op;
    }
    case '$all': {
      const op = new Op(ALL);
      op.subs = queryList(name, operand);
      return op;
    }
    case '$elemMatch':
    case '$not': {
      if (!isPlainObject(operand)) throw compileError(`${name} needs an object`);
      const op = new Op(name === '$not' ? NOT : ELEM_MATCH);
      op.sub = compileQuery(operand);
      return op;
    }
    case '$and':
    case '$or':
    case '$nor': {
      const op = new Op(name === '$and' ? AND : name === '$or' ? OR : NOR);
      op.subs = queryList(name, operand);
      if (op.subs.length === 0) throw compileError(`${name} needs a non-empty array of conditions`);
      return op;
    }
    default: {
      const test = VERSION_TEST_OF[name];
      if (test === undefined || !Object.hasOwn(VERSION_TEST_OF, name)) throw compileError(`unknown operator ${name}`);
      const target = typeof operand === 'string' ? parseAppVersion(operand) : null;
      if (target === null) throw compileError(`${name} needs a version string X.Y.Z`);
      const op = new Op(VERSION);
      op.count = test;
      op.major = target[0];
      op.minor = target[1];
      op.patch = target[2];
      return op;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Per request. Every function below is allocation-free; `key`/`owner` say where a value was read
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
  for (let i = 0; i < fields.length; i++) if (!matchField(fields[i], item, key, owner)) return false;
  return true;
}

function matchField(field: Field, item: unknown, key: string | number | undefined, owner: unknown): boolean {
  switch (field.fast) {
    case FAST_PATH:
      if (isPlainObject(item)) {
        const result = matchPath(field, item);
        if (result !== UNDECIDED) return result === MATCH;
      }
      break;
    case FAST_ELEMENT:
      // An element of an array: there, present and comparable.
      if (typeof key === 'number') return matchOps(field.ops, item, true);
      break;
    case FAST_LOGIC:
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
  const last = segments.length - 1;
  let current = item;
  let value: unknown = undefined;
  let present = false;
  for (let depth = 0; depth <= last; depth++) {
    const segment = segments[depth];
    if (!Object.hasOwn(current, segment)) {
      value = undefined;
      break;
    }
    value = current[segment];
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
    const op = ops[i];
    switch (op.kind) {
      case EXISTS:
        if (present !== op.flag) return false;
        break;
      case NE:
      case NIN:
        if (anyValue(op, value)) return false;
        break;
      case NOT: {
        const inner = (op.sub as Query).fields[0].ops;
        if (matchOps(inner, value, present)) return false;
        break;
      }
      case ELEM_MATCH:
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
  const sub = op.sub as Query;
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
    case EQ:
    case NE:
      return literalEquals(op.literal as Literal, value);
    case GT:
    case GTE:
    case LT:
    case LTE:
      return compareTest(op.kind, value, op.operand);
    case IN:
    case NIN:
      return inList(op.list, value);
    case REGEX:
      return typeof value === 'string' && regexTest(op, value);
    case SIZE:
      return Array.isArray(value) && value.length === op.count;
    case VERSION:
      return typeof value === 'string' && versionTest(op, value);
    default:
      return false;
  }
}

/** $and/$or/$nor on one object (each branch sees it once). */
function matchLogic(ops: readonly Op[], item: unknown, key: string | number | undefined, owner: unknown): boolean {
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    const subs = op.subs;
    if (op.kind === AND) {
      for (let j = 0; j < subs.length; j++) if (!matchQuery(subs[j], item, key, owner)) return false;
      continue;
    }
    let any = false;
    for (let j = 0; j < subs.length && !any; j++) any = matchQuery(subs[j], item, key, owner);
    if (any !== (op.kind === OR)) return false;
  }
  return true;
}

function resetQuery(query: Query): void {
  query.done = false;
  query.keep = false;
  const fields = query.fields;
  for (let i = 0; i < fields.length; i++) resetField(fields[i]);
}

function resetField(field: Field): void {
  field.done = false;
  field.keep = false;
  const ops = field.ops;
  for (let j = 0; j < ops.length; j++) resetOp(ops[j]);
}

function resetOp(op: Op): void {
  op.done = false;
  // Negations hold until a value refutes them; $exists:false holds until a value turns up.
  op.keep = op.kind === EXISTS ? !op.flag : op.flag;
  if (op.sub !== null) resetQuery(op.sub);
  const subs = op.subs;
  for (let i = 0; i < subs.length; i++) resetQuery(subs[i]);
  // $all of nothing matches nothing: decided before any value is seen.
  if (op.kind === ALL && subs.length === 0) op.done = true;
}

/** One more value for a query: every field not yet decided looks at it. */
function feedQuery(query: Query, item: unknown, key: string | number | undefined, owner: unknown, leaf: boolean): void {
  let done = true;
  let keep = true;
  const fields = query.fields;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i];
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
    const index = field.index[depth];
    return index >= 0 && index < item.length ? item[index] : undefined;
  }
  if (typeof item !== 'object') return undefined;
  const segment = field.segments[depth];
  return Object.hasOwn(item as object, segment) ? (item as Record<string, unknown>)[segment] : undefined;
}

function visitField(field: Field, item: unknown, key: string | number | undefined, owner: unknown, leaf: boolean): void {
  let done = true;
  let keep = true;
  const ops = field.ops;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
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

/** True when `owner[key]` is really there (an element of an array, an own member of an object). */
function hasOwnKey(owner: unknown, key: string | number | undefined, item: unknown): boolean {
  if (owner === null || owner === undefined) return item !== undefined;
  if (Array.isArray(owner)) return typeof key === 'number' || (key !== undefined && isElementKey(owner, key));
  if (typeof owner !== 'object' || key === undefined) return false;
  return Object.hasOwn(owner, key);
}

function isElementKey(array: unknown[], key: string): boolean {
  const index = arrayIndexOf(key);
  return index >= 0 && index < array.length;
}

/** A value comparisons look at: not the (always missing) non-element member of an array. */
function isComparable(key: string | number | undefined, owner: unknown): boolean {
  return !Array.isArray(owner) || typeof key === 'number' || (key !== undefined && isElementKey(owner, key));
}

/** As isComparable, but $ne/$in/$nin (as in sift) also look at a numeric key beyond an array's end. */
function isPresentForSet(key: string | number | undefined, owner: unknown): boolean {
  return !Array.isArray(owner) || typeof key === 'number' || (key !== undefined && !Number.isNaN(Number(key)));
}

function feedOp(op: Op, item: unknown, key: string | number | undefined, owner: unknown, leaf: boolean): void {
  switch (op.kind) {
    case EQ:
      if (isComparable(key, owner) && literalEquals(op.literal as Literal, item)) decide(op, true);
      return;
    case NE:
      if (isPresentForSet(key, owner) && literalEquals(op.literal as Literal, item)) decide(op, false);
      return;
    case GT:
    case GTE:
    case LT:
    case LTE:
      if (isComparable(key, owner) && compareTest(op.kind, item, op.operand)) decide(op, true);
      return;
    case IN:
      if (isPresentForSet(key, owner) && inList(op.list, item)) decide(op, true);
      return;
    case NIN:
      if (isPresentForSet(key, owner) && inList(op.list, item)) decide(op, false);
      return;
    case EXISTS:
      if (leaf && hasOwnKey(owner, key, item)) decide(op, op.flag);
      return;
    case REGEX:
      if (isComparable(key, owner) && typeof item === 'string' && regexTest(op, item)) decide(op, true);
      return;
    case SIZE:
      if (Array.isArray(item) && item.length === op.count) decide(op, true);
      return;
    case VERSION:
      if (isComparable(key, owner) && typeof item === 'string' && versionTest(op, item)) decide(op, true);
      return;
    case ALL:
      feedAll(op, item, key, owner, leaf);
      return;
    case ELEM_MATCH:
      feedElemMatch(op, item, owner);
      return;
    case NOT: {
      const sub = op.sub as Query;
      feedQuery(sub, item, key, owner, leaf);
      op.done = sub.done;
      op.keep = !sub.keep;
      return;
    }
    case AND:
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
    const sub = subs[i];
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
    const sub = subs[i];
    feedQuery(sub, item, key, owner, leaf);
    if (sub.keep) {
      success = true;
      break;
    }
  }
  op.done = success;
  op.keep = op.kind === NOR ? !success : success;
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
  const sub = op.sub as Query;
  for (let i = 0; i < item.length; i++) {
    if (matchQuery(sub, item[i], i, item)) {
      op.keep = true;
      break;
    }
  }
  op.done = op.keep || !isPlainObject(owner);
}

/**
 * One `$regex` test within the op's read budget: a string over MAX_REGEX_INPUT is not read and does
 * not match; the strings an op reads in one evaluation (array elements one by one) add up to at most
 * MAX_REGEX_SCAN characters, and once a string would go past that, it and every later one do not
 * match. This is what bounds one request's regex work when p holds arrays of long strings: each
 * test is linear, but a 64 KiB body of 1 KiB strings would otherwise be 64 of them per op.
 */
function regexTest(op: Op, value: string): boolean {
  if (op.scanEvaluation !== evaluation) {
    op.scanEvaluation = evaluation;
    op.scanLeft = MAX_REGEX_SCAN;
  }
  const length = value.length;
  if (length > MAX_REGEX_INPUT) return false;
  if (length > op.scanLeft) {
    op.scanLeft = 0;
    return false;
  }
  op.scanLeft -= length;
  return regexMatches(op.regex as CompiledRegex, value);
}

function compareTest(kind: number, item: unknown, operand: number | string): boolean {
  // Numbers compare with numbers and strings with strings, never across types.
  if (typeof item !== typeof operand) return false;
  const value = item as number | string;
  switch (kind) {
    case GT:
      return value > operand;
    case GTE:
      return value >= operand;
    case LT:
      return value < operand;
    default:
      return value <= operand;
  }
}

function inList(list: readonly Literal[], item: unknown): boolean {
  for (let i = 0; i < list.length; i++) if (literalEquals(list[i], item)) return true;
  return false;
}

function literalEquals(literal: Literal, item: unknown): boolean {
  if (literal.kind === LIT_SCALAR) return item === literal.value;
  if (literal.kind === LIT_NULL) return item === null || item === undefined;
  return deepEquals(literal.value, item);
}

/** JSON deep equality; literal is from the condition, value from p (own members only). */
function deepEquals(literal: unknown, value: unknown): boolean {
  if (literal === value) return true;
  if (literal === null || typeof literal !== 'object') return false;
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(literal)) {
    if (!Array.isArray(value) || value.length !== literal.length) return false;
    for (let i = 0; i < literal.length; i++) if (!deepEqualsMember(literal[i], value[i])) return false;
    return true;
  }
  if (Array.isArray(value)) return false;
  const a = literal as Record<string, unknown>;
  const b = value as Record<string, unknown>;
  let count = 0;
  for (const k in a) {
    if (!Object.hasOwn(a, k)) continue;
    if (!Object.hasOwn(b, k) || !deepEqualsMember(a[k], b[k])) return false;
    count++;
  }
  // Same key count and every literal key present: the same key set. Counted without Object.keys
  // so that nothing is allocated.
  for (const k in b) if (Object.hasOwn(b, k)) count--;
  return count === 0;
}

/** Inside a literal, null equals null (a missing member was already refused above). */
function deepEqualsMember(literal: unknown, value: unknown): boolean {
  if (literal === null) return value === null;
  return deepEquals(literal, value);
}

/**
 * X.Y.Z compared with the target without building a tuple: the grammar is the project-wide one
 * (APP_VERSION_PATTERN, src/shared/app-version.ts; `test` allocates no match array), then one scan of the
 * three digit runs.
 */
function versionTest(op: Op, text: string): boolean {
  if (!APP_VERSION_PATTERN.test(text)) return false;
  let component = 0;
  let value = 0;
  let cmp = 0;
  for (let i = 0; i <= text.length && cmp === 0; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 46; // the end closes the last component
    if (c !== 46) {
      value = value * 10 + (c - 48);
      continue;
    }
    const target = component === 0 ? op.major : component === 1 ? op.minor : op.patch;
    cmp = value < target ? -1 : value > target ? 1 : 0;
    component++;
    value = 0;
  }
  switch (op.count) {
    case V_EQ:
      return cmp === 0;
    case V_NE:
      return cmp !== 0;
    case V_GT:
      return cmp > 0;
    case V_GTE:
      return cmp >= 0;
    case V_LT:
      return cmp < 0;
    default:
      return cmp <= 0;
  }
}
