import { describe, expect, it } from 'vitest';
import { RcdError } from '../../../src/runtime/errors.js';
import { MAX_P_DEPTH, parseUserContext } from '../../../src/delivery/context.js';
import { userContextSchema } from '../../../src/openapi/schemas.js';
import { NO_VERSION, TOO_WIDE, lowerBoundOf, versionAtMost } from '../../../src/shared/app-version.js';
import { isJsonContentType } from '../../../src/delivery/routes.js';

const CASES: [string, boolean][] = [
  ['{}', true],
  ['{"u":"x"}', true],
  ['{"u":"","p":{}}', true],
  ['{"u":"a","p":{"k":[1,"b"],"n":{"d":1}},"v":"0.0.0"}', true],
  ['{"v":"999999999.0.1"}', true],
  ['{"x":1}', true],
  ['{"p":{"__proto__":{"a":1}}}', true],
  ['{"p":[]}', false],
  ['{"p":1}', false],
  ['{"p":"s"}', false],
  ['{"p":null}', false],
  ['{"u":null}', false],
  ['{"u":1}', false],
  ['{"v":1}', false],
  ['{"v":null}', false],
  ['{"v":"1.2"}', false],
  ['{"v":"1.2.3.4"}', false],
  ['{"v":"1.2.3-beta"}', false],
  ['{"v":"01.2.3"}', false],
  ['{"v":"1000000000.0.0"}', false],
  ['{"v":" 1.2.3"}', false],
  ['[]', false],
  ['"s"', false],
  ['null', false],
  // p nests at most MAX_P_DEPTH levels, p itself the first.
  [`{"p":{"a":${'['.repeat(MAX_P_DEPTH - 1)}${']'.repeat(MAX_P_DEPTH - 1)}}}`, true],
  [`{"p":{"a":${'['.repeat(MAX_P_DEPTH)}${']'.repeat(MAX_P_DEPTH)}}}`, false],
  [`{"p":{"a":${'{"b":'.repeat(MAX_P_DEPTH)}1${'}'.repeat(MAX_P_DEPTH)}}}`, false],
  [`{"u":"x","p":{"a":${'['.repeat(20_000)}${']'.repeat(20_000)}}}`, false],
  // Deep elsewhere in the body is not p: nothing walks it.
  [`{"x":${'['.repeat(20_000)}${']'.repeat(20_000)}}`, true],
];

describe('parseUserContext', () => {
  for (const [body, ok] of CASES) {
    it(`${ok ? 'accepts' : 'refuses'} ${body.length > 80 ? `${body.slice(0, 60)}… (${body.length} characters)` : body}`, () => {
      if (ok) {
        expect(() => parseUserContext(body)).not.toThrow();
      } else {
        expect(() => parseUserContext(body)).toThrowError(RcdError);
      }
      // The hand-written hot path and the zod statement of the contract agree.
      const root = JSON.parse(body) as unknown;
      expect(userContextSchema.safeParse(root).success).toBe(ok);
    });
  }

  it('fills the defaults: u "", p {}, v "" and no version', () => {
    const ctx = parseUserContext('{}');
    expect(ctx).toEqual({ u: '', p: {}, v: '', version: NO_VERSION });
    expect(ctx.version).toBe(NO_VERSION);
  });

  it('keys versions so that <= orders them numerically, exactly, up to 9 digits per part', () => {
    const key = (v: string): string => parseUserContext(JSON.stringify({ v })).version.key;
    const ordered = ['0.0.0', '0.0.1', '0.9.99', '1.0.0', '1.9.99', '1.10.0', '3.1.4', '3.1.5', '3.1.999999999', '3.2.0', '10.0.0', '999999999.999999999.999999998', '999999999.999999999.999999999'];
    for (let i = 1; i < ordered.length; i++) {
      const [a, b] = [key(ordered[i - 1]!), key(ordered[i]!)];
      expect(a < b, `${ordered[i - 1]} < ${ordered[i]}`).toBe(true);
      expect(b <= a).toBe(false);
    }
    expect(key('3.1.5') <= key('3.1.5')).toBe(true);
    // No version sorts before every version.
    expect('' < key('0.0.0')).toBe(true);
  });

  it('numbers versions whose parts are all below 1024 in the same order, the rest TOO_WIDE', () => {
    const version = (v: string): { key: string; num: number } => parseUserContext(JSON.stringify({ v })).version;
    const ordered = ['0.0.0', '0.0.1', '0.0.1023', '0.1.0', '0.1023.1023', '1.0.0', '1.9.99', '1.10.0', '3.1.4', '3.1.5', '1023.1023.1023'];
    for (let i = 1; i < ordered.length; i++) {
      const [a, b] = [version(ordered[i - 1]!).num, version(ordered[i]!).num];
      expect(a < b, `${ordered[i - 1]} < ${ordered[i]}`).toBe(true);
    }
    // Small integers: stored in an object without a box of their own.
    expect(version('1023.1023.1023').num).toBe(2 ** 30 - 1);
    for (const wide of ['1024.0.0', '1.1024.0', '1.0.1024', '2024.11.3', '999999999.999999999.999999999']) expect(version(wide).num).toBe(TOO_WIDE);
    expect(NO_VERSION.num).toBe(-1);
  });

  it('compares a stored lower bound with a request version by number where both have one, else by key', () => {
    const version = (v: string): { key: string; num: number } => parseUserContext(JSON.stringify({ v })).version;
    // Each side with and without a number: every mix answers as the keys do.
    const texts = ['0.0.0', '0.9.9', '1.0.0', '1.0.1023', '1.0.1024', '1.1.0', '1023.0.0', '1024.0.0', '2024.11.3'];
    for (const boundText of texts) {
      const bound = version(boundText);
      for (const vText of texts) {
        const v = version(vText);
        expect(versionAtMost(bound.key, bound.num, v), `${boundText} <= ${vText}`).toBe(bound.key <= v.key);
      }
      // No bound (key "", number 0) is at most every version, with a number or without.
      const none = lowerBoundOf(null);
      expect(versionAtMost(none.key, none.num, bound)).toBe(true);
    }
  });

  it('gives every version the same number on every request, past the memo of parsed versions too', () => {
    const first = new Map<string, string>();
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 1500; i++) {
        const v = `${i % 7}.${i}.${i % 13}`;
        const key = parseUserContext(JSON.stringify({ v })).version.key;
        if (round === 0) first.set(v, key);
        else expect(key).toBe(first.get(v));
      }
    }
    expect(first.get('1.1.1')! > first.get('0.7.7')!).toBe(true);
    // A malformed version is refused however many valid ones were seen before it.
    expect(() => parseUserContext('{"v":"1.2"}')).toThrow(RcdError);
  });

  it('uses invalid_json for empty and malformed bodies, invalid_body for wrong shapes', () => {
    const code = (body: string): string => {
      try {
        parseUserContext(body);
        return 'none';
      } catch (err) {
        return (err as RcdError).code;
      }
    };
    expect(code('')).toBe('invalid_json');
    expect(code('{')).toBe('invalid_json');
    expect(code('[]')).toBe('invalid_body');
  });
});

describe('isJsonContentType', () => {
  it.each([
    ['application/json', true],
    ['application/json; charset=utf-8', true],
    ['APPLICATION/JSON', true],
    [' application/json ;charset=UTF-8', true],
    ['application/jsonp', false],
    ['text/json', false],
    ['', false],
  ])('%s → %s', (value, ok) => {
    expect(isJsonContentType(value)).toBe(ok);
  });
});
