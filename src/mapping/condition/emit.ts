/**
 * A compiled condition (nodes.ts) as JavaScript source: the statements that test it against `p`,
 * for the generated rule program (rules/program.ts) and, on its own, as a generated predicate.
 *
 * Each field whose path crosses only plain objects (match.ts's FAST_PATH shortcut) reads its members
 * by name, written into the code (`p["country"]`), and tests a scalar value inline: `$in` of
 * strings is a chain of `===`, `$gt` a typeof test and one comparison. The value is read once. An
 * array of scalars at a one-member path (`tags`) is searched element by element the same way
 * (elementsSource). Any other object or array, or a path that runs into an array, hands the field
 * to the interpreter (match.ts, matchField), which decides it from scratch; so does every field the
 * shortcut does not cover ($and/$or/$nor at the top, `$all`, paths through members Object.prototype
 * also has). The interpreter is the reference: what is inlined here is exactly matchPath + matchOps
 * for a scalar, or an array of scalars, at the end of the path
 * (test/unit/mapping/condition/predicate.test.ts runs the sift oracle against both).
 *
 * Inlined, a scalar test is a few comparisons; interpreted, it is a loop over rules, fields and
 * operators with a call and a switch at each level.
 *
 * The generated code declares nothing the enclosing function can see: it assigns `v` (the value) and
 * `h` (whether the path's last member is there, for $exists), which that function declares; an array's
 * search declares its own names inside the field's block.
 */
import { CodeUnit, scalarSource } from '../codegen.js';
import { isPlainObject } from '../problems.js';
import { beginEvaluation, regexTest, versionTest } from './value-tests.js';
import { matchField, evaluateCondition } from './match.js';
import { FastMode, LiteralKind, type Field, type Literal, type Op, type Query } from './nodes.js';
import { OpKind } from './operators.js';

/** An `$in` list longer than this (of scalars) is tested with a Set instead of a chain of `===`. */
const MAX_CHAIN = 8;

/**
 * The statements testing `root` against `p`; `fail` is the statement run when it does not hold
 * (`break rule3;`, `return false;`). Helpers and nodes are bound in `unit`.
 */
export function emitCondition(root: Query, unit: CodeUnit, fail: string): string {
  // A $regex op's read budget is per evaluation (value-tests.ts): started as evaluateCondition does.
  let code = usesRegex(root) ? `${unit.bind('begin', beginEvaluation)}();\n` : '';
  for (const field of root.fields) code += emitField(field, unit, fail);
  return code;
}

/** The condition as a function of p alone, or null where code generation is refused. */
export function generatedPredicate(root: Query): ((p: Record<string, unknown>) => boolean) | null {
  const unit = new CodeUnit();
  const body = emitCondition(root, unit, 'return false;');
  const interpreted = unit.bind('interpreted', evaluateCondition);
  const tree = unit.bind('root', root);
  const plain = unit.bind('isPlainObject', isPlainObject);
  // p is a plain object wherever conditions run (the request's validated context); anything else
  // takes the interpreter, as matchField would.
  return unit.build(`return function condition(p) {\nif (!${plain}(p)) return ${interpreted}(${tree}, p);\nlet v, h = false;\n${body}return true;\n};`);
}

function emitField(field: Field, unit: CodeUnit, fail: string): string {
  const handOver = `!${unit.bind('matchField', matchField)}(${unit.bind('field', field)}, p, undefined, undefined)`;
  if (!isInlinable(field)) return `if (${handOver}) ${fail}\n`;
  const needsPresence = field.ops.some(usesPresence);
  let code = emitRead(field.segments, needsPresence);
  const objectCase = field.segments.length === 1 && field.ops.every(isElementTest) ? elementsSource(field.ops, unit, handOver, fail) : `if (${handOver}) ${fail}\n`;
  code += `if (typeof v === "object" && v !== null) {\n${objectCase}}\n`;
  code += `else if (!(${opsExpression(field.ops, unit)})) ${fail}\n`;
  return code;
}

/**
 * Whether an operator on an array of scalars is decided by its elements alone: a test of scalars
 * (its literal or list holds no object or array, which could equal the array itself), or its negation.
 */
function isElementTest(op: Op): boolean {
  switch (op.kind) {
    case OpKind.Eq:
    case OpKind.Ne:
      return op.literal!.kind !== LiteralKind.Deep; // an Eq or Ne op always holds its literal
    case OpKind.In:
    case OpKind.Nin:
      return op.list.every((literal) => literal.kind !== LiteralKind.Deep);
    case OpKind.Gt:
    case OpKind.Gte:
    case OpKind.Lt:
    case OpKind.Lte:
      return true;
    default:
      return false;
  }
}

/**
 * A one-member path whose value is an array (`tags`, `flags`): what matchOps decides for it when no
 * element is an object or an array, each operator holding for some element ($ne and $nin: for none),
 * tested here element by element; an object or array among the elements, or a value that is an
 * object, hands the field to the interpreter. Handed over every time, such a field would cost the
 * interpreter's walk (matchField, matchPath, matchOps, anyValue) and the cache lines of its nodes on
 * every request.
 */
