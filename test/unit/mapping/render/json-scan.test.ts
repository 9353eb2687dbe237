import { describe, expect, it } from 'vitest';
import {
  decodeKeyBytes,
  decodeKeyText,
  skipStringBytes,
  skipStringText,
  skipValueBytes,
  skipValueText,
  skipWsBytes,
  skipWsText,
} from '../../../../src/mapping/render/json-scan.js';

// The two scanners must find the same structure; their offsets differ exactly by the UTF-8 length
// of what precedes them.
const TEXT = ' {"ké\\"y":"vä\\\\lue\\"","n":-1.5e3,"a":[1,{"😀":null},"x"],"t":true} ';

function byteOffset(text: string, index: number): number {
  return Buffer.byteLength(text.slice(0, index), 'utf8');
}

describe('json-scan: the UTF-16 and UTF-8 scanners side by side', () => {
  const bytes = Buffer.from(TEXT, 'utf8');

  it('find the same values, at the same places in their own units', () => {
    let i = skipWsText(TEXT, 0);
    let j = skipWsBytes(bytes, 0);
    expect(j).toBe(byteOffset(TEXT, i));
    expect(skipValueText(TEXT, i)).toBe(TEXT.length - 1);
    expect(skipValueBytes(bytes, j)).toBe(bytes.length - 1);
    // Walk the root object's members with both.
    i = skipWsText(TEXT, i + 1);
    j = skipWsBytes(bytes, j + 1);
    const keys: string[] = [];
    while (TEXT.charCodeAt(i) !== 0x7d) {
      if (keys.length > 0) {
        i = skipWsText(TEXT, i + 1);
        j = skipWsBytes(bytes, j + 1);
      }
      const keyEndText = skipStringText(TEXT, i);
      const keyEndBytes = skipStringBytes(bytes, j);
      expect(keyEndBytes).toBe(byteOffset(TEXT, keyEndText));
      const key = decodeKeyText(TEXT, i, keyEndText);
      expect(decodeKeyBytes(bytes, j, keyEndBytes)).toBe(key);
      keys.push(key);
      i = skipValueText(TEXT, keyEndText + 1);
      j = skipValueBytes(bytes, keyEndBytes + 1);
      expect(j).toBe(byteOffset(TEXT, i));
    }
    expect(keys).toEqual(Object.keys(JSON.parse(TEXT) as object));
  });

  it('stop at the end of the input', () => {
    expect(skipWsText('   ', 0)).toBe(3);
    expect(skipWsBytes(Buffer.from('   '), 0)).toBe(3);
    expect(skipValueText('123', 0)).toBe(3);
    expect(skipValueBytes(Buffer.from('123'), 0)).toBe(3);
  });
});
