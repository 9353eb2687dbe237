import xxhash from 'xxhash-addon';
import { describe, expect, it } from 'vitest';
import { XXH32_VECTORS, xxh32String } from '../../../src/shared/xxh32.js';

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
    const alphabet = ['a', 'Z', '0', '-', 'é', 'ß', '日', '本', '😀', ' ', '"', '\\'];
    for (let n = 0; n < 3000; n++) {
      const len = next() % 80;
      let s = '';
      for (let i = 0; i < len; i++) s += alphabet[next() % alphabet.length];
      expect(xxh32String(s)).toBe(reference(s));
    }
  });

  it('handles a string longer than its scratch buffer', () => {
    const long = 'x'.repeat(5000) + '日本';
    expect(xxh32String(long)).toBe(reference(long));
  });
});
