/**
 * Compiles a validated condition (`when`) into the node tree of nodes.ts, once per mapping, and
 * returns it as a Predicate. Operators are looked up in the operator table (operators.ts) and their
 * operands checked with the same function validation uses; what validation does not look into (the
 * members of `$all`, compiled as queries) is refused here with RcdError invalid_mapping.
 */
import { RcdError } from '../../runtime/errors.js';
import { parseAppVersion } from '../../shared/app-version.js';
import { isPlainObject } from '../problems.js';
import { evaluateCondition } from './match.js';
import { Field, Literal, Op, Query } from './nodes.js';
import {
  CONDITION_MEMBER_PROBLEM,
  OPERATORS,
  OpKind,
  Operand,
  isLogicalOperator,
  isOperatorObject,
  isOperatorsOnElement,
  mixedOperatorsProblem,
  operandProblem,
  queryOperatorProblem,
} from './operators.js';
import { compileRegexOperator } from './regex.js';

/**
 * A compiled condition: true when the rule's `when` matches p, by the interpreter (match.ts). `root`
 * is its tree, from which the rule program (rules/program.ts) generates code.
 */
export interface Predicate {
  (p: Record<string, unknown>): boolean;
  readonly root: Query;
}

/**
 * Compiles a condition that passed validation (validate.ts). Throws RcdError invalid_mapping for
 * what validation does not look into (operators inside $all members).
 */
export function compilePredicate(when: Record<string, unknown>): Predicate {
  const root = compileQuery(when);
  return Object.assign((p: Record<string, unknown>): boolean => evaluateCondition(root, p), { root });
}

function compileError(message: string): RcdError {
  return new RcdError('invalid_mapping', message);
}

/**
 * An $all member. sift's rule: one that is not an object or array is a value to compare with; an
 * object is read as an $elemMatch operand is (operators on the value, or a query); an array is a
 * query whose keys are its indexes.
 */
function compileMember(value: unknown): Query {
  if (typeof value !== 'object' || value === null) {
    const op = new Op(OpKind.Eq);
    op.literal = new Literal(value);
    return new Query([new Field([], [op])]);
  }
  if (Array.isArray(value)) return compileQuery(value as unknown as Record<string, unknown>);
  return compileElementCondition(value as Record<string, unknown>);
}

/** An $elemMatch operand: operators on the element, or a query on it (operators.ts, isOperatorsOnElement). */
function compileElementCondition(operand: Record<string, unknown>): Query {
  return isOperatorsOnElement(operand) ? new Query([compileOperators([], operand)]) : compileQuery(operand);
}

/** A query: attribute names and $and/$or/$nor (the logical operators test the value itself). */
function compileQuery(query: Record<string, unknown>): Query {
  const own: Op[] = [];
  const fields: Field[] = [];
  for (const key of Object.keys(query)) {
    if (key.startsWith('$')) {
      if (!isLogicalOperator(key)) throw compileError(queryOperatorProblem(key));
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

function compileField(segments: string[], condition: unknown): Field {
  if (isOperatorObject(condition)) return compileOperators(segments, condition);
  const op = new Op(OpKind.Eq);
  op.literal = new Literal(condition);
  return new Field(segments, [op]);
}

/** An object of operators on the value at `segments`. */
function compileOperators(segments: string[], ops: Record<string, unknown>): Field {
  const compiled: Op[] = [];
  for (const key of Object.keys(ops)) {
    if (!key.startsWith('$')) throw compileError(mixedOperatorsProblem(key));
    const op = compileOperator(key, ops[key], ops);
    if (op !== null) compiled.push(op);
  }
  return new Field(segments, compiled);
}

/** null for `$options`, which only modifies the `$regex` beside it. */
function compileOperator(name: string, operand: unknown, owner: Record<string, unknown>): Op | null {
  const spec = OPERATORS.get(name);
  if (spec === undefined) throw compileError(`unknown operator ${name}`);
  if (spec.operand === Operand.Regex) {
    // Compiled by the function validation uses (regex.ts): what was accepted compiles, and matches,
    // exactly as validated. Compiled once here rather than once to check and once to use.
    const compiled = compileRegexOperator(owner);
    if (compiled.regex === null) throw compileError(compiled.error);
    const op = new Op(OpKind.Regex);
    op.regex = compiled.regex;
    return op;
  }
  const problem = operandProblem(name, spec, operand, owner);
  if (problem !== null) throw compileError(problem);
  const op = new Op(spec.kind);
  switch (spec.operand) {
    case Operand.RegexOptions:
      return null;
    case Operand.Value:
      op.literal = new Literal(operand);
      op.flag = spec.kind === OpKind.Ne;
      return op;
    case Operand.NumberOrString:
      op.operand = operand as number | string;
      return op;
    case Operand.Values:
      op.list = (operand as unknown[]).map((value) => new Literal(value));
      op.flag = spec.kind === OpKind.Nin;
      return op;
    case Operand.Members:
      op.subs = (operand as unknown[]).map(compileMember);
      return op;
    case Operand.Boolean:
      op.flag = operand as boolean;
      return op;
    case Operand.Count:
      op.count = operand as number;
      return op;
    case Operand.Query:
      op.sub = compileElementCondition(operand as Record<string, unknown>);
      return op;
    case Operand.Operators:
      op.sub = new Query([compileOperators([], operand as Record<string, unknown>)]);
      return op;
    case Operand.Conditions:
      op.subs = (operand as unknown[]).map(compileCondition);
      return op;
    case Operand.Version: {
      const target = parseAppVersion(operand as string)!; // operandProblem checked it parses
      op.versionTest = spec.versionTest;
      op.major = target[0];
      op.minor = target[1];
      op.patch = target[2];
      return op;
    }
  }
}

/** A member of $and/$or/$nor. */
function compileCondition(member: unknown): Query {
  if (!isPlainObject(member)) throw compileError(CONDITION_MEMBER_PROBLEM);
  return compileQuery(member);
}
