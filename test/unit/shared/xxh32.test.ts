import xxhash from 'xxhash-addon';
import { describe, expect, it } from 'vitest';
import { XXH32_VECTORS, utf8Into, xxh32String } from '../../../src/shared/xxh32.js';

const { XXHash32 } = xxhash as unknown as { XXHash32: { hash(data: Buffer): Buffer } };
const reference = (s: string): number => XXHash32.hash(Buffer.from(s, 'utf8')).readUInt32BE(0);

describe('pure-JS XXH32 (meta.uid)', () => {
  it.each(XXH32_VECTORS.map(([s, h]) => [s, h]))('%j → %i', (s, h) => {
    expect(xxh32String(s)).toBe(h);
    expect(reference(s)).toBe(h);
  });

  it('agrees with the native xxhash-addon on generated strings of every length class and script', () => {
    let seed = 12345;
    const next = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    // Lone surrogates too (either half, alone or in the wrong order): UTF-8 has U+FFFD for them.
    const alphabet = ['a', 'Z', '0', '-', '\x7f', '\x80', 'é', 'ß', '\u07ff', '\u0800', '日', '本', '\uffff', '😀', '\ud800', '\udfff', ' ', '"', '\\'];
    const out = new Uint8Array(80 * 3);
    for (let n = 0; n < 3000; n++) {
      const len = next() % 80;
      let s = '';
      for (let i = 0; i < len; i++) s += alphabet[next() % alphabet.length];
      expect(xxh32String(s)).toBe(reference(s));
      const utf8 = Buffer.from(s, 'utf8');
      expect(Buffer.from(out.subarray(0, utf8Into(s, out))).equals(utf8)).toBe(true);
    }
  });

  it('agrees on ASCII ids of every length, and on the same ids with one non-ASCII code at any place', () => {
    for (let len = 0; len <= 70; len++) {
      const ascii = Array.from({ length: len }, (_, i) => String.fromCharCode(0x21 + ((i * 37) % 94))).join('');
      expect(xxh32String(ascii)).toBe(reference(ascii));
      for (const wide of ['\x80', '\u0100', '\u4e00', '\uff00']) {
        for (let at = 0; at < len; at += 5) {
          const s = ascii.slice(0, at) + wide + ascii.slice(at + 1);
          expect(xxh32String(s)).toBe(reference(s));
        }
      }
    }
  });

  it('handles a string longer than its scratch buffer', () => {
    const long = 'x'.repeat(5000) + '日本';
    expect(xxh32String(long)).toBe(reference(long));
  });
});
