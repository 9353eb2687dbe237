import { describe, expect, it } from 'vitest';
import { digitCount, tailEndOf, wrappedTailLength, writeDecimal, writeUserPart, writeUserPartAfter, writeWrappedTail } from '../../../src/delivery/wire/tail.js';
import { wordsOf } from '../../../src/shared/bytes.js';

describe('wrapped tail bytes', () => {
  it.each([
    [0, 0, '[]'],
    [9, 9, '[]'],
    [10, 10, '[{"n":"eu","v":null}]'],
    [1000, 0, '[{"n":"ünïcødé 日本","v":"A","i":"😀"}]'],
    [999_999_999, 999, '[]'],
    [4_294_967_295, 295, '[{"n":"a","v":null},{"n":"b","v":"B"}]'],
  ])('uid %i, mod %i, seg %s', (uid, mod, seg) => {
    const segBytes = tailEndOf(Buffer.from(seg, 'utf8'));
    const expected = `${uid},"mod":${mod},"seg":${seg}}}`;
    const length = wrappedTailLength(uid, mod, segBytes);
    expect(length).toBe(Buffer.byteLength(expected, 'utf8'));
    // Written after a prefix, into a buffer with room to spare: the bytes around it stay untouched.
    const out = Buffer.alloc(length + 10, 0x2e);
    const end = writeWrappedTail(out, wordsOf(out), 3, uid, mod, segBytes);
    expect(end).toBe(3 + length);
    expect(out.toString('utf8')).toBe('...' + expected + '.'.repeat(7));
  });
});

describe('wrapped tail at every digit-count boundary', () => {
  it('agrees with JSON.stringify of the meta object for uids around each power of ten and every mod', () => {
    const uids = [0, 4_294_967_295];
    for (let p = 10; p <= 1_000_000_000; p *= 10) uids.push(p - 1, p, p + 1);
    const segs = ['[]', '[{"n":"eu","v":"B","i":"é"}]'].map((s) => Buffer.from(s, 'utf8'));
    const ends = segs.map(tailEndOf);
    const out = Buffer.alloc(200);
    const words = wordsOf(out);
    const wrong: string[] = [];
    let checked = 0;
    for (const uid of uids) {
      for (let mod = 0; mod < 1000; mod++) {
        for (let k = 0; k < segs.length; k++) {
          const seg = segs[k]!;
          const tailEnd = ends[k]!;
          // The head ends with `"meta":{"uid":`; head + tail must be the meta object JSON.stringify writes.
          const expected = JSON.stringify({ uid, mod, seg: JSON.parse(seg.toString('utf8')) as unknown }).slice('{"uid":'.length) + '}';
          const end = writeWrappedTail(out, words, 0, uid, mod, tailEnd);
          const written = out.toString('utf8', 0, end);
          if (end !== wrappedTailLength(uid, mod, tailEnd) || written !== expected) wrong.push(`${uid}/${mod}: ${written}`);
          checked++;
        }
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(checked).toBe(uids.length * 2000);
  });
});

describe('decimal digits written as words', () => {
  it('writes what String() writes for every value below 10^6, around every power of ten, every uint32 class and a sweep of 9- and 10-digit values, touching no byte around them', () => {
    const values: number[] = [];
    for (let n = 0; n < 1_000_000; n++) values.push(n);
    for (let p = 10; p <= 1_000_000_000; p *= 10) values.push(p - 1, p, p + 1);
    values.push(4_294_967_295, 4_294_967_294, 4_000_000_000, 2_147_483_647, 2_147_483_648);
    // Every four-digit group in both word positions, and every leading part (1..42).
    for (let k = 0; k < 10_000; k++) values.push(100_000_000 + k, 100_000_000 + k * 10_000, 4_200_000_000 + k * 9_973);
    for (let top = 1; top <= 42; top++) values.push(top * 100_000_000 + 12_345_678);
    const out = Buffer.alloc(32);
    const words = wordsOf(out);
    const wrong: string[] = [];
    for (const n of values) {
      out.fill(0x2e);
      const end = writeDecimal(words, 5, n);
      const text = String(n);
      if (end !== 5 + text.length || end !== 5 + digitCount(n) || out.toString('latin1') !== '.....' + text + '.'.repeat(32 - 5 - text.length)) wrong.push(`${n}: ${out.toString('latin1')}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('writes the user part after any prefix, whatever the lengths of uid and mod', () => {
    const out = Buffer.alloc(48, 0x2e);
    const words = wordsOf(out);
    for (const [uid, mod] of [[0, 0], [7, 99], [100_000_000, 100], [999_999_999, 5], [4_294_967_295, 999], [1_000_000_000, 10]] as const) {
      out.fill(0x2e);
      const end = writeUserPart(words, 3, uid, mod);
      const part = `${uid},"mod":${mod}`;
      expect(end).toBe(3 + part.length);
      expect(out.toString('latin1')).toBe('...' + part + '.'.repeat(48 - 3 - part.length));
    }
  });

  it('writes the user part with the uid copied from where its digits were written, bytes after it untouched', () => {
    // As a wrapped answer does: the uid's digits in the header block first (an ETag: digits, then a
    // quote), then the body's user part, whose end is followed by the tail written by an earlier answer.
    const block = Buffer.alloc(32, 0x2e);
    const blockWords = wordsOf(block);
    const out = Buffer.alloc(48);
    const words = wordsOf(out);
    const uids = [0, 7, 9_999_999, 10_000_000, 12_345_678, 99_999_999, 100_000_000, 123_456_789, 999_999_999, 1_000_000_000, 4_294_967_295];
    for (const uid of uids) {
      for (const mod of [0, 5, 10, 99, 100, 999]) {
        block.fill(0x2e);
        const digitsEnd = writeDecimal(blockWords, 4, uid);
        block[digitsEnd] = 0x22;
        out.fill(0x7d);
        const end = writeUserPartAfter(words, 3, uid, mod, blockWords, 4);
        const part = `${uid},"mod":${mod}`;
        expect(end, `${uid} ${mod}`).toBe(3 + part.length);
        expect(out.toString('latin1'), `${uid} ${mod}`).toBe('}}}' + part + '}'.repeat(48 - 3 - part.length));
      }
    }
  });
});
