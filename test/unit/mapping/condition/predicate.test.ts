/**
 * The compiled condition evaluator (src/mapping/condition/compile.ts and match.ts, used through compileCondition) against
 * sift, the reference implementation of the same language: the rows of validate.test.ts,
 * extra path/array edge cases, and thousands of generated (condition, p) pairs with a fixed seed.
 * sift gets the same $veq..$vlte operators the engine used to register with it.
 *
 * Where the documented semantics deliberately differ from sift (own members only, strict deep
 * equality, `$all: []`, operators inside $all members) the last block asserts the documented result
 * and that sift really answers differently, so each difference stays a known, listed one.
 */
import { siftPredicate } from '../../../../bench/reference/sift.js';
import { prng as mulberry32 } from '../../../../bench/fixtures/generate.js';
import { describe, expect, it } from 'vitest';
import { compileCondition } from '../../../../src/mapping/condition/validate.js';
import { generatedPredicate } from '../../../../src/mapping/condition/emit.js';
import type { MappingProblem } from '../../../../src/mapping/problems.js';
import { parseBodyJson } from '../../../../src/delivery/body.js';

function oracle(when: unknown): (p: unknown) => boolean {
  return siftPredicate(when);
}

/**
 * Both evaluators of a condition: the interpreter (match.ts, what compileCondition returns) and the
 * generated code (emit.ts, what the rule program inlines), which hands what it does not inline to the
 * interpreter.
 */
const MODES = ['interpreter', 'generated code'] as const;
type Mode = (typeof MODES)[number];

function compile(when: Record<string, unknown>, mode: Mode): (p: Record<string, unknown>) => boolean {
  const problems: MappingProblem[] = [];
  const predicate = compileCondition(when, 'rules[0].when', 0, problems);
  if (problems.length > 0) throw new Error(`${JSON.stringify(when)}: ${problems.map((p) => p.reason).join('; ')}`);
  if (predicate === null) return () => true;
  if (mode === 'interpreter') return predicate;
  const generated = generatedPredicate(predicate.root);
  if (generated === null) throw new Error('code generation refused in the test process');
  return generated;
}

const P = (json: string): Record<string, unknown> => JSON.parse(json) as Record<string, unknown>;

type Row = [when: Record<string, unknown>, p: string];

