/**
 * `$regex` conditions on RE2 (src/mapping/condition/regex.ts): patterns RE2 cannot run in linear time are
 * refused when a mapping is validated (code invalid_mapping, naming the rule), the documented limits
 * hold, nested quantifiers run in linear time, and typical patterns answer as JavaScript's RegExp
 * did, except for the listed RE2 differences (docs/api.md).
 */
import { readFileSync } from 'node:fs';
import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { prng } from '../../../../bench/fixtures/generate.js';
import { RcdError } from '../../../../src/runtime/errors.js';
import { compileCondition, type Predicate } from '../../../../src/mapping/condition/validate.js';
import { validateMapping } from '../../../../src/mapping/index.js';
import type { MappingProblem } from '../../../../src/mapping/problems.js';
import { MAX_REGEX_INPUT, MAX_REGEX_PROGRAM, MAX_REGEX_SCAN, MAX_REGEX_SOURCE, compileRegex, programBound, regexMatches } from '../../../../src/mapping/condition/regex.js';

function problemsOf(when: unknown): MappingProblem[] {
  const problems: MappingProblem[] = [];
  compileCondition(when, 'rules[0].when', 0, problems);
  return problems;
}

function compile(when: Record<string, unknown>): Predicate {
  const problems = problemsOf(when);
  expect(problems).toEqual([]);
  const predicate = compileCondition(when, 'rules[0].when', 0, []);
  if (predicate === null) throw new Error('condition matches everyone');
  return predicate;
}

/** The RcdError validateMapping throws for a two-rule mapping whose second rule (index 1) has `when`. */
function refusal(when: unknown): RcdError {
  const mapping = { rules: [{ segment: 'ok', when: { a: 'x' }, patch: { b: 1 } }, { segment: 'bad', when, patch: { b: 2 } }] };
  try {
    validateMapping(mapping, { b: 0 });
  } catch (err) {
    if (err instanceof RcdError) return err;
    throw err;
  }
  throw new Error(`accepted: ${JSON.stringify(when)}`);
}

const UNSUPPORTED: [name: string, pattern: string][] = [
  ['backreference', '(a)\\1'],
  ['named backreference', '(?<n>a)\\k<n>'],
  ['lookahead', 'a(?=b)'],
  ['negative lookahead', 'a(?!b)'],
  ['lookbehind', '(?<=a)b'],
  ['negative lookbehind', '(?<!a)b'],
  ['atomic group', '(?>a+)b'],
  ['possessive quantifier', 'a++b'],
  ['\\Z', 'a\\Z'],
  ['unbalanced group', '(a'],
  ['repeat over 1000', 'a{1001}'],
];

