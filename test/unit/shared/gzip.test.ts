/**
 * gzip members assembled from parts compressed once must decode (node:zlib's gunzip, which checks the
 * CRC-32 and the length in the trailer) to exactly the bytes they stand for.
 */
import { randomBytes } from 'node:crypto';
import { crc32, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { GzipBuilder, STORED_BLOCK_MAX, compressPart, crc32Combine, crc32Shift, gzipBound, gzipMember } from '../../../src/shared/gzip.js';

function json(size: number): Buffer {
  let s = '{';
  for (let i = 0; s.length < size; i++) s += `"k${i}":{"v":${i * 7},"name":"item ${i % 97}"},`;
  return Buffer.from(s.slice(0, size - 1) + '}');
}

describe('crc32Combine', () => {
  it.each([0, 1, 7, 255, 65_536, 1_000_003])('equals the CRC of the concatenation (second part %i bytes)', (n) => {
    const a = randomBytes(1000);
    const b = randomBytes(n);
    expect(crc32Combine(crc32(a), crc32(b), crc32Shift(n))).toBe(crc32(Buffer.concat([a, b])));
  });

  it('chains over many parts, including an empty first part', () => {
    const parts = [Buffer.alloc(0), ...Array.from({ length: 20 }, (_, i) => randomBytes(i * 37))];
    let crc = 0;
    for (const p of parts) crc = crc32Combine(crc, crc32(p), crc32Shift(p.length));
    expect(crc).toBe(crc32(Buffer.concat(parts)));
  });
});

describe('gzip members', () => {
  it('a one-part member decodes to the part', () => {
    const body = json(512 * 1024);
    const member = gzipMember(compressPart(body));
    expect(gunzipSync(member).equals(body)).toBe(true);
    expect(member.length).toBeLessThan(body.length * 0.2);
  });

  it('parts and raw bytes in any order decode to their concatenation', () => {
    const a = json(3000);
    const b = json(70_000);
    const big = randomBytes(STORED_BLOCK_MAX * 2 + 17);
    const pieces: Buffer[] = [];
    const out = Buffer.alloc(gzipBound(200_000, 300_000, 20));
    const g = new GzipBuilder();
    g.begin(out);
    g.raw(Buffer.from('{"é":'));
    pieces.push(Buffer.from('{"é":'));
    g.part(compressPart(a));
    pieces.push(a);
    g.raw(big);
    pieces.push(big);
    g.part(compressPart(b));
    pieces.push(b);
    g.part(compressPart(a));
    pieces.push(a);
    const at = g.reserve(3);
    out.write('xyz', at, 'latin1');
    g.commit(3);
    pieces.push(Buffer.from('xyz'));
    const n = g.end();
    expect(n).toBeLessThanOrEqual(out.length);
    expect(gunzipSync(out.subarray(0, n)).equals(Buffer.concat(pieces))).toBe(true);
  });

  it('only raw bytes, and nothing at all, are valid members', () => {
    const g = new GzipBuilder();
    const out = Buffer.alloc(gzipBound(0, 10, 1));
    g.begin(out);
    g.raw(Buffer.from('{}'));
    expect(gunzipSync(out.subarray(0, g.end())).toString()).toBe('{}');
    g.begin(out);
    expect(gunzipSync(out.subarray(0, g.end())).length).toBe(0);
  });
});
