/**
 * Rule conditions (`when`): a MongoDB-style query on the user attributes p.
 *
 * Validation is ours and strict (an allow-list of operators and operand shapes): the format offers
 * no `$where` (code execution), `$mod` or `$type`. Evaluation is our own compiled evaluator
 * (predicate.ts): sift, which implements the same language, costs ~500 ns for a 3-field condition
 * against a few tens of ns for the compiled tree, and conditions run for every rule of every
 * wrapped request. sift stays the reference the evaluator is tested against.
 *
 * Semantics worth knowing (documented in docs/api.md): a missing attribute never matches a positive
 * comparison ($eq with a non-null value, $gt.., $in, $regex, $size, $all, $elemMatch, $v..); negations
 * ($ne, $nin, $not, $nor, $exists:false) match a missing attribute as in MongoDB; `{"a":null}` matches
 * a missing a. Version operators ($vne included) never match a missing or non-X.Y.Z attribute. Only
 * own members of p are read (see predicate.ts for the few places where that differs from sift).
 * `$regex` is RE2 syntax and semantics, compiled by regex.ts for validation and evaluation alike.
 */
import { RcdError } from '../../runtime/errors.js';
import { compilePredicate, type Predicate } from './predicate.js';
import { FORBIDDEN_KEYS, childPath, findForbiddenKeys, isPlainObject, type MappingProblem } from '../problems.js';
import { compileRegexOperator } from './regex.js';
import { parseAppVersion } from '../../shared/app-version.js';

export type { Predicate } from './predicate.js';

const MAX_DEPTH = 32;

const COMPARISON_OPS = new Set(['$gt', '$gte', '$lt', '$lte']);
const VERSION_OPS = new Set(['$veq', '$vne', '$vgt', '$vgte', '$vlt', '$vlte']);
const LOGICAL_OPS = new Set(['$and', '$or', '$nor']);

/**
 * Validates `when` and compiles it. Returns null when the condition matches everyone (absent or `{}`),
 * so the evaluator skips the call. Problems are appended to `problems`; when any were added the
 * returned value must not be used.
 */
export function compileCondition(when: unknown, path: string, rule: number, problems: MappingProblem[]): Predicate | null {
  if (when === undefined) return null;
  const before = problems.length;
  if (!isPlainObject(when)) {
    problems.push({ rule, path, reason: 'must be an object (a condition on p)' });
    return null;
  }
  checkQuery(when, path, rule, problems, 0);
  if (problems.length !== before || Object.keys(when).length === 0) return null;
  try {
    return compilePredicate(when);
  } catch (err) {
    // What validation does not look into (operators inside $all members) is refused here.
    if (!(err instanceof RcdError)) throw err;
    problems.push({ rule, path, reason: err.message });
    return null;
  }
}

/** A query: field conditions and $and/$or/$nor, as at the top of `when` or inside $elemMatch. */
function checkQuery(query: Record<string, unknown>, path: string, rule: number, problems: MappingProblem[], depth: number): void {
  if (depth > MAX_DEPTH) {
    problems.push({ rule, path, reason: `nested deeper than ${MAX_DEPTH} levels` });
    return;
  }
  for (const key of Object.keys(query)) {
    const p = childPath(path, key);
    const value = query[key];
    if (key.startsWith('$')) {
      if (!LOGICAL_OPS.has(key)) {
        problems.push({ rule, path: p, reason: `unknown operator ${key} (allowed here: $and, $or, $nor, or an attribute name)` });
      } else if (!Array.isArray(value) || value.length === 0) {
        problems.push({ rule, path: p, reason: `${key} needs a non-empty array of conditions` });
      } else {
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          if (isPlainObject(item)) checkQuery(item, `${p}[${i}]`, rule, problems, depth + 1);
          else problems.push({ rule, path: `${p}[${i}]`, reason: 'must be an object (a condition)' });
        }
      }
      continue;
    }
    if (!checkFieldPath(key, p, rule, problems)) continue;
    checkValueCondition(value, p, rule, problems, depth + 1);
  }
}

