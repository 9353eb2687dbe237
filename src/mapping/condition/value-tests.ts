/**
 * The tests an operator applies to one value: equality (scalar, null and deep), ordering, list
 * membership, the X.Y.Z version comparison, `$regex` within its read budget, and whether a value read
 * from an array or object counts as present. Shared by both
 * matchers (match.ts). HOT PATH: every function here is allocation-free.
 */
import { APP_VERSION_PATTERN } from '../../shared/app-version.js';
import { LiteralKind, arrayIndexOf, type Literal, type Op } from './nodes.js';
import { OpKind, VersionTest } from './operators.js';
import { MAX_REGEX_INPUT, MAX_REGEX_SCAN, regexMatches } from './regex.js';

/**
 * Numbers the evaluations, so that each `$regex` op's read budget starts afresh in a new one
 * without a pass over the tree to reset it (a double: exact far beyond any process's lifetime).
 */
let evaluation = 0;

/** Called once at the start of every evaluation of a condition (match.ts, evaluate). */
export function beginEvaluation(): void {
  evaluation++;
}

/**
 * One `$regex` test within the op's read budget: a string over MAX_REGEX_INPUT is not read and does
 * not match; the strings an op reads in one evaluation (array elements one by one) add up to at most
 * MAX_REGEX_SCAN characters, and once a string would go past that, it and every later one do not
 * match. This is what bounds one request's regex work when p holds arrays of long strings: each
 * test is linear, but a 64 KiB body of 1 KiB strings would otherwise be 64 of them per op.
 */
export function regexTest(op: Op, value: string): boolean {
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
  return regexMatches(op.regex!, value); // a Regex op always holds its compiled pattern
}

// Where a value was read (`key` in `owner`, as the general walk passes them) decides whether some
// operators see it at all: a non-element member of an array is no value, $exists asks whether the key
// is really there.

/** True when `owner[key]` is really there (an element of an array, an own member of an object). */
export function hasOwnKey(owner: unknown, key: string | number | undefined, item: unknown): boolean {
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
export function isComparable(key: string | number | undefined, owner: unknown): boolean {
  return !Array.isArray(owner) || typeof key === 'number' || (key !== undefined && isElementKey(owner, key));
}

/** As isComparable, but $ne/$in/$nin (as in sift) also look at a numeric key beyond an array's end. */
export function isPresentForSet(key: string | number | undefined, owner: unknown): boolean {
  return !Array.isArray(owner) || typeof key === 'number' || (key !== undefined && !Number.isNaN(Number(key)));
}

/** $gt/$gte/$lt/$lte (`kind`) of `item` against the operand. */
export function compareTest(kind: OpKind, item: unknown, operand: number | string): boolean {
  // Numbers compare with numbers and strings with strings, never across types.
  if (typeof item !== typeof operand) return false;
  const value = item as number | string;
  switch (kind) {
    case OpKind.Gt:
      return value > operand;
    case OpKind.Gte:
      return value >= operand;
    case OpKind.Lt:
      return value < operand;
    default:
      return value <= operand;
  }
}

export function inList(list: readonly Literal[], item: unknown): boolean {
  for (let i = 0; i < list.length; i++) if (literalEquals(list[i]!, item)) return true;
  return false;
}

export function literalEquals(literal: Literal, item: unknown): boolean {
  if (literal.kind === LiteralKind.Scalar) return item === literal.value;
  if (literal.kind === LiteralKind.Null) return item === null || item === undefined;
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
 * X.Y.Z compared with the op's target without building a tuple: the grammar is the project-wide one
 * (APP_VERSION_PATTERN, src/shared/app-version.ts; `test` allocates no match array), then one scan of
 * the three digit runs.
 */
export function versionTest(op: Op, text: string): boolean {
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
  switch (op.versionTest) {
    case VersionTest.Eq:
      return cmp === 0;
    case VersionTest.Ne:
      return cmp !== 0;
    case VersionTest.Gt:
      return cmp > 0;
    case VersionTest.Gte:
      return cmp >= 0;
    case VersionTest.Lt:
      return cmp < 0;
    default:
      return cmp <= 0;
  }
}