function elementsSource(ops: readonly Op[], unit: CodeUnit, handOver: string, fail: string): string {
  let seen = '';
  let tests = '';
  let holds = '';
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    const negated = op.kind === OpKind.Ne || op.kind === OpKind.Nin;
    const test = op.kind === OpKind.Ne ? equalsExpression(op.literal!) : op.kind === OpKind.Nin ? inExpression(op.list, unit) : opExpression(op, unit);
    seen += `${i === 0 ? 'let' : ','} seen${i} = false`;
    tests += `if (!seen${i} && ${test}) seen${i} = true;\n`;
    holds += `${i === 0 ? '' : ' && '}${negated ? '!' : ''}seen${i}`;
  }
  // The block's `v` is the element: the operators' expressions read `v`.
  return (
    `let undecided = !Array.isArray(v);\nif (!undecided) {\nconst elements = v;\n${seen};\n` +
    `for (let at = 0; at < elements.length; at++) {\nconst v = elements[at];\n` +
    `if (typeof v === "object" && v !== null) { undecided = true; break; }\n${tests}}\n` +
    `if (!undecided && !(${holds})) ${fail}\n}\nif (undecided && ${handOver}) ${fail}\n`
  );
}

/** The path's value into v (and h), as matchPath reads it; an array met on the way is left in v. */
function emitRead(segments: readonly string[], needsPresence: boolean): string {
  const last = segments.length - 1;
  if (last === 0) return `v = p[${JSON.stringify(segments[0])}];\n${needsPresence ? 'h = v !== undefined;\n' : ''}`;
  let code = `${needsPresence ? 'h = false;\n' : ''}read: {\nv = p[${JSON.stringify(segments[0])}];\n`;
  for (let depth = 1; depth <= last; depth++) {
    // null on the way is the value the operators see; a scalar has no members (nothing there); an
    // array stays in v, an object, which hands the field to the interpreter.
    code += 'if (v === undefined || v === null || Array.isArray(v)) break read;\n';
    code += 'if (typeof v !== "object") { v = undefined; break read; }\n';
    code += `v = v[${JSON.stringify(segments[depth])}];\n`;
  }
  if (needsPresence) code += 'h = v !== undefined;\n';
  return `${code}}\n`;
}

/** Whether matchPath's shortcut covers the field, through members no JSON object inherits. */
function isInlinable(field: Field): boolean {
  return field.fast === FastMode.Path && field.segments.length > 0 && !field.inherited.some(Boolean);
}

function usesPresence(op: Op): boolean {
  if (op.kind === OpKind.Exists) return true;
  return op.kind === OpKind.Not && op.sub!.fields[0]!.ops.some(usesPresence); // a Not op always has its operand
}

function usesRegex(query: Query): boolean {
  for (const field of query.fields) {
    for (const op of field.ops) {
      if (op.kind === OpKind.Regex) return true;
      if (op.sub !== null && usesRegex(op.sub)) return true;
      if (op.subs.some(usesRegex)) return true;
    }
  }
  return false;
}

/** Every op holds for a scalar (or null, or missing) v: matchOps on a value that is no array. */
function opsExpression(ops: readonly Op[], unit: CodeUnit): string {
  if (ops.length === 0) return 'true';
  return ops.map((op) => opExpression(op, unit)).join(' && ');
}

function opExpression(op: Op, unit: CodeUnit): string {
  switch (op.kind) {
    case OpKind.Eq:
      return equalsExpression(op.literal!); // an Eq op always holds its literal
    case OpKind.Ne:
      return `!${equalsExpression(op.literal!)}`;
    case OpKind.Gt:
    case OpKind.Gte:
    case OpKind.Lt:
    case OpKind.Lte:
      return compareExpression(op.kind, op.operand);
    case OpKind.In:
      return inExpression(op.list, unit);
    case OpKind.Nin:
      return `!${inExpression(op.list, unit)}`;
    case OpKind.Exists:
      return op.flag ? 'h' : '!h';
    case OpKind.Regex:
      return `(typeof v === "string" && ${unit.bind('regexTest', regexTest)}(${unit.bind('op', op)}, v))`;
    case OpKind.Version:
      return `(typeof v === "string" && ${unit.bind('versionTest', versionTest)}(${unit.bind('op', op)}, v))`;
    case OpKind.Not:
      return `!(${opsExpression(op.sub!.fields[0]!.ops, unit)})`; // FAST_PATH: a Not holds one field (nodes.ts, isValueTest)
    default:
      // $size and $elemMatch need an array; v is none here.
      return 'false';
  }
}

/** literalEquals(literal, v) for a v that is no object (a deep literal equals no such v). */
function equalsExpression(literal: Literal): string {
  switch (literal.kind) {
    case LiteralKind.Scalar:
      return `(v === ${scalarSource(literal.value as string | number | boolean)})`;
    case LiteralKind.Null:
      return '(v === null || v === undefined)';
    default:
      return 'false';
  }
}

/** compareTest: numbers with numbers, strings with strings, never across types. */
function compareExpression(kind: OpKind, operand: number | string): string {
  const sign = kind === OpKind.Gt ? '>' : kind === OpKind.Gte ? '>=' : kind === OpKind.Lt ? '<' : '<=';
  return `(typeof v === ${JSON.stringify(typeof operand)} && v ${sign} ${scalarSource(operand)})`;
}

/** inList(list, v) for a v that is no object. */
function inExpression(list: readonly Literal[], unit: CodeUnit): string {
  const scalars: (string | number | boolean)[] = [];
  let hasNull = false;
  for (const literal of list) {
    if (literal.kind === LiteralKind.Scalar) scalars.push(literal.value as string | number | boolean);
    else if (literal.kind === LiteralKind.Null) hasNull = true;
  }
  const terms: string[] = hasNull ? ['v === null', 'v === undefined'] : [];
  // A Set tests SameValueZero, which differs from === only for NaN (no JSON value is NaN).
  if (scalars.length > MAX_CHAIN) terms.push(`${unit.bind('set', new Set(scalars))}.has(v)`);
  else for (const s of scalars) terms.push(`v === ${scalarSource(s)}`);
  return terms.length === 0 ? 'false' : `(${terms.join(' || ')})`;
}