// The (when, p) pairs of condition.test.ts's operator table.
const OPERATOR_TABLE: Row[] = [
  [{ country: 'DE' }, '{"country":"DE"}'],
  [{ country: 'DE' }, '{"country":"FR"}'],
  [{ country: 'DE' }, '{}'],
  [{ tags: 'vip' }, '{"tags":["vip","new"]}'],
  [{ tags: 'vip' }, '{"tags":["new"]}'],
  [{ tags: ['vip', 'new'] }, '{"tags":["vip","new"]}'],
  [{ a: null }, '{}'],
  [{ 'device.os': 'ios' }, '{"device":{"os":"ios"}}'],
  [{ 'device.os': 'ios' }, '{"device":{"os":"android"}}'],
  [{ 'device.os': 'ios' }, '{"device":null}'],
  [{ 'items.kind': 'sword' }, '{"items":[{"kind":"bow"},{"kind":"sword"}]}'],
  [{ level: { $eq: 3 } }, '{"level":3}'],
  [{ level: { $eq: 3 } }, '{"level":4}'],
  [{ level: { $eq: 3 } }, '{}'],
  [{ level: { $ne: 3 } }, '{"level":4}'],
  [{ level: { $ne: 3 } }, '{"level":3}'],
  [{ level: { $ne: 3 } }, '{}'],
  [{ level: { $gt: 3 } }, '{"level":4}'],
  [{ level: { $gt: 3 } }, '{"level":3}'],
  [{ level: { $gt: 3 } }, '{}'],
  [{ level: { $gt: 3 } }, '{"level":"9"}'],
  [{ level: { $gte: 3 } }, '{"level":3}'],
  [{ level: { $gte: 3 } }, '{"level":2}'],
  [{ level: { $lt: 3 } }, '{"level":2}'],
  [{ level: { $lt: 3 } }, '{"level":3}'],
  [{ level: { $lt: 3 } }, '{}'],
  [{ level: { $lte: 3 } }, '{"level":3}'],
  [{ level: { $lte: 3 } }, '{"level":4}'],
  [{ scores: { $gt: 10 } }, '{"scores":[1,20]}'],
  [{ name: { $gte: 'm' } }, '{"name":"zed"}'],
  [{ country: { $in: ['DE', 'AT'] } }, '{"country":"AT"}'],
  [{ country: { $in: ['DE', 'AT'] } }, '{"country":"FR"}'],
  [{ country: { $in: ['DE', 'AT'] } }, '{}'],
  [{ tags: { $in: ['vip'] } }, '{"tags":["new","vip"]}'],
  [{ country: { $nin: ['DE'] } }, '{"country":"FR"}'],
  [{ country: { $nin: ['DE'] } }, '{"country":"DE"}'],
  [{ country: { $nin: ['DE'] } }, '{}'],
  [{ a: { $exists: true } }, '{"a":0}'],
  [{ a: { $exists: true } }, '{}'],
  [{ a: { $exists: false } }, '{}'],
  [{ a: { $exists: false } }, '{"a":null}'],
  [{ toString: { $exists: true } }, '{}'],
  [{ email: { $regex: '@example\\.com$' } }, '{"email":"a@example.com"}'],
  [{ email: { $regex: '@example\\.com$' } }, '{"email":"a@example.org"}'],
  [{ email: { $regex: '.*' } }, '{}'],
  [{ n: { $regex: '1' } }, '{"n":1}'],
  [{ name: { $regex: '^bob', $options: 'i' } }, '{"name":"BOB"}'],
  [{ tags: { $size: 2 } }, '{"tags":["a","b"]}'],
  [{ tags: { $size: 2 } }, '{"tags":["a"]}'],
  [{ tags: { $size: 0 } }, '{}'],
  [{ tags: { $all: ['a', 'b'] } }, '{"tags":["b","c","a"]}'],
  [{ tags: { $all: ['a', 'b'] } }, '{"tags":["a"]}'],
  [{ tags: { $all: ['a'] } }, '{}'],
  [{ items: { $elemMatch: { kind: 'sword', level: { $gte: 5 } } } }, '{"items":[{"kind":"sword","level":2},{"kind":"sword","level":7}]}'],
  [{ items: { $elemMatch: { kind: 'sword', level: { $gte: 5 } } } }, '{"items":[{"kind":"sword","level":2},{"kind":"bow","level":7}]}'],
  [{ scores: { $elemMatch: { $gt: 5, $lt: 10 } } }, '{"scores":[1,7,20]}'],
  [{ scores: { $elemMatch: { $gt: 5, $lt: 10 } } }, '{"scores":[1,20]}'],
  [{ scores: { $elemMatch: { $gt: 5 } } }, '{}'],
  [{ level: { $not: { $gt: 5 } } }, '{"level":3}'],
  [{ level: { $not: { $gt: 5 } } }, '{"level":7}'],
  [{ level: { $not: { $gt: 5 } } }, '{}'],
  [{ $and: [{ a: 1 }, { b: 2 }] }, '{"a":1,"b":2}'],
  [{ $and: [{ a: 1 }, { b: 2 }] }, '{"a":1,"b":3}'],
  [{ $or: [{ a: 1 }, { b: 2 }] }, '{"b":2}'],
  [{ $or: [{ a: 1 }, { b: 2 }] }, '{"a":2}'],
  [{ $nor: [{ a: 1 }, { b: 2 }] }, '{"a":2}'],
  [{ $nor: [{ a: 1 }, { b: 2 }] }, '{"b":2}'],
  [{ a: 1, b: { $gt: 1 } }, '{"a":1,"b":0}'],
  [{ app: { $veq: '1.2.3' } }, '{"app":"1.2.3"}'],
  [{ app: { $veq: '1.2.3' } }, '{"app":"1.2.4"}'],
  [{ app: { $vne: '1.2.3' } }, '{"app":"1.2.4"}'],
  [{ app: { $vne: '1.2.3' } }, '{"app":"1.2.3"}'],
  [{ app: { $vne: '1.2.3' } }, '{}'],
  [{ app: { $vgt: '1.9.0' } }, '{"app":"1.10.0"}'],
  [{ app: { $vgt: '1.9.0' } }, '{"app":"1.9.0"}'],
  [{ app: { $vgte: '2.0.0' } }, '{"app":"2.0.0"}'],
  [{ app: { $vgte: '2.0.0' } }, '{"app":"1.99.99"}'],
  [{ app: { $vlt: '2.0.0' } }, '{"app":"1.99.99"}'],
  [{ app: { $vlt: '2.0.0' } }, '{"app":"2.0.0"}'],
  [{ app: { $vlte: '2.0.0' } }, '{"app":"2.0.0"}'],
  [{ app: { $vlte: '2.0.0' } }, '{"app":"2.0.1"}'],
  [{ app: { $vgt: '0.0.0' } }, '{}'],
  [{ app: { $vgt: '0.0.0' } }, '{"app":"1.2"}'],
  [{ app: { $vgt: '0.0.0' } }, '{"app":1}'],
  [{ versions: { $vgte: '3.0.0' } }, '{"versions":["1.0.0","3.1.0"]}'],
  [{ 'client.app': { $vlt: '1.0.0' } }, '{"client":{"app":"0.9.9"}}'],
];

