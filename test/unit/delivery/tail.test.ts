import { describe, expect, it } from 'vitest';
import { tailEndOf, wrappedTailLength, writeWrappedTail } from '../../../src/delivery/tail.js';

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
    const end = writeWrappedTail(out, 3, uid, mod, segBytes);
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
    const wrong: string[] = [];
    let checked = 0;
    for (const uid of uids) {
      for (let mod = 0; mod < 1000; mod++) {
        for (let k = 0; k < segs.length; k++) {
          const seg = segs[k]!;
          const tailEnd = ends[k]!;
          // The head ends with `"meta":{"uid":`; head + tail must be the meta object JSON.stringify writes.
          const expected = JSON.stringify({ uid, mod, seg: JSON.parse(seg.toString('utf8')) as unknown }).slice('{"uid":'.length) + '}';
          const end = writeWrappedTail(out, 0, uid, mod, tailEnd);
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