describe('patterns RE2 refuses are refused when the mapping is validated', () => {
  it.each(UNSUPPORTED)('%s: %s', (_name, pattern) => {
    const err = refusal({ name: { $regex: pattern } });
    expect(err.code).toBe('invalid_mapping');
    const details = err.details as MappingProblem[];
    expect(details).toHaveLength(1);
    expect(details[0]).toMatchObject({ rule: 1, path: 'rules[1].when.name.$regex' });
  });

  it('in $not, $elemMatch, $and branches and $all members alike (the evaluator compiles through the same function)', () => {
    for (const when of [
      { a: { $not: { $regex: '(?=x)' } } },
      { a: { $elemMatch: { $regex: '(?=x)' } } },
      { $and: [{ a: { $regex: '(?=x)' } }] },
      { a: { $all: [{ $regex: '(?=x)' }] } },
    ]) {
      const err = refusal(when);
      expect(err.code).toBe('invalid_mapping');
      expect((err.details as MappingProblem[]).map((p) => p.rule)).toEqual([1]);
    }
  });

  it('refuses $options other than i, m, s, u, a repeated flag, and a non-string', () => {
    for (const options of ['g', 'y', 'x', 'ii', 'imsuu', 1, null, ['i']]) {
      const err = refusal({ a: { $regex: 'x', $options: options } });
      expect(err.code).toBe('invalid_mapping');
      expect((err.details as MappingProblem[])[0]).toMatchObject({ rule: 1 });
    }
  });

  it(`refuses a pattern longer than ${MAX_REGEX_SOURCE} characters and accepts one of exactly that length`, () => {
    // One character class spelled out long: 512 characters of text, one instruction.
    const longClass = '[' + 'a-z0-9'.repeat((MAX_REGEX_SOURCE - 2) / 6) + ']';
    expect(longClass).toHaveLength(MAX_REGEX_SOURCE);
    expect(problemsOf({ a: { $regex: longClass } })).toEqual([]);
    expect(refusal({ a: { $regex: longClass + '?' } }).code).toBe('invalid_mapping');
  });

  it(`refuses a pattern compiling to more than ${MAX_REGEX_PROGRAM} instructions, whatever its length`, () => {
    const big = compileRegex('[a-z]{1,200}', undefined);
    expect(big.regex).toBeNull();
    expect(refusal({ a: { $regex: '[a-z]{1,200}' } }).code).toBe('invalid_mapping');
    // A typical bounded repeat stays well inside.
    expect(problemsOf({ a: { $regex: '^[a-z0-9]{1,64}$' } })).toEqual([]);
  });

  it('refuses a counted repeat that would expand to hundreds of thousands of instructions without building it', () => {
    // re2js would build 490,000 instructions (~300 ms) before the size check could refuse it.
    const huge = '(?:' + 'abcdefghij'.repeat(49) + '){1000}';
    const start = performance.now();
    expect(compileRegex(huge, undefined).regex).toBeNull();
    expect(performance.now() - start).toBeLessThan(20);
    expect(refusal({ a: { $regex: 'a{0,1000}'.repeat(50) } }).code).toBe('invalid_mapping');
  });

  it('validation and evaluation agree: whatever compileRegex refuses, compileCondition refuses, and vice versa', () => {
    const patterns = [...UNSUPPORTED.map(([, p]) => p), '^(a+)+$', '(x+x+)+y', '\\p{Greek}', '(?i)bob', '[[:alpha:]]+', 'a{2,5}', '\\Qa.b\\E'];
    for (const pattern of patterns) {
      const direct = compileRegex(pattern, undefined).error === null;
      expect(problemsOf({ a: { $regex: pattern } }).length === 0, pattern).toBe(direct);
      expect(problemsOf({ a: { $all: [{ $regex: pattern }] } }).length === 0, pattern).toBe(direct);
    }
  });
});

describe('linear time', () => {
  it('^(a+)+$ is accepted and answers at once on inputs that take JavaScript seconds or forever', () => {
    const predicate = compile({ name: { $regex: '^(a+)+$' } });
    for (const name of ['a'.repeat(28) + '!', 'a'.repeat(1000) + '!', 'a'.repeat(10_000) + '!', 'a'.repeat(MAX_REGEX_INPUT - 1) + '!']) {
      const start = performance.now();
      expect(predicate({ name })).toBe(false);
      expect(performance.now() - start).toBeLessThan(50);
    }
    expect(predicate({ name: 'a'.repeat(28) })).toBe(true);
  });

  it('other classic catastrophic patterns run in linear time too', () => {
    const cases: [string, string][] = [
      ['(x+x+)+y', 'x'.repeat(1000)],
      ['^(a|a)*$', 'a'.repeat(1000) + 'b'],
      ['^(a|aa)+$', 'a'.repeat(1000) + 'b'],
      ['^([a-z]+)*[0-9]$', 'abcdefghij'.repeat(100) + '!'],
      ['^(\\w+\\s?)*$', 'word '.repeat(200) + '!'],
    ];
    for (const [pattern, input] of cases) {
      const predicate = compile({ s: { $regex: pattern } });
      const start = performance.now();
      expect(predicate({ s: input }), pattern).toBe(false);
      expect(performance.now() - start, pattern).toBeLessThan(50);
    }
  });
});

