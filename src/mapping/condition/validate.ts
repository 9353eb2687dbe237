/**
 * Rule conditions (`when`): a MongoDB-style query on the user attributes p.
 *
 * Validation is ours and strict (an allow-list of operators and operand shapes): the format offers
 * no `$where` (code execution), `$mod` or `$type`. Evaluation is our own compiled evaluator
 * (compile.ts builds it, match.ts runs it): sift, which implements the same language, costs ~500 ns for a 3-field condition
 * against a few tens of ns for the compiled tree, and conditions run for every rule of every
 * wrapped request. sift stays the reference the evaluator is tested against. Which operators exist
 * and what their operands may be is the operator table (operators.ts), which compilation reads too.
 *
 * Semantics worth knowing (documented in docs/api.md): a missing attribute never matches a positive
 * comparison ($eq with a non-null value, $gt.., $in, $regex, $size, $all, $elemMatch, $v..); negations
 * ($ne, $nin, $not, $nor, $exists:false) match a missing attribute as in MongoDB; `{"a":null}` matches
 * a missing a. Version operators ($vne included) never match a missing or non-X.Y.Z attribute. Only
 * own members of p are read (see match.ts for the few places where that differs from sift).
 * `$regex` is RE2 syntax and semantics, compiled by regex.ts for validation and evaluation alike.
 */
import { RcdError } from '../../runtime/errors.js';
import { compilePredicate, type Predicate } from './compile.js';
import { FORBIDDEN_KEYS, childPath, findForbiddenKeys, isPlainObject, type MappingProblem } from '../problems.js';
import {
  CONDITION_MEMBER_PROBLEM,
  OPERATORS,
  Operand,
  hasOperatorKey,
  isLogicalOperator,
  isOperatorsOnElement,
  mixedOperatorsProblem,
  operandProblem,
  queryOperatorProblem,
} from './operators.js';

export type { Predicate } from './compile.js';

const MAX_DEPTH = 32;

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
      const spec = OPERATORS.get(key);
      if (spec === undefined || !isLogicalOperator(key)) {
        problems.push({ rule, path: p, reason: queryOperatorProblem(key) });
        continue;
      }
      const problem = operandProblem(key, spec, value, query);
      if (problem !== null) problems.push({ rule, path: p, reason: problem });
      else checkConditions(value as unknown[], p, rule, problems, depth);
      continue;
    }
    if (!checkFieldPath(key, p, rule, problems)) continue;
    checkValueCondition(value, p, rule, problems, depth + 1);
  }
}

/** The members of $and/$or/$nor, each a query. */
function checkConditions(members: readonly unknown[], path: string, rule: number, problems: MappingProblem[], depth: number): void {
  for (let i = 0; i < members.length; i++) {
    const item = members[i];
    if (isPlainObject(item)) checkQuery(item, `${path}[${i}]`, rule, problems, depth + 1);
    else problems.push({ rule, path: `${path}[${i}]`, reason: CONDITION_MEMBER_PROBLEM });
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
      problems.push({ rule, path: p, reason: mixedOperatorsProblem(op) });
      continue;
    }
    checkOperator(op, operand, ops, p, rule, problems, depth);
  }
}

/** One operator: known, its operand of the right shape, and what the operand holds checked in turn. */
function checkOperator(
  op: string,
  operand: unknown,
  ops: Record<string, unknown>,
  path: string,
  rule: number,
  problems: MappingProblem[],
  depth: number,
): void {
  const spec = OPERATORS.get(op);
  if (spec === undefined) {
    problems.push({ rule, path, reason: `unknown operator ${op}` });
    return;
  }
  const problem = operandProblem(op, spec, operand, ops);
  if (problem !== null) {
    problems.push({ rule, path, reason: problem });
    return;
  }
  switch (spec.operand) {
    case Operand.Value:
    case Operand.Values:
    case Operand.Members:
      // Literal values: nothing in them may reach a prototype. ($all members that are queries are
      // checked when they are compiled: compileCondition reports what compilation refuses.)
      findForbiddenKeys(operand, path, rule, problems);
      return;
    case Operand.Query: {
      // $elemMatch: operators on the element, or a query on it (attribute names and $and/$or/$nor).
      const query = operand as Record<string, unknown>;
      if (isOperatorsOnElement(query)) checkOperators(query, path, rule, problems, depth + 1);
      else checkQuery(query, path, rule, problems, depth + 1);
      return;
    }
    case Operand.Operators:
      checkOperators(operand as Record<string, unknown>, path, rule, problems, depth + 1);
      return;
    case Operand.Conditions:
      checkConditions(operand as unknown[], path, rule, problems, depth);
      return;
    default:
      // Scalars, versions and $regex/$options: operandProblem checked all there is.
      return;
  }
}