function checkFieldPath(key: string, path: string, rule: number, problems: MappingProblem[]): boolean {
  const segments = key.split('.');
  for (const segment of segments) {
    if (segment === '') {
      problems.push({ rule, path, reason: `attribute path "${key}" has an empty segment` });
      return false;
    }
    if (FORBIDDEN_KEYS.has(segment)) {
      problems.push({ rule, path, reason: `key "${segment}" is not allowed` });
      return false;
    }
    if (segment.startsWith('$')) {
      problems.push({ rule, path, reason: `attribute path "${key}" contains an operator (${segment})` });
      return false;
    }
  }
  return true;
}

function hasOperatorKey(value: Record<string, unknown>): boolean {
  for (const key of Object.keys(value)) if (key.startsWith('$')) return true;
  return false;
}

/** What one attribute is tested with: a literal (implicit equality) or an object of operators. */
function checkValueCondition(value: unknown, path: string, rule: number, problems: MappingProblem[], depth: number): void {
  if (isPlainObject(value) && hasOperatorKey(value)) {
    checkOperators(value, path, rule, problems, depth);
  } else {
    findForbiddenKeys(value, path, rule, problems);
  }
}

function checkOperators(ops: Record<string, unknown>, path: string, rule: number, problems: MappingProblem[], depth: number): void {
  if (depth > MAX_DEPTH) {
    problems.push({ rule, path, reason: `nested deeper than ${MAX_DEPTH} levels` });
    return;
  }
  for (const op of Object.keys(ops)) {
    const p = childPath(path, op);
    const operand = ops[op];
    if (!op.startsWith('$')) {
      problems.push({ rule, path: p, reason: `"${op}" mixed with operators: use either operators or a literal value` });
      continue;
    }
    checkOperator(op, operand, ops, p, rule, problems, depth);
  }
}

function checkOperator(
  op: string,
  operand: unknown,
  ops: Record<string, unknown>,
  path: string,
  rule: number,
  problems: MappingProblem[],
  depth: number,
): void {
  if (op === '$eq' || op === '$ne') {
    findForbiddenKeys(operand, path, rule, problems);
  } else if (COMPARISON_OPS.has(op)) {
    if (typeof operand !== 'number' && typeof operand !== 'string') {
      problems.push({ rule, path, reason: `${op} needs a number or a string` });
    }
  } else if (op === '$in' || op === '$nin' || op === '$all') {
    if (!Array.isArray(operand)) problems.push({ rule, path, reason: `${op} needs an array` });
    else findForbiddenKeys(operand, path, rule, problems);
  } else if (op === '$exists') {
    if (typeof operand !== 'boolean') problems.push({ rule, path, reason: '$exists needs true or false' });
  } else if (op === '$regex') {
    checkRegex(ops, path, rule, problems);
  } else if (op === '$options') {
    if (!('$regex' in ops)) problems.push({ rule, path, reason: '$options is only allowed next to $regex' });
  } else if (op === '$size') {
    if (typeof operand !== 'number' || !Number.isInteger(operand) || operand < 0) {
      problems.push({ rule, path, reason: '$size needs a non-negative integer' });
    }
  } else if (op === '$elemMatch') {
    if (!isPlainObject(operand) || Object.keys(operand).length === 0) {
      problems.push({ rule, path, reason: '$elemMatch needs a non-empty object' });
    } else if (hasOperatorKey(operand) && !Object.keys(operand).some((k) => LOGICAL_OPS.has(k))) {
      checkOperators(operand, path, rule, problems, depth + 1);
    } else {
      checkQuery(operand, path, rule, problems, depth + 1);
    }
  } else if (op === '$not') {
    if (!isPlainObject(operand) || !hasOperatorKey(operand)) {
      problems.push({ rule, path, reason: '$not needs an object of operators, e.g. {"$not":{"$gt":5}}' });
    } else {
      checkOperators(operand, path, rule, problems, depth + 1);
    }
  } else if (VERSION_OPS.has(op)) {
    if (typeof operand !== 'string' || parseAppVersion(operand) === null) {
      problems.push({ rule, path, reason: `${op} needs a version string X.Y.Z` });
    }
  } else {
    problems.push({ rule, path, reason: `unknown operator ${op}` });
  }
}

function checkRegex(ops: Record<string, unknown>, path: string, rule: number, problems: MappingProblem[]): void {
  // The evaluator compiles through the same function (predicate.ts), so what passes here runs there.
  const compiled = compileRegexOperator(ops);
  if (compiled.error !== null) problems.push({ rule, path, reason: compiled.error });
}
