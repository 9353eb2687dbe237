import { describe, expect, it } from 'vitest';
import { ReusedBuffer, putBytes, putLatin1 } from '../../../src/shared/bytes.js';

describe('answer bytes', () => {
  it('putBytes copies at the position and returns the end, from Buffers and plain views alike', () => {
    const out = Buffer.alloc(12, 0x2e);
    let pos = putBytes(out, Buffer.from('ab'), 1);
    expect(pos).toBe(3);
    const backing = Buffer.from('xxcdexx');
    pos = putBytes(out, new Uint8Array(backing.buffer, backing.byteOffset + 2, 3), pos);
    expect(pos).toBe(6);
    expect(out.toString('latin1')).toBe('.abcde......');
  });

  it('putLatin1 writes one byte per character and returns the end', () => {
    const out = Buffer.alloc(8, 0x2e);
    expect(putLatin1(out, 'W/"é1"', 1)).toBe(7);
    expect([...out.subarray(1, 7)]).toEqual([0x57, 0x2f, 0x22, 0xe9, 0x31, 0x22]);
    expect(out[7]).toBe(0x2e);
  });

  it('a reused buffer gives views of its first bytes that see later writes, whatever its offset', () => {
    const r = new ReusedBuffer(16);
    putLatin1(r.bytes, 'hello', 0);
    const v = r.view(5);
    expect(v).toBeInstanceOf(Uint8Array);
    expect(Buffer.isBuffer(v)).toBe(false);
    expect(Buffer.from(v).toString('latin1')).toBe('hello');
    putLatin1(r.bytes, 'J', 0);
    expect(Buffer.from(r.view(5)).toString('latin1')).toBe('Jello');
    expect(r.view(0).byteLength).toBe(0);
    expect(r.size).toBe(16);
  });
});
