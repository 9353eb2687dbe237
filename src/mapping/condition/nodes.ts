/**
 * The compiled form of a condition: a tree of plain nodes (Query → Field → Op, Ops holding
 * sub-Queries for $elemMatch/$not/$all/$and/$or/$nor), each kind with one fixed object shape so the
 * matchers (match.ts) stay monomorphic. Built once per mapping by compile.ts.
 *
 * The nodes also carry a small mutable match state (done/keep), which the general walk uses to decide
 * one node across all the values a path reaches (array elements) without allocating. See match.ts for
 * who may use a tree when.
 */
import { readSiteOf } from './member-read.js';
import { OpKind, VersionTest } from './operators.js';
import type { CompiledRegex } from './regex.js';

// How an equality literal is tested: specialised at compile time so the common scalar case is `===`.
export const enum LiteralKind {
  /** Matches null and a missing value. */
  Null = 0,
  /** string, number, boolean: `===`. */
  Scalar = 1,
  /** array or object: deep equality. */
  Deep = 2,
}

/** An equality literal with its test kind; $in/$nin hold a list of them. */
export class Literal {
  readonly kind: LiteralKind;
  readonly value: unknown;
  constructor(value: unknown) {
    this.kind = value === null ? LiteralKind.Null : typeof value === 'object' ? LiteralKind.Deep : LiteralKind.Scalar;
    this.value = value;
  }
}

/**
 * One operator on the values a path reaches. Every kind uses the same fields (unused ones at their
 * defaults) so that all Ops share one hidden class and the dispatch stays monomorphic.
 */
export class Op {
  kind: OpKind;
  done = false;
  keep = false;
  /** EQ/NE literal (set by compile.ts for those kinds, null for every other). */
  literal: Literal | null = null;
  /** The operand of $gt..$lte. */
  operand: number | string = 0;
  /** IN/NIN literals. */
  list: readonly Literal[] = [];
  /** EXISTS operand, or the result an undecided op starts from (NE/NIN: true). */
  flag = false;
  regex: CompiledRegex | null = null;
  /** REGEX: characters it may still read in evaluation number `scanEvaluation` (value-tests.ts, regexTest). */
  scanLeft = 0;
  scanEvaluation = -1;
  /** SIZE length. */
  count = 0;
  /** VERSION: which comparison, and the target. */
  versionTest: VersionTest = VersionTest.Eq;
  major = 0;
  minor = 0;
  patch = 0;
  /** ELEM_MATCH/NOT operand (set by compile.ts for those kinds, null for every other). */
  sub: Query | null = null;
  /** ALL members; AND/OR/NOR branches. */
  subs: readonly Query[] = [];
  constructor(kind: OpKind) {
    this.kind = kind;
  }
}

const OBJECT_MEMBERS: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * The operators on one attribute path (segments of `a.b.c`; no segments: the value itself, as for
 * $elemMatch/$not operands and logical operators). `index[d]` is segment d as an array index (-1:
 * not one) and `numeric[d]` whether it reads as a number at all, which is what decides between
 * indexing an array and searching its elements. Both have one entry per segment.
 */
export class Field {
  done = false;
  keep = false;
  readonly segments: readonly string[];
  readonly index: readonly number[];
  readonly numeric: readonly boolean[];
  /**
   * Whether segment d names a member of Object.prototype (`toString`, `__proto__`): only there can a
   * read of a JSON object's member find something that is not its own, so only there does matchPath
   * pay for an own-property test (a read of undefined is a missing member anywhere: JSON has no undefined).
   */
  readonly inherited: readonly boolean[];
  /** Per segment, its read site (member-read.ts). */
  readonly sites: Int32Array;
  readonly ops: readonly Op[];
  /** Which shortcut of matchField applies, decided from the operators at compile time. */
  readonly fast: FastMode;
  readonly hasElemMatch: boolean;
  constructor(segments: readonly string[], ops: readonly Op[]) {
    this.segments = segments;
    this.index = segments.map(arrayIndexOf);
    this.numeric = segments.map((s) => !Number.isNaN(Number(s)));
    this.inherited = segments.map((s) => OBJECT_MEMBERS.has(s));
    this.sites = Int32Array.from(segments, readSiteOf);
    this.ops = ops;
    this.fast = fastModeOf(segments, ops);
    this.hasElemMatch = ops.some((op) => op.kind === OpKind.ElemMatch);
  }
}

/** A query (`when`, an $elemMatch query, a branch of $and/$or/$nor, an $all member): all fields match. */
export class Query {
  done = false;
  keep = false;
  readonly fields: readonly Field[];
  constructor(fields: readonly Field[]) {
    this.fields = fields;
  }
}

/**
 * matchField's shortcuts. The general walk reproduces sift's visiting order and per-operator state;
 * when the path only crosses plain objects and the operators are plain tests, the result reduces to
 * "some value on the path passes" per operator, computed directly.
 */
export const enum FastMode {
  None = 0,
  /** A path, operators that test values (incl. $not of such, $elemMatch). */
  Path = 1,
  /** No path, operators that test values: $elemMatch operators on an element. */
  Element = 2,
  /** No path, only $and/$or/$nor: the top of `when` or of an $elemMatch query. */
  Logic = 3,
}

function isValueTest(op: Op): boolean {
  switch (op.kind) {
    case OpKind.All:
    case OpKind.And:
    case OpKind.Or:
    case OpKind.Nor:
      return false;
    case OpKind.ElemMatch:
      return true;
    case OpKind.Not: {
      const fields = op.sub!.fields; // a Not op always has its operand
      const only = fields[0];
      return fields.length === 1 && only !== undefined && only.segments.length === 0 && only.ops.every(isPlainTest);
    }
    default:
      return true;
  }
}

/** A test of one value at a time, no sub-query. */
function isPlainTest(op: Op): boolean {
  const kind = op.kind;
  return kind !== OpKind.All && kind !== OpKind.And && kind !== OpKind.Or && kind !== OpKind.Nor && kind !== OpKind.ElemMatch && kind !== OpKind.Not;
}

function isLogic(op: Op): boolean {
  return op.kind === OpKind.And || op.kind === OpKind.Or || op.kind === OpKind.Nor;
}

function fastModeOf(segments: readonly string[], ops: readonly Op[]): FastMode {
  if (ops.length === 0) return FastMode.None;
  if (segments.length > 0) return ops.every(isValueTest) ? FastMode.Path : FastMode.None;
  if (ops.every(isPlainTest)) return FastMode.Element;
  if (ops.every(isLogic)) return FastMode.Logic;
  return FastMode.None;
}

/** A path segment as an array index, or -1. Only the canonical spelling names an element ("01" and "1e0" are other keys). */
export function arrayIndexOf(segment: string): number {
  if (!/^(0|[1-9]\d{0,8})$/.test(segment)) return -1;
  return Number(segment);
}
