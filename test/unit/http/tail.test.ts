import { describe, expect, it } from 'vitest';
import { wrappedTailLength, writeWrappedTail } from '../../../src/http/tail.js';

describe('wrapped tail bytes', () => {
  it.each([
    [0, 0, '[]'],
    [9, 9, '[]'],
    [10, 10, '[{"n":"eu","v":null}]'],
    [1000, 0, '[{"n":"ünïcødé 日本","v":"A","i":"😀"}]'],
    [999_999_999, 999, '[]'],
    [4_294_967_295, 295, '[{"n":"a","v":null},{"n":"b","v":"B"}]'],
  ])('uid %i, mod %i, seg %s', (uid, mod, seg) => {
    const segBytes = Buffer.from(seg, 'utf8');
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