// Corners of the path walk and of operators that the generator below reaches rarely or not at all
// (numeric segments, nested arrays, nulls on the way, leaf vs intermediate for $exists).
const EDGE_CASES: Row[] = [
  [{ 'items.0.kind': 'bow' }, '{"items":[{"kind":"bow"},{"kind":"sword"}]}'],
  [{ 'items.1.kind': 'bow' }, '{"items":[{"kind":"bow"},{"kind":"sword"}]}'],
  [{ 'a.5': null }, '{"a":[1,2]}'],
  [{ 'a.5': { $in: [null] } }, '{"a":[1,2]}'],
  [{ 'a.5': { $ne: null } }, '{"a":[1,2]}'],
  [{ 'a.5': { $exists: false } }, '{"a":[1,2]}'],
  [{ 'a.1': { $exists: true } }, '{"a":[1,2]}'],
  [{ 'a.01': { $exists: true } }, '{"a":[1,2]}'],
  [{ 'a.0': { $gt: 1 } }, '{"a":[2]}'],
  [{ 'a.0.b': 1 }, '{"a":[[{"b":1}]]}'],
  [{ 'a.0': 1 }, '{"a":{"0":1}}'],
  [{ 'a.b': 1 }, '{"a":[[{"b":1}]]}'],
  [{ a: 1 }, '{"a":[[1]]}'],
  [{ a: [1] }, '{"a":[[1],2]}'],
  [{ a: { $size: 1 } }, '{"a":[[1],2]}'],
  [{ 'a.b': null }, '{"a":[1,2]}'],
  [{ 'a.b': null }, '{"a":[{"b":1},{"c":1}]}'],
  [{ 'a.b': { $ne: null } }, '{"a":[{"b":1},{"c":1}]}'],
  [{ 'a.b': { $exists: false } }, '{"a":null}'],
  [{ 'a.b': { $exists: true } }, '{"a":[null,{"b":null}]}'],
  [{ 'a.b': { $not: { $exists: true } } }, '{"a":null}'],
  [{ 'a.b.c': { $exists: false } }, '{"a":{"b":null}}'],
  [{ a: { $elemMatch: { $gt: 5 } } }, '{"a":[[1,2],[7]]}'],
  [{ 'a.b': { $elemMatch: { $gt: 5 } } }, '{"a":[{"b":[1]},{"b":[7]}]}'],
  [{ a: { $elemMatch: { $or: [{ b: 1 }, { c: 2 }] } } }, '{"a":[{"b":2},{"c":2}]}'],
  [{ a: { $elemMatch: { $or: [{ b: 1 }, { c: { $ne: 2 } }] } } }, '{"a":[[{"c":2},{"b":1}]]}'],
  [{ a: { $all: [{ b: 1 }, { c: 2 }] } }, '{"a":[{"b":1},{"c":2}]}'],
  [{ a: { $all: [[1, 2]] } }, '{"a":[[1,2],3]}'],
  [{ a: { $all: [{ $elemMatch: { $gt: 2 } }] } }, '{"a":[1,5]}'],
  [{ a: { $not: { $size: 2 } } }, '{"a":[[1,2]]}'],
  [{ a: { $not: { $in: [1], $ne: 3 } } }, '{"a":[3,1]}'],
  [{ a: { $nin: [[1, 2]] } }, '{"a":[[1,2]]}'],
  [{ a: { b: [1, { c: 'x' }] } }, '{"a":{"b":[1,{"c":"x"}]}}'],
  [{ a: { b: [1, { c: 'x' }] } }, '{"a":{"b":[1,{"c":"x","d":1}]}}'],
  [{ a: { b: 1 } }, '{"a":[{"b":1}]}'],
  [{ a: { $gt: 'B' } }, '{"a":["a",1]}'],
  [{ a: { $regex: '^1\\.' } }, '{"a":[2,"1.5"]}'],
  [{ a: { $vgte: '1.2.3' } }, '{"a":"1.2.3.4"}'],
  [{ a: { $vgte: '1.2.3' } }, '{"a":"01.2.3"}'],
  [{ a: { $vgte: '1.2.3' } }, '{"a":"1.2.3 "}'],
  [{ a: { $vgte: '1.2.3' } }, '{"a":"1234567890.0.0"}'],
  [{ a: { $vgt: '1.2.3' } }, '{"a":"999999999.0.0"}'],
  [{ a: { $vlt: '1.2.3' } }, '{"a":"1.2.03"}'],
  [{ a: { $vne: '1.2.3' } }, '{"a":["1.2.3","x"]}'],
  [{ hasOwnProperty: { $ne: 1 } }, '{}'],
  [{ admin: true }, '{"__proto__":{"admin":true}}'],
  [{ 'a.admin': true }, '{"a":{"__proto__":{"admin":true}}}'],
  // An array of scalars at a one-member path, tested element by element in the generated code; an
  // object or array among the elements hands the field to the interpreter.
  [{ tags: { $ne: 'vip' } }, '{"tags":["new","vip"]}'],
  [{ tags: { $ne: 'vip' } }, '{"tags":[]}'],
  [{ tags: { $nin: ['a', 'b'] } }, '{"tags":["c","b"]}'],
  [{ tags: { $nin: ['a', null] } }, '{"tags":["c"]}'],
  [{ tags: null }, '{"tags":[1,null]}'],
  [{ tags: { $in: ['x', null] } }, '{"tags":[]}'],
  [{ tags: { $gt: 3, $lt: 5 } }, '{"tags":[1,6]}'],
  [{ tags: { $gte: 'b', $ne: 'c' } }, '{"tags":["a","b"]}'],
  [{ tags: 'vip' }, '{"tags":[{"a":1},"vip"]}'],
  [{ tags: { $ne: 'vip' } }, '{"tags":[["vip"],"x"]}'],
  [{ tags: { $in: [1, 2] } }, '{"tags":[true,"1",2]}'],
];

