/**
 * The condition operator language, defined once: every operator's name, the node kind it compiles
 * to and the shape its operand must have. Validation (validate.ts, at mapping put/import: every
 * problem with its path) and compilation (compile.ts: also what validation does not look into, the
 * operators inside `$all` members) both read this table and test operands with operandProblem, so
 * they cannot disagree on what exists or what an operand may be. `$regex`/`$options` are compiled in
 * one place too (regex.ts), through the Regex shape below.
 *
 * Deliberately absent: `$where` (code execution), `$mod`, `$type`, `$expr`, `$text`. An operator not
 * in the table is refused wherever it appears.
 */
import { isPlainObject } from '../problems.js';
import { parseAppVersion } from '../../shared/app-version.js';
import { compileRegexOperator } from './regex.js';

/** Operator node kinds. Small integers (not strings): the matchers dispatch on them per value (match.ts). */
export const enum OpKind {
  /** Implicit equality and $eq. */
  Eq = 0,
  Ne = 1,
  Gt = 2,
  Gte = 3,
  Lt = 4,
  Lte = 5,
  In = 6,
  Nin = 7,
  Exists = 8,
  Regex = 9,
  Size = 10,
  All = 11,
  ElemMatch = 12,
  Not = 13,
  And = 14,
  Or = 15,
  Nor = 16,
  /** $veq..$vlte; the node's VersionTest says which. */
  Version = 17,
  /** $options: no node of its own, it modifies the $regex beside it. */
  Options = 18,
}

/** The comparison a version operator applies to compare(value, target). */
export const enum VersionTest {
  Eq = 0,
  Ne = 1,
  Gt = 2,
  Gte = 3,
  Lt = 4,
  Lte = 5,
}

/** What an operand must be. */
export const enum Operand {
  /** Any JSON value ($eq, $ne). */
  Value,
  /** A number or a string ($gt, $gte, $lt, $lte): numbers compare with numbers, strings with strings. */
  NumberOrString,
  /** An array of values, none an object of operators ($in, $nin). */
  Values,
  /** An array of values or queries ($all). */
  Members,
  /** true or false ($exists). */
  Boolean,
  /** A pattern, with the $options beside it (regex.ts). */
  Regex,
  /** Flags, only next to $regex. */
  RegexOptions,
  /** A non-negative integer ($size). */
  Count,
  /** A non-empty object: a query on an element, or operators on it ($elemMatch). */
  Query,
  /** An object of operators ($not). */
  Operators,
  /** A non-empty array of conditions, each an object ($and, $or, $nor). */
  Conditions,
  /** A version string X.Y.Z ($veq..$vlte). */
  Version,
}

export interface OperatorSpec {
  readonly kind: OpKind;
  readonly operand: Operand;
  /** For Version operators; VersionTest.Eq otherwise (unused). */
  readonly versionTest: VersionTest;
}

function spec(kind: OpKind, operand: Operand, versionTest: VersionTest = VersionTest.Eq): OperatorSpec {
  return { kind, operand, versionTest };
}

/** The operators, by name. A Map: a name such as `toString` or `__proto__` is simply not in it. */
export const OPERATORS: ReadonlyMap<string, OperatorSpec> = new Map([
  ['$eq', spec(OpKind.Eq, Operand.Value)],
  ['$ne', spec(OpKind.Ne, Operand.Value)],
  ['$gt', spec(OpKind.Gt, Operand.NumberOrString)],
  ['$gte', spec(OpKind.Gte, Operand.NumberOrString)],
  ['$lt', spec(OpKind.Lt, Operand.NumberOrString)],
  ['$lte', spec(OpKind.Lte, Operand.NumberOrString)],
  ['$in', spec(OpKind.In, Operand.Values)],
  ['$nin', spec(OpKind.Nin, Operand.Values)],
  ['$all', spec(OpKind.All, Operand.Members)],
  ['$exists', spec(OpKind.Exists, Operand.Boolean)],
  ['$regex', spec(OpKind.Regex, Operand.Regex)],
  ['$options', spec(OpKind.Options, Operand.RegexOptions)],
  ['$size', spec(OpKind.Size, Operand.Count)],
  ['$elemMatch', spec(OpKind.ElemMatch, Operand.Query)],
  ['$not', spec(OpKind.Not, Operand.Operators)],
  ['$and', spec(OpKind.And, Operand.Conditions)],
  ['$or', spec(OpKind.Or, Operand.Conditions)],
  ['$nor', spec(OpKind.Nor, Operand.Conditions)],
  ['$veq', spec(OpKind.Version, Operand.Version, VersionTest.Eq)],
  ['$vne', spec(OpKind.Version, Operand.Version, VersionTest.Ne)],
  ['$vgt', spec(OpKind.Version, Operand.Version, VersionTest.Gt)],
  ['$vgte', spec(OpKind.Version, Operand.Version, VersionTest.Gte)],
  ['$vlt', spec(OpKind.Version, Operand.Version, VersionTest.Lt)],
  ['$vlte', spec(OpKind.Version, Operand.Version, VersionTest.Lte)],
]);