describe(`the input limit (${MAX_REGEX_INPUT} UTF-16 code units)`, () => {
  it('a string up to the limit is tested; a longer one never matches, so $not of it matches', () => {
    const positive = compile({ name: { $regex: '^a+$' } });
    const negated = compile({ name: { $not: { $regex: '^a+$' } } });
    expect(positive({ name: 'a'.repeat(MAX_REGEX_INPUT) })).toBe(true);
    expect(negated({ name: 'a'.repeat(MAX_REGEX_INPUT) })).toBe(false);
    expect(positive({ name: 'a'.repeat(MAX_REGEX_INPUT + 1) })).toBe(false);
    expect(negated({ name: 'a'.repeat(MAX_REGEX_INPUT + 1) })).toBe(true);
  });

  it('applies per string: an array element within the limit still matches beside an over-long one', () => {
    const predicate = compile({ tags: { $regex: '^vip' } });
    expect(predicate({ tags: ['vip'.repeat(MAX_REGEX_INPUT), 'vip-gold'] })).toBe(true);
    expect(predicate({ tags: ['vip'.repeat(MAX_REGEX_INPUT)] })).toBe(false);
  });
});

// Typical patterns and inputs: RE2 answers exactly as JavaScript's RegExp (what the evaluator used
// before) on all of them.
const SAME_AS_REGEXP: [pattern: string, options: string, inputs: string[]][] = [
  ['@example\\.com$', '', ['a@example.com', 'a@example.org', 'a@example.com.evil', '@example.com', '']],
  ['^bob', 'i', ['BOB', 'bobby', 'Rob', 'xbob', 'Bob Smith']],
  ['^(iPhone|iPad)1[2-5]', '', ['iPhone13,2', 'iPad14,1', 'iPhone11,8', 'SM-G991B', 'iphone13']],
  ['^\\d+\\.\\d+\\.\\d+$', '', ['1.2.3', '1.2', '01.2.3', 'v1.2.3', '1.2.3\n']],
  ['^[A-Z]{2}$', '', ['DE', 'de', 'DEU', 'D', '']],
  ['^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$', 'i', ['Jane.Doe@Example.COM', 'no-at-sign', 'a@b.c', 'x@y.zz']],
  ['^line$', 'm', ['first\nline\nlast', 'line', 'lines', 'a line']],
  ['a.b', 's', ['a\nb', 'axb', 'ab']],
  ['a.b', '', ['a\nb', 'axb']],
  ['\\bgold\\b', '', ['gold', 'golden', 'tier gold', 'marigold', 'gold-tier']],
  ['^$', '', ['', ' ', '\n']],
  ['colou?r', 'i', ['Color', 'COLOUR', 'colr']],
  ['^[^@\\s]+$', '', ['abc', 'a b', 'a@b', '']],
  ['(?:de|fr)_(?:DE|FR|CH)', '', ['de_CH', 'fr_FR', 'en_US', 'xde_DEx']],
  ['^\\w+$', '', ['abc_123', 'abc-123', 'é']],
  ['\\.', '', ['a.b', 'ab']],
  ['[\\d,]+', '', ['1,000', 'none']],
];

describe('same answers as JavaScript RegExp on typical patterns', () => {
  it.each(SAME_AS_REGEXP)('%s /%s', (pattern, options, inputs) => {
    const regex = compileRegex(pattern, options === '' ? undefined : options).regex;
    if (regex === null) throw new Error(`refused: ${pattern}`);
    const native = new RegExp(pattern, options);
    for (const input of inputs) expect(regexMatches(regex, input), JSON.stringify(input)).toBe(native.test(input));
  });
});