for (const mode of MODES) describe(`${mode}: predicate agrees with sift`, () => {
  // Titles without `$`: vitest reads `$name` in a title as a placeholder.
  const cases = [...OPERATOR_TABLE, ...EDGE_CASES].map(([when, p]) => [JSON.stringify(when).replaceAll('$', '') + ' on ' + p, when, p] as const);
  it.each(cases)('%s', (_title, when, p) => {
    expect(compile(when, mode)(P(p))).toBe(oracle(when)(P(p)));
  });
});

// ---------------------------------------------------------------------------------------------
// Generated pairs. Small alphabets on both sides so that conditions and attributes overlap.
// Path segments are letters only: numeric segments and inherited names are covered above, and
// reach the listed differences (strings are not traversed) too often to generate blindly.
// ---------------------------------------------------------------------------------------------

const KEYS = ['a', 'b', 'c', 'd'];
const STRINGS = ['x', 'y', 'X', '', 'DE', 'de', '1.2.3', '1.10.0', '2.0.0', '0.9.9', '1.2'];
const NUMBERS = [-1, 0, 1, 2, 3, 5, 2.5, 10];
const VERSIONS = ['0.9.9', '1.2.3', '1.10.0', '2.0.0'];
const REGEXES = ['^x', 'e$', '^1\\.', '\\d', '^$'];

class Gen {
  readonly rnd: () => number;
  constructor(seed: number) {
    this.rnd = mulberry32(seed);
  }
  int(n: number): number {
    return Math.floor(this.rnd() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.rnd() < p;
  }

  scalar(): unknown {
    switch (this.int(5)) {
      case 0:
        return this.pick(NUMBERS);
      case 1:
      case 2:
        return this.pick(STRINGS);
      case 3:
        return this.chance(0.5);
      default:
        return null;
    }
  }

  /** An attribute value: nested objects and arrays, some members missing. */
  value(depth: number): unknown {
    const r = this.rnd();
    if (depth >= 3 || r < 0.5) return this.scalar();
    if (r < 0.75) {
      const out: unknown[] = [];
      for (let i = this.int(4); i > 0; i--) out.push(this.value(depth + 1));
      return out;
    }
    return this.object(depth + 1);
  }

  object(depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const k of KEYS) if (this.chance(0.7)) out[k] = this.value(depth);
    return out;
  }

