import { describe, expect, it } from 'vitest';
import { MAX_VALUE_CHARS, NO_DIMENSIONS, boundedString, dimensionsText, parseDimensionNames } from '../../../src/exposures/dimensions.js';

describe('dimension names (--exposure-dimensions)', () => {
  it('are none for an empty value', () => {
    expect(parseDimensionNames('')).toEqual([]);
    expect(parseDimensionNames('   ')).toEqual([]);
  });

  it('are comma-separated, trimmed, in order, up to 8 of 1-64 characters', () => {
    expect(parseDimensionNames('country, platform ,device.os,tier_1,a-b')).toEqual(['country', 'platform', 'device.os', 'tier_1', 'a-b']);
    expect(parseDimensionNames('a,b,c,d,e,f,g,h')).toHaveLength(8);
    expect(parseDimensionNames('x'.repeat(64))).toEqual(['x'.repeat(64)]);
  });

  it.each([
    ['a,b,c,d,e,f,g,h,i', 'at most 8 dimensions, got 9'],
    ['x'.repeat(65), 'is not a dimension name'],
    ['country,,platform', '"" is not a dimension name'],
    ['p[0]', '"p[0]" is not a dimension name'],
    ['café', 'is not a dimension name'],
    ['a,a', '"a" is named twice'],
  ])('refuse %j', (raw, message) => {
    expect(() => parseDimensionNames(raw)).toThrowError(message);
  });
});

describe('a player\'s dimensions', () => {
  const names = ['country', 'platform', 'level', 'vip', 'device.os'];

  it('are {} when no dimension is named or none is present', () => {
    expect(dimensionsText([], { country: 'DE' })).toBe(NO_DIMENSIONS);
    expect(dimensionsText(names, {})).toBe('{}');
  });

  it('keep strings, numbers and booleans, in the named order, as JSON', () => {
    const text = dimensionsText(names, { vip: true, level: 12.5, platform: 'ios', country: 'DE', other: 'x', 'device.os': 'android' });
    expect(text).toBe('{"country":"DE","platform":"ios","level":12.5,"vip":true,"device.os":"android"}');
    expect(JSON.parse(text)).toEqual({ country: 'DE', platform: 'ios', level: 12.5, vip: true, 'device.os': 'android' });
  });

  it('leave out objects, arrays, null, non-finite numbers, missing and inherited attributes', () => {
    const p = JSON.parse('{"country":{"code":"DE"},"platform":["ios"],"level":null,"vip":1e400}') as Record<string, unknown>;
    expect(dimensionsText(names, p)).toBe('{}');
    expect(dimensionsText(['toString', 'constructor', '__proto__'], {})).toBe('{}');
  });

  it('read a top-level key with a dot as that key, never as a path', () => {
    expect(dimensionsText(['device.os'], { device: { os: 'ios' } })).toBe('{}');
  });

  it('cut a string to 128 characters, never splitting a surrogate pair', () => {
    const long = 'a'.repeat(200);
    expect(JSON.parse(dimensionsText(['country'], { country: long })) as unknown).toEqual({ country: 'a'.repeat(MAX_VALUE_CHARS) });
    const pairAtEdge = 'a'.repeat(127) + '😀' + 'b';
    expect(boundedString(pairAtEdge)).toBe('a'.repeat(127));
    const pairInside = 'a'.repeat(126) + '😀' + 'b';
    expect(boundedString(pairInside)).toBe(pairInside.slice(0, 128));
  });

  it('are valid for a jsonb column: lone surrogates and U+0000 become U+FFFD', () => {
    const p = JSON.parse('{"country":"D\\u0000E","platform":"\\ud800x"}') as Record<string, unknown>;
    const text = dimensionsText(['country', 'platform'], p);
    expect(text).not.toContain('\\u0000');
    expect(text).not.toMatch(/\\ud8/);
    expect(JSON.parse(text)).toEqual({ country: 'D\uFFFDE', platform: '\uFFFDx' });
  });
});