/** The operators allowed among the attribute names of a query (the top of `when`, an $elemMatch query). */
export function isLogicalOperator(name: string): boolean {
  return OPERATORS.get(name)?.operand === Operand.Conditions;
}

/** An object with at least one `$` key: operators on a value rather than a literal to compare with. */
export function hasOperatorKey(value: Record<string, unknown>): boolean {
  for (const key of Object.keys(value)) if (key.startsWith('$')) return true;
  return false;
}

/** An object of operators (as opposed to a literal object to compare with). */
export function isOperatorObject(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && hasOperatorKey(value);
}

/**
 * Why `operand` is not what operator `name` takes, or null when its shape is right. `owner` is the
 * object holding the operator (where $regex finds its $options). Checks the operand itself, not
 * inside it: the conditions and queries an operand holds are checked by the caller's own walk
 * (validation reports each with its path; compilation checks each as it compiles it).
 */
export function operandProblem(name: string, spec: OperatorSpec, operand: unknown, owner: Record<string, unknown>): string | null {
  switch (spec.operand) {
    case Operand.Value:
      return null;
    case Operand.NumberOrString:
      return typeof operand === 'number' || typeof operand === 'string' ? null : `${name} needs a number or a string`;
    case Operand.Values:
      if (!Array.isArray(operand)) return `${name} needs an array`;
      for (const member of operand as unknown[]) if (isOperatorObject(member)) return `operators are not allowed inside ${name}`;
      return null;
    case Operand.Members:
      return Array.isArray(operand) ? null : `${name} needs an array`;
    case Operand.Boolean:
      return typeof operand === 'boolean' ? null : `${name} needs true or false`;
    case Operand.Regex:
      return compileRegexOperator(owner).error;
    case Operand.RegexOptions:
      return Object.hasOwn(owner, '$regex') ? null : `${name} is only allowed next to $regex`;
    case Operand.Count:
      return typeof operand === 'number' && Number.isInteger(operand) && operand >= 0 ? null : `${name} needs a non-negative integer`;
    case Operand.Query:
      return isPlainObject(operand) && Object.keys(operand).length > 0 ? null : `${name} needs a non-empty object`;
    case Operand.Operators:
      return isOperatorObject(operand) ? null : `${name} needs an object of operators, e.g. {"${name}":{"$gt":5}}`;
    case Operand.Conditions:
      return Array.isArray(operand) && operand.length > 0 ? null : `${name} needs a non-empty array of conditions`;
    case Operand.Version:
      return typeof operand === 'string' && parseAppVersion(operand) !== null ? null : `${name} needs a version string X.Y.Z`;
  }
}

/**
 * Where operators may stand. A query (the top of `when`, a member of $and/$or/$nor, an $elemMatch
 * query) holds attribute names and the logical operators; an object of operators (on an attribute,
 * an $elemMatch element, $not) holds operators only.
 */
export function queryOperatorProblem(name: string): string {
  return `unknown operator ${name} (allowed here: $and, $or, $nor, or an attribute name)`;
}

export function mixedOperatorsProblem(key: string): string {
  return `"${key}" mixed with operators: use either operators or a literal value`;
}

/** What each member of a Conditions operand must be. */
export const CONDITION_MEMBER_PROBLEM = 'must be an object (a condition)';

/**
 * How an $elemMatch operand (and an $all member that is an object) is read: operators on the
 * element when it has operator keys and none of them is logical, else a query on the element.
 */
export function isOperatorsOnElement(operand: Record<string, unknown>): boolean {
  return hasOperatorKey(operand) && !Object.keys(operand).some(isLogicalOperator);
}