  /** p as the front end sees it: parsed JSON text, sometimes with an own `__proto__` member. */
  attributes(): Record<string, unknown> {
    let text = JSON.stringify(this.object(0));
    if (this.chance(0.05)) text = '{"__proto__":{"a":1,"b":"x"}' + (text === '{}' ? '}' : ',' + text.slice(1));
    return JSON.parse(text) as Record<string, unknown>;
  }

  /** A literal for equality: no null object members (a listed difference with sift). */
  literal(depth: number): unknown {
    const r = this.rnd();
    if (depth >= 2 || r < 0.7) return this.scalar();
    if (r < 0.85) {
      const out: unknown[] = [];
      for (let i = this.int(3); i > 0; i--) out.push(this.literal(depth + 1));
      return out;
    }
    const out: Record<string, unknown> = {};
    for (const k of KEYS) {
      if (!this.chance(0.4)) continue;
      const v = this.literal(depth + 1);
      if (v !== null) out[k] = v;
    }
    return out;
  }

  path(): string {
    const segments = [this.pick(KEYS)];
    while (segments.length < 3 && this.chance(0.35)) segments.push(this.pick(KEYS));
    return segments.join('.');
  }

  operators(depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let n = 1 + (this.chance(0.3) ? 1 : 0); n > 0; n--) {
      const [name, operand] = this.operator(depth);
      out[name] = operand;
      if (name === '$regex' && this.chance(0.3)) out.$options = 'i';
    }
    return out;
  }

  operator(depth: number): [string, unknown] {
    const list = (): unknown[] => Array.from({ length: this.int(4) }, () => this.literal(1));
    switch (this.int(depth >= 2 ? 13 : 16)) {
      case 0:
        return ['$eq', this.literal(0)];
      case 1:
        return ['$ne', this.literal(0)];
      case 2:
        return [this.pick(['$gt', '$gte', '$lt', '$lte']), this.chance(0.6) ? this.pick(NUMBERS) : this.pick(STRINGS)];
      case 3:
        return ['$in', list()];
      case 4:
        return ['$nin', list()];
      case 5:
        return ['$exists', this.chance(0.5)];
      case 6:
        return ['$regex', this.pick(REGEXES)];
      case 7:
        return ['$size', this.int(4)];
      case 8:
      case 9:
        return [this.pick(['$veq', '$vne', '$vgt', '$vgte', '$vlt', '$vlte']), this.pick(VERSIONS)];
      case 10:
        // Non-empty: `$all: []` is a listed difference.
        return ['$all', Array.from({ length: 1 + this.int(3) }, () => (this.chance(0.8) ? this.scalar() : this.query(depth + 1, false)))];
      case 11:
      case 12:
        return ['$gt', this.pick(NUMBERS)];
      case 13:
        return ['$not', this.operators(depth + 1)];
      case 14:
        return ['$elemMatch', this.chance(0.5) ? this.operators(depth + 1) : this.query(depth + 1, false)];
      default:
        return ['$elemMatch', this.query(depth + 1, true)];
    }
  }

  fieldCondition(depth: number): unknown {
    return this.chance(0.35) ? this.literal(0) : this.operators(depth);
  }

  /**
   * p aimed at a condition: its top-level paths (and those of top-level $and/$or/$nor branches) set to
   * values taken from the condition's operands, so that positive operators match now and then.
   */
  aimed(when: Record<string, unknown>): Record<string, unknown> {
    const p = this.object(0);
    const aim = (query: Record<string, unknown>): void => {
      for (const [key, cond] of Object.entries(query)) {
        if (Array.isArray(cond) && key.startsWith('$')) {
          for (const branch of cond) if (this.chance(0.7)) aim(branch as Record<string, unknown>);
          continue;
        }
        if (this.chance(0.2)) continue;
        let target: Record<string, unknown> = p;
        const segments = key.split('.');
        for (const segment of segments.slice(0, -1)) {
          const next = target[segment];
          target = typeof next === 'object' && next !== null && !Array.isArray(next) ? (next as Record<string, unknown>) : (target[segment] = {});
        }
        target[segments[segments.length - 1]!] = this.aimedValue(cond);
      }
    };
    aim(when);
    return JSON.parse(JSON.stringify(p)) as Record<string, unknown>;
  }

  aimedValue(cond: unknown): unknown {
    if (typeof cond !== 'object' || cond === null || Array.isArray(cond) || !Object.keys(cond).some((k) => k.startsWith('$'))) {
      return this.chance(0.6) ? cond : this.value(1);
    }
    const [name, operand] = this.pick(Object.entries(cond as Record<string, unknown>));
    const wrap = (v: unknown): unknown => (this.chance(0.3) ? [this.scalar(), v] : v);
    if (Array.isArray(operand)) return operand.length > 0 && this.chance(0.8) ? wrap(this.pick(operand)) : this.value(1);
    if (name === '$size') return Array.from({ length: operand as number }, () => this.scalar());
    if (name === '$regex') return wrap(this.pick(STRINGS));
    if (name === '$elemMatch' || name === '$not') return [this.aimedValue(operand), this.value(2)];
    if (typeof operand === 'number' && this.chance(0.5)) return wrap(operand + this.pick([-1, 0, 1]));
    return this.chance(0.7) ? wrap(operand) : this.value(1);
  }

  /** A query: fields, sometimes $and/$or/$nor (only at the top or in an $elemMatch query). */
  query(depth: number, logical: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (let n = 1 + this.int(2); n > 0; n--) {
      if (logical && depth < 2 && this.chance(0.2)) {
        out[this.pick(['$and', '$or', '$nor'])] = Array.from({ length: 1 + this.int(3) }, () => this.query(depth + 1, true));
      } else {
        out[this.path()] = this.fieldCondition(depth);
      }
    }
    return out;
  }
}

