import { describe, expect, it } from 'vitest';
import { compileCondition } from '../../../../src/mapping/condition/validate.js';
import type { MappingProblem } from '../../../../src/mapping/problems.js';

function compile(when: unknown): (p: Record<string, unknown>) => boolean {
  const problems: MappingProblem[] = [];
  const predicate = compileCondition(when, 'rules[0].when', 0, problems);
  expect(problems).toEqual([]);
  return predicate ?? (() => true);
}

function problemsOf(when: unknown): MappingProblem[] {
  const problems: MappingProblem[] = [];
  compileCondition(when, 'rules[0].when', 0, problems);
  return problems;
}

// JSON.parse, as the front end does: p is what a client sent.
const P = (json: string): Record<string, unknown> => JSON.parse(json) as Record<string, unknown>;

type Row = [name: string, when: unknown, p: string, expected: boolean];

const rows: Row[] = [
  ['implicit equality match', { country: 'DE' }, '{"country":"DE"}', true],
  ['implicit equality no match', { country: 'DE' }, '{"country":"FR"}', false],
  ['implicit equality missing', { country: 'DE' }, '{}', false],
  ['implicit equality on array member', { tags: 'vip' }, '{"tags":["vip","new"]}', true],
  ['implicit equality on array, absent member', { tags: 'vip' }, '{"tags":["new"]}', false],
  ['implicit equality whole array', { tags: ['vip', 'new'] }, '{"tags":["vip","new"]}', true],
  ['null matches missing (MongoDB)', { a: null }, '{}', true],
  ['nested path', { 'device.os': 'ios' }, '{"device":{"os":"ios"}}', true],
  ['nested path no match', { 'device.os': 'ios' }, '{"device":{"os":"android"}}', false],
  ['nested path missing parent', { 'device.os': 'ios' }, '{"device":null}', false],
  ['nested path through array', { 'items.kind': 'sword' }, '{"items":[{"kind":"bow"},{"kind":"sword"}]}', true],
  ['$eq', { level: { $eq: 3 } }, '{"level":3}', true],
  ['$eq no match', { level: { $eq: 3 } }, '{"level":4}', false],
  ['$eq missing', { level: { $eq: 3 } }, '{}', false],
  ['$ne', { level: { $ne: 3 } }, '{"level":4}', true],
  ['$ne no match', { level: { $ne: 3 } }, '{"level":3}', false],
  ['$ne missing matches (negation)', { level: { $ne: 3 } }, '{}', true],
  ['$gt', { level: { $gt: 3 } }, '{"level":4}', true],
  ['$gt equal', { level: { $gt: 3 } }, '{"level":3}', false],
  ['$gt missing', { level: { $gt: 3 } }, '{}', false],
  ['$gt wrong type', { level: { $gt: 3 } }, '{"level":"9"}', false],
  ['$gte', { level: { $gte: 3 } }, '{"level":3}', true],
  ['$gte no match', { level: { $gte: 3 } }, '{"level":2}', false],
  ['$lt', { level: { $lt: 3 } }, '{"level":2}', true],
  ['$lt no match', { level: { $lt: 3 } }, '{"level":3}', false],
  ['$lt missing', { level: { $lt: 3 } }, '{}', false],
  ['$lte', { level: { $lte: 3 } }, '{"level":3}', true],
  ['$lte no match', { level: { $lte: 3 } }, '{"level":4}', false],
  ['$gt on array member', { scores: { $gt: 10 } }, '{"scores":[1,20]}', true],
  ['string comparison', { name: { $gte: 'm' } }, '{"name":"zed"}', true],
  ['$in', { country: { $in: ['DE', 'AT'] } }, '{"country":"AT"}', true],
  ['$in no match', { country: { $in: ['DE', 'AT'] } }, '{"country":"FR"}', false],
  ['$in missing', { country: { $in: ['DE', 'AT'] } }, '{}', false],
  ['$in on array', { tags: { $in: ['vip'] } }, '{"tags":["new","vip"]}', true],
  ['$nin', { country: { $nin: ['DE'] } }, '{"country":"FR"}', true],
  ['$nin no match', { country: { $nin: ['DE'] } }, '{"country":"DE"}', false],
  ['$nin missing matches (negation)', { country: { $nin: ['DE'] } }, '{}', true],
  ['$exists true', { a: { $exists: true } }, '{"a":0}', true],
  ['$exists true missing', { a: { $exists: true } }, '{}', false],
  ['$exists false', { a: { $exists: false } }, '{}', true],
  ['$exists false present', { a: { $exists: false } }, '{"a":null}', false],
  ['$exists on inherited name', { toString: { $exists: true } }, '{}', false],
  ['$regex', { email: { $regex: '@example\\.com$' } }, '{"email":"a@example.com"}', true],
  ['$regex no match', { email: { $regex: '@example\\.com$' } }, '{"email":"a@example.org"}', false],
  ['$regex missing', { email: { $regex: '.*' } }, '{}', false],
  ['$regex non-string', { n: { $regex: '1' } }, '{"n":1}', false],
  ['$regex with $options', { name: { $regex: '^bob', $options: 'i' } }, '{"name":"BOB"}', true],
  ['$size', { tags: { $size: 2 } }, '{"tags":["a","b"]}', true],
  ['$size no match', { tags: { $size: 2 } }, '{"tags":["a"]}', false],
  ['$size missing', { tags: { $size: 0 } }, '{}', false],
  ['$all', { tags: { $all: ['a', 'b'] } }, '{"tags":["b","c","a"]}', true],
  ['$all no match', { tags: { $all: ['a', 'b'] } }, '{"tags":["a"]}', false],
  ['$all missing', { tags: { $all: ['a'] } }, '{}', false],
  ['$elemMatch query', { items: { $elemMatch: { kind: 'sword', level: { $gte: 5 } } } }, '{"items":[{"kind":"sword","level":2},{"kind":"sword","level":7}]}', true],
  ['$elemMatch query no match (different elements)', { items: { $elemMatch: { kind: 'sword', level: { $gte: 5 } } } }, '{"items":[{"kind":"sword","level":2},{"kind":"bow","level":7}]}', false],
  ['$elemMatch operators', { scores: { $elemMatch: { $gt: 5, $lt: 10 } } }, '{"scores":[1,7,20]}', true],
  ['$elemMatch operators no match', { scores: { $elemMatch: { $gt: 5, $lt: 10 } } }, '{"scores":[1,20]}', false],
  ['$elemMatch missing', { scores: { $elemMatch: { $gt: 5 } } }, '{}', false],
  ['$not', { level: { $not: { $gt: 5 } } }, '{"level":3}', true],
  ['$not no match', { level: { $not: { $gt: 5 } } }, '{"level":7}', false],
  ['$not missing matches (negation)', { level: { $not: { $gt: 5 } } }, '{}', true],
  ['$and', { $and: [{ a: 1 }, { b: 2 }] }, '{"a":1,"b":2}', true],
  ['$and no match', { $and: [{ a: 1 }, { b: 2 }] }, '{"a":1,"b":3}', false],
  ['$or', { $or: [{ a: 1 }, { b: 2 }] }, '{"b":2}', true],
  ['$or no match', { $or: [{ a: 1 }, { b: 2 }] }, '{"a":2}', false],
  ['$nor', { $nor: [{ a: 1 }, { b: 2 }] }, '{"a":2}', true],
  ['$nor no match', { $nor: [{ a: 1 }, { b: 2 }] }, '{"b":2}', false],
  ['several fields are AND', { a: 1, b: { $gt: 1 } }, '{"a":1,"b":0}', false],
  ['$veq', { app: { $veq: '1.2.3' } }, '{"app":"1.2.3"}', true],
  ['$veq no match', { app: { $veq: '1.2.3' } }, '{"app":"1.2.4"}', false],
  ['$vne', { app: { $vne: '1.2.3' } }, '{"app":"1.2.4"}', true],
  ['$vne no match', { app: { $vne: '1.2.3' } }, '{"app":"1.2.3"}', false],
  ['$vne missing does not match', { app: { $vne: '1.2.3' } }, '{}', false],
  ['$vgt numeric not lexical', { app: { $vgt: '1.9.0' } }, '{"app":"1.10.0"}', true],
  ['$vgt no match', { app: { $vgt: '1.9.0' } }, '{"app":"1.9.0"}', false],
  ['$vgte boundary', { app: { $vgte: '2.0.0' } }, '{"app":"2.0.0"}', true],
  ['$vgte no match', { app: { $vgte: '2.0.0' } }, '{"app":"1.99.99"}', false],
  ['$vlt', { app: { $vlt: '2.0.0' } }, '{"app":"1.99.99"}', true],
  ['$vlt boundary', { app: { $vlt: '2.0.0' } }, '{"app":"2.0.0"}', false],
  ['$vlte boundary', { app: { $vlte: '2.0.0' } }, '{"app":"2.0.0"}', true],
  ['$vlte no match', { app: { $vlte: '2.0.0' } }, '{"app":"2.0.1"}', false],
  ['$vgt missing', { app: { $vgt: '0.0.0' } }, '{}', false],
  ['$vgt not a version', { app: { $vgt: '0.0.0' } }, '{"app":"1.2"}', false],
  ['$vgt number', { app: { $vgt: '0.0.0' } }, '{"app":1}', false],
  ['version op on array member', { versions: { $vgte: '3.0.0' } }, '{"versions":["1.0.0","3.1.0"]}', true],
  ['version op nested', { 'client.app': { $vlt: '1.0.0' } }, '{"client":{"app":"0.9.9"}}', true],
];