describe('documented RE2 differences from JavaScript RegExp', () => {
  const re2 = (pattern: string, options?: string): ((s: string) => boolean) => {
    const regex = compileRegex(pattern, options).regex;
    if (regex === null) throw new Error(`refused: ${pattern}`);
    return (s) => regexMatches(regex, s);
  };

  it('. and negated classes match a whole code point (JavaScript without u: one UTF-16 unit)', () => {
    expect(re2('^.$')('😀')).toBe(true);
    expect(/^.$/.test('😀')).toBe(false);
  });

  it('. without s excludes only \\n (JavaScript: also \\r, U+2028, U+2029)', () => {
    expect(re2('a.b')('a\rb')).toBe(true);
    expect(/a.b/.test('a\rb')).toBe(false);
    expect(re2('a.b')('a\nb')).toBe(false);
  });

  it('\\s is ASCII whitespace only (JavaScript: also Unicode spaces such as U+00A0)', () => {
    expect(re2('\\s')('\u00a0')).toBe(false);
    expect(/\s/.test('\u00a0')).toBe(true);
    expect(re2('\\s')('\t')).toBe(true);
  });

  it('i uses Unicode simple case folding (the Kelvin sign folds to k)', () => {
    expect(re2('k', 'i')('\u212a')).toBe(true);
    expect(/k/i.test('\u212a')).toBe(false);
  });

  it('\\p{..} classes work with or without u; u changes nothing', () => {
    expect(re2('^\\p{Lu}')('Éa')).toBe(true);
    expect(re2('^\\p{Lu}', 'u')('Éa')).toBe(true);
    expect(re2('^\\p{Greek}+$', 'iu')('ΑΒΓ')).toBe(true);
  });

  it('$ without m matches only at the very end (as in JavaScript, unlike Perl)', () => {
    expect(re2('a$')('a\n')).toBe(false);
    expect(/a$/.test('a\n')).toBe(false);
  });

  it('lone surrogates in p are ordinary input, not an error', () => {
    expect(re2('^a.b$')('a\ud800b')).toBe(true);
    expect(re2('x')('\udc00x')).toBe(true);
  });
});

describe(`the read budget (${MAX_REGEX_SCAN} characters per $regex per evaluation)`, () => {
  const element = 'x'.repeat(MAX_REGEX_INPUT - 1) + 'y';

  it('array elements are read in order until the budget is spent; later ones do not match', () => {
    const predicate = compile({ tags: { $regex: 'y$' } });
    const fits = MAX_REGEX_SCAN / element.length;
    const within = Array.from({ length: fits - 1 }, () => 'x'.repeat(element.length));
    expect(predicate({ tags: [...within, element] })).toBe(true);
    expect(predicate({ tags: [...within, 'x'.repeat(element.length), element] })).toBe(false);
    // A short string that would still fit after a refused long one does not match either.
    expect(predicate({ tags: [...within, 'x'.repeat(element.length), 'x', 'y'] })).toBe(false);
  });

  it('starts afresh with every evaluation and for every $regex op', () => {
    const predicate = compile({ a: { $regex: 'y$' }, b: { $regex: 'y$' } });
    const full = Array.from({ length: MAX_REGEX_SCAN / element.length }, () => element);
    for (let i = 0; i < 3; i++) expect(predicate({ a: full, b: full })).toBe(true);
  });

  it('strings over the input limit are not read, so they do not spend the budget', () => {
    const predicate = compile({ tags: { $regex: 'y$' } });
    const tooLong = Array.from({ length: 10 }, () => 'x'.repeat(MAX_REGEX_INPUT + 1));
    expect(predicate({ tags: [...tooLong, element] })).toBe(true);
  });

  it('bounds a request of long strings: 64 KiB of 1 KiB elements against a DFA-defeating pattern', () => {
    const pattern = '(?:[ab]*a[ab]{8}){23}[cd]';
    const predicate = compile({ tags: { $regex: pattern } });
    const regex = compileRegex(pattern, undefined).regex!;
    let seed = 7;
    const random = (): string => {
      let s = '';
      for (let i = 0; i < MAX_REGEX_INPUT; i++) {
        seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
        s += seed & 0x10000 ? 'a' : 'b';
      }
      return s;
    };
    const strings = (n: number): string[] => Array.from({ length: n }, random);
    // Warm-up on other strings: the engine's code compiled by the JIT, as in a running server.
    predicate({ tags: strings(4) });
    for (const s of strings(4)) regexMatches(regex, s);
    // What 64 tests cost on this machine right now (new strings: new DFA states), against the
    // condition on 64 other new strings: relative, so that a loaded machine slows both alike.
    let start = performance.now();
    for (const s of strings(64)) regexMatches(regex, s);
    const all = performance.now() - start;
    const tags = strings(64);
    start = performance.now();
    expect(predicate({ tags })).toBe(false);
    const budgeted = performance.now() - start;
    // The budget reads 4 of the 64 (measured: ~20-40 ms against 0.4-0.7 s for all 64).
    expect(budgeted * 4).toBeLessThan(all);
  });
});