for (const mode of MODES) describe(`${mode}: generated conditions agree with sift`, () => {
  const SEED = 20240601;
  const CONDITIONS = 500;
  const ATTRIBUTES_PER_CONDITION = 12;

  it(`${CONDITIONS * ATTRIBUTES_PER_CONDITION} (condition, p) pairs, seed ${SEED}`, () => {
    const gen = new Gen(SEED);
    const ps = Array.from({ length: 400 }, () => gen.attributes());
    let matched = 0;
    let pairs = 0;
    let discriminating = 0;
    const disagreements: string[] = [];
    for (let c = 0; c < CONDITIONS; c++) {
      const when = gen.query(0, true);
      const ours = compile(when, mode);
      const theirs = oracle(when);
      let yes = 0;
      for (let k = 0; k < ATTRIBUTES_PER_CONDITION; k++) {
        // A shared pool (conditions also meet the same p), fresh ones, and ones aimed at the condition.
        const r = gen.rnd();
        const p = r < 0.3 ? gen.pick(ps) : r < 0.5 ? gen.attributes() : gen.aimed(when);
        const got = ours(p);
        pairs++;
        if (got) yes++;
        if (got !== theirs(p)) disagreements.push(`${JSON.stringify(when)} on ${JSON.stringify(p)}: ours ${got}`);
      }
      matched += yes;
      if (yes > 0 && yes < ATTRIBUTES_PER_CONDITION) discriminating++;
    }
    expect(disagreements.slice(0, 10)).toEqual([]);
    // A generator whose pairs (almost) all match or all fail would test little: both outcomes must be
    // common, and many conditions must see both.
    expect({ matchRate: matched / pairs > 0.1 && matched / pairs < 0.9, discriminating: discriminating > CONDITIONS / 4 }).toEqual({
      matchRate: true,
      discriminating: true,
    });
  });
});

/**
 * Request bodies are parsed in a realm of their own (src/delivery/body.ts, parseBodyJson): their objects
 * and arrays have that realm's prototypes. Every condition must answer for such a p exactly as for the
 * same text parsed here, members Object.prototype also has included.
 */
