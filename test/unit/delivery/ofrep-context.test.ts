/**
 * The OFREP evaluation context → rcd's user context (docs/openfeature.md, "Mapping"): targetingKey → u,
 * appVersion → v under the rule of v, every other attribute → p; failures carry the codes the OFREP
 * routes turn into PARSE_ERROR and INVALID_CONTEXT.
 */
import { describe, expect, it } from 'vitest';
import { RcdError } from '../../../src/runtime/errors.js';
import { parseOfrepContext } from '../../../src/delivery/ofrep/context.js';
import { MAX_P_DEPTH, parseUserContext } from '../../../src/delivery/context.js';
import { errorCodeOf, ofrepErrorBody } from '../../../src/delivery/ofrep/errors.js';

function codeOf(text: string): string {
  try {
    parseOfrepContext(text);
  } catch (err) {
    return (err as RcdError).code;
  }
  return 'accepted';
}

describe('the OFREP evaluation context', () => {
  it('maps targetingKey to u, appVersion to v and the other attributes to p, as the native body would carry them', () => {
    const ofrep = parseOfrepContext('{"context":{"targetingKey":"player-1","country":"DE","level":12,"tags":["vip"],"appVersion":"1.4.2"}}');
    const native = parseUserContext('{"u":"player-1","p":{"country":"DE","level":12,"tags":["vip"]},"v":"1.4.2"}');
    expect(ofrep.user).toEqual(native);
    expect(Object.keys(ofrep.user)).toEqual(Object.keys(native));
    expect(ofrep.targeted).toBe(true);
  });

  it('an empty body object, or a context without targetingKey, is the empty user; targeted says whether a key was named', () => {
    for (const text of ['{}', '{"context":{}}']) {
      const c = parseOfrepContext(text);
      expect(c.user).toEqual(parseUserContext('{}'));
      expect(c.targeted).toBe(false);
    }
    const empty = parseOfrepContext('{"context":{"targetingKey":""}}');
    expect(empty.user.u).toBe('');
    expect(empty.targeted).toBe(true);
  });

  it('keeps __proto__ in the context as plain data', () => {
    const c = parseOfrepContext('{"context":{"targetingKey":"x","__proto__":{"polluted":true}}}');
    expect(Object.getPrototypeOf(c.user.p)).toBe(Object.prototype);
    expect(Object.keys(c.user.p)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['', 'invalid_json'],
    ['{', 'invalid_json'],
    ['[]', 'invalid_body'],
    ['"s"', 'invalid_body'],
    ['null', 'invalid_body'],
    ['{"context":[]}', 'invalid_body'],
    ['{"context":null}', 'invalid_body'],
    ['{"context":"x"}', 'invalid_body'],
    ['{"context":{"targetingKey":5}}', 'invalid_body'],
    ['{"context":{"targetingKey":null}}', 'invalid_body'],
    ['{"context":{"appVersion":150}}', 'invalid_body'],
    ['{"context":{"appVersion":"1.2"}}', 'invalid_body'],
    ['{"context":{"appVersion":"01.2.3"}}', 'invalid_body'],
    ['{"context":{"targetingKey":"a","appVersion":"1.2.3"}}', 'accepted'],
    ['{"context":{"targetingKey":"a"},"other":1}', 'accepted'],
  ])('%s → %s', (text, code) => {
    expect(codeOf(text)).toBe(code);
  });

  it('refuses attributes nested past MAX_P_DEPTH (the context is p, its first level) with invalid_body', () => {
    const body = (levels: number): string => `{"context":{"targetingKey":"a","tags":${'['.repeat(levels)}${']'.repeat(levels)}}}`;
    expect(codeOf(body(MAX_P_DEPTH - 1))).toBe('accepted');
    expect(codeOf(body(MAX_P_DEPTH))).toBe('invalid_body');
    expect(codeOf(body(20_000))).toBe('invalid_body');
  });

  it('rcd codes map to the OpenFeature error codes, and the error body carries both', () => {
    expect(errorCodeOf('invalid_json')).toBe('PARSE_ERROR');
    expect(errorCodeOf('invalid_body')).toBe('INVALID_CONTEXT');
    expect(errorCodeOf('targeting_key_missing')).toBe('TARGETING_KEY_MISSING');
    expect(errorCodeOf('content_not_found')).toBe('FLAG_NOT_FOUND');
    expect(errorCodeOf('too_many_requests')).toBe('GENERAL');
    expect(JSON.parse(ofrepErrorBody('Shop', 'content_not_found', 'gone'))).toEqual({
      key: 'Shop',
      errorCode: 'FLAG_NOT_FOUND',
      errorDetails: 'gone',
      error: { status: 404, code: 'content_not_found', message: 'gone' },
    });
    expect(JSON.parse(ofrepErrorBody(null, 'invalid_body', 'bad'))).toEqual({
      errorCode: 'INVALID_CONTEXT',
      errorDetails: 'bad',
      error: { status: 400, code: 'invalid_body', message: 'bad' },
    });
  });
});