describe('condition operators', () => {
  it.each(rows)('%s', (_name, when, p, expected) => {
    expect(compile(when)(P(p))).toBe(expected);
  });

  it('absent or empty when matches everyone without a predicate call', () => {
    const problems: MappingProblem[] = [];
    expect(compileCondition(undefined, 'w', 0, problems)).toBeNull();
    expect(compileCondition({}, 'w', 0, problems)).toBeNull();
    expect(problems).toEqual([]);
  });

  it('a compiled predicate is reusable: same answers for interleaved inputs', () => {
    const pred = compile({ level: { $gt: 3 }, tags: 'vip' });
    const yes = P('{"level":5,"tags":["vip"]}');
    const no = P('{"level":5,"tags":["x"]}');
    for (let i = 0; i < 100; i++) {
      expect(pred(yes)).toBe(true);
      expect(pred(no)).toBe(false);
    }
  });
});

describe('condition validation', () => {
  const cases: [string, unknown, string][] = [
    ['unknown operator', { a: { $foo: 1 } }, 'unknown operator $foo'],
    ['$where is refused', { $where: 'true' }, 'unknown operator $where'],
    ['$where inside a field is refused', { a: { $where: 'true' } }, 'unknown operator $where'],
    ['$mod is not offered', { a: { $mod: [2, 0] } }, 'unknown operator $mod'],
    ['$type is not offered', { a: { $type: 'string' } }, 'unknown operator $type'],
    ['bad regex', { a: { $regex: '(' } }, 'bad regular expression'],
    ['stateful regex flag', { a: { $regex: 'x', $options: 'g' } }, '$options may only hold'],
    ['$options without $regex', { a: { $options: 'i' } }, 'only allowed next to $regex'],
    ['$in needs an array', { a: { $in: 'x' } }, '$in needs an array'],
    ['$gt needs a number or string', { a: { $gt: [1] } }, '$gt needs a number or a string'],
    ['$exists needs a boolean', { a: { $exists: 1 } }, '$exists needs true or false'],
    ['$size needs an integer', { a: { $size: 1.5 } }, '$size needs a non-negative integer'],
    ['$and needs an array', { $and: {} }, '$and needs a non-empty array'],
    ['$not needs operators', { a: { $not: 5 } }, '$not needs an object of operators'],
    ['bad version operand', { a: { $vgt: '1.2' } }, '$vgt needs a version string X.Y.Z'],
    ['mixing operators and fields', { a: { $gt: 1, b: 2 } }, 'mixed with operators'],
    ['__proto__ path', JSON.parse('{"__proto__":{"polluted":true}}'), 'key "__proto__" is not allowed'],
    ['constructor path segment', { 'constructor.name': 'Object' }, 'key "constructor" is not allowed'],
    ['prototype inside a literal', { a: { x: { prototype: 1 } } }, 'key "prototype" is not allowed'],
    ['__proto__ inside $eq operand', JSON.parse('{"a":{"$eq":{"__proto__":{"x":1}}}}'), 'key "__proto__" is not allowed'],
    ['empty path segment', { 'a..b': 1 }, 'empty segment'],
    ['not an object', [1], 'must be an object'],
  ];
  it.each(cases)('%s', (_name, when, reason) => {
    const problems = problemsOf(when);
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]?.rule).toBe(0);
    expect(problems[0]?.path.startsWith('rules[0].when')).toBe(true);
    expect(problems.map((p) => p.reason).join('\n')).toContain(reason);
  });

  it('collects every problem, not only the first', () => {
    expect(problemsOf({ a: { $foo: 1 }, b: { $regex: '[' } })).toHaveLength(2);
  });

  // Validation checks an operator where it stands; compilation checks the operators inside $all
  // members, which validation does not look into. Both read one operator table, so an operand is
  // refused in both places or in neither, with the same reason.
  const operands: unknown[] = [null, true, 0, -1, 1.5, 3, '', 'x', '1.2.3', [], [1], [{ $gt: 1 }], [{ b: 1 }], {}, { b: 1 }, { $gt: 1 }];
  const names = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$all', '$exists', '$regex', '$options', '$size', '$elemMatch', '$not', '$and', '$or', '$nor', '$veq', '$vne', '$vgt', '$vgte', '$vlt', '$vlte', '$where', '$mod', '$type'];
  it.each(names)('%s: validation and compilation agree on every operand shape', (name) => {
    for (const operand of operands) {
      const where = problemsOf({ a: { [name]: operand } })[0]?.reason ?? null;
      const inAll = problemsOf({ a: { $all: [{ [name]: operand }] } })[0]?.reason ?? null;
      expect(inAll, `${name}: ${JSON.stringify(operand)}`).toBe(where);
    }
  });
});

describe('prototype pollution through p', () => {
  it('a __proto__ key in p is plain data and changes no prototype', () => {
    const pred = compile({ admin: true });
    const p = P('{"__proto__":{"admin":true},"constructor":{"prototype":{"admin":true}}}');
    expect(pred(p)).toBe(false);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    expect(Object.getPrototypeOf(p)).toBe(Object.prototype);
  });
});