for (const mode of MODES) describe(`${mode}: a body parsed in its own realm matches as one parsed here`, () => {
  it('generated conditions on generated attributes, and conditions on prototype member names', () => {
    const gen = new Gen(20261126);
    const differences: string[] = [];
    const check = (when: Record<string, unknown>, text: string): boolean => {
      const ours = compile(when, mode);
      const here = ours(JSON.parse(text) as Record<string, unknown>);
      const there = parseBodyJson(text) as Record<string, unknown>;
      expect(Object.getPrototypeOf(there)).not.toBe(Object.prototype);
      if (ours(there) !== here) differences.push(`${JSON.stringify(when)} on ${text}: here ${here}`);
      return here;
    };
    let matched = 0;
    let pairs = 0;
    for (let c = 0; c < 300; c++) {
      const when = gen.query(0, true);
      for (let k = 0; k < 8; k++) {
        const p = gen.rnd() < 0.5 ? gen.attributes() : gen.aimed(when);
        if (check(when, JSON.stringify(p))) matched++;
        pairs++;
      }
    }
    // Conditions may name these (a condition naming constructor or __proto__ is refused); bodies may hold all.
    const members = ['toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];
    const held = [...members, 'constructor', '__proto__'];
    const texts = ['{}', '{"tags":[]}', ...held.map((m) => `{"${m}":"x","tags":["${m}"]}`), ...held.map((m) => `{"a":{"${m}":{"b":1}},"list":[{"${m}":2}]}`)];
    for (const m of members) {
      for (const when of [{ [m]: { $exists: true } }, { [m]: 'x' }, { [`a.${m}.b`]: 1 }, { list: { $elemMatch: { [m]: 2 } } }, { tags: { $all: [m] } }, { [m]: { $exists: false } }]) {
        for (const text of texts) {
          if (check(when, text)) matched++;
          pairs++;
        }
      }
    }
    expect(differences.slice(0, 10)).toEqual([]);
    // Both outcomes occur, so the comparison decides something.
    expect(matched > pairs / 10 && matched < (pairs * 9) / 10).toBe(true);
  });
});

for (const mode of MODES) describe(`${mode}: compiled predicates are reusable`, () => {
  it('state from one call never leaks into the next (interleaved inputs, nested operators)', () => {
    const when = {
      a: { $elemMatch: { b: { $not: { $gt: 2 } }, c: { $in: [1, 2] } } },
      d: { $nin: [5] },
      $or: [{ e: { $exists: false } }, { e: { $all: [1, 2] } }],
    };
    const ours = compile(when, mode);
    const theirs = oracle(when);
    const inputs = [
      '{"a":[{"b":1,"c":2}],"d":1}',
      '{"a":[{"b":3,"c":2}],"d":1}',
      '{"a":[{"b":1,"c":2}],"d":[5]}',
      '{"a":[{"b":1,"c":1},{"b":9}],"e":[2,1]}',
      '{"a":[{"b":1,"c":1}],"e":[2]}',
    ].map(P);
    const expected = inputs.map((p) => theirs(p));
    expect(new Set(expected).size).toBe(2);
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < inputs.length; i++) expect(ours(inputs[(i + round) % inputs.length]!)).toBe(expected[(i + round) % inputs.length]);
    }
  });
});

for (const mode of MODES) describe(`${mode}: documented differences from sift (the documented semantics win)`, () => {
  const rows: [name: string, when: Record<string, unknown>, p: string, ours: boolean][] = [
    ['an inherited member name is a missing attribute (null matches it)', { toString: null }, '{}', true],
    ['strings are scalars: no index path into them', { 's.0': 'a' }, '{"s":"ab"}', false],
    ['strings are scalars: no length', { 's.length': 2 }, '{"s":"ab"}', false],
    ['arrays only have elements: tags.length looks into the elements', { 'tags.length': 2 }, '{"tags":[1,2]}', false],
    ['deep equality needs the same keys (a null member is not a missing one)', { a: { x: null } }, '{"a":{"y":1}}', false],
    ['$all of nothing matches nothing', { a: { $all: [] } }, '{"a":[1]}', false],
    ['$all of nothing does not match a missing attribute', { a: { $all: [] } }, '{}', false],
  ];
  it.each(rows)('%s', (_name, when, p, ours) => {
    expect(compile(when, mode)(P(p))).toBe(ours);
    expect(oracle(when)(P(p))).toBe(!ours);
  });

  it('operators sift would run inside $all members ($where) are refused when the mapping is compiled', () => {
    const problems: MappingProblem[] = [];
    compileCondition({ a: { $all: [{ $where: 'globalThis.pwned = true' }] } }, 'rules[0].when', 0, problems);
    expect(problems.map((p) => p.reason)).toEqual(['unknown operator $where']);
    expect((globalThis as Record<string, unknown>).pwned).toBeUndefined();
  });

  it('a bad regular expression inside an $all member is a problem, not a crash', () => {
    const problems: MappingProblem[] = [];
    compileCondition({ a: { $all: [{ $regex: '(' }] } }, 'rules[0].when', 0, problems);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.reason).toContain('bad regular expression');
  });
});