describe('docs/api.md', () => {
  it('states the limits the code enforces', () => {
    const docs = readFileSync(new URL('../../../../docs/api.md', import.meta.url), 'utf8');
    const n = (x: number): string => x.toLocaleString('en-US');
    expect(docs).toContain(`| ${n(MAX_REGEX_SOURCE)} / ${n(MAX_REGEX_PROGRAM)} instructions / ${n(MAX_REGEX_INPUT)} / ${n(MAX_REGEX_SCAN)} (UTF-16 code units) |`);
    expect(docs).toContain(`at most ${n(MAX_REGEX_SOURCE)} UTF-16 code units, else refused`);
    expect(docs).toContain(`at most ${n(MAX_REGEX_PROGRAM)} instructions, else refused`);
    expect(docs).toContain(`longer than ${n(MAX_REGEX_INPUT)} UTF-16 code units is not tested`);
    expect(docs).toContain(`reads at most ${n(MAX_REGEX_SCAN)} code units in total`);
  });
});

describe('programBound, the textual bound checked before compiling', () => {
  // Atoms include what compiles to nothing (`(?i)`, `\Q\E`, `(?:)`), after which a quantifier repeats
  // the atom before: the cases a reading of the text most easily undercounts.
  const ATOMS = ['a', 'b', 'é', '.', '\\d', '\\pL', '\\p{Greek}', '\\x{41}', '\\.', '[a-z]', '[^0-9]', '[]a]', '[[:alpha:]x]', '\\Qa.b\\E', '^', '$', '\\b', '{', '}', '[\\]]', '', '(?:)', '(?i)', 'x*', '\\Q\\E'];
  const QUANTIFIERS = ['', '', '', '*', '+', '?', '*?', '??', '{2}', '{0,3}', '{3,}', '{1,40}', '{12}', '{0}', '{0,}', '{1}'];
  const GROUPS = ['(', '(?:', '(?i)(?:', '(?P<n>', '(?s:', '(?i:'];

  function generate(rnd: () => number, depth: number): string {
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)]!;
    let out = '';
    for (let n = 1 + Math.floor(rnd() * 4); n > 0; n--) {
      const inner = depth < 3 && rnd() < 0.35 ? pick(GROUPS) + generate(rnd, depth + 1) + ')' : pick(ATOMS);
      out += inner + pick(QUANTIFIERS);
      if (rnd() < 0.2) out += '|';
    }
    return out;
  }

  it('is never below the size re2js compiles to (10,000 generated patterns, fixed seed)', () => {
    const rnd = prng(20261122);
    let compiled = 0;
    for (let k = 0; k < 10_000; k++) {
      const pattern = generate(rnd, 0);
      let size: number;
      try {
        size = RE2JS.compile(pattern).programSize();
      } catch {
        continue;
      }
      compiled++;
      expect(programBound(pattern), pattern).toBeGreaterThanOrEqual(size);
    }
    expect(compiled).toBeGreaterThan(5000);
  });

  it('refuses nothing within the real limit: patterns of up to 256 instructions stay under the pre-check', () => {
    for (const pattern of ['^[a-z0-9]{1,64}$', '(?:(?:(?:x){6}){6}){6}', '(?i)(?:\\Qabc\\E){60}', 'a{0,120}', '(?:(?:a|b){10}){12}']) {
      const size = RE2JS.compile(pattern).programSize();
      expect(size, pattern).toBeLessThanOrEqual(MAX_REGEX_PROGRAM);
      expect(compileRegex(pattern, undefined).error, pattern).toBeNull();
    }
  });
});
