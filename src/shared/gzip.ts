/**
 * gzip members assembled from parts compressed once (RFC 1951, RFC 1952), so that an answer made of a
 * cached part and a per-request part costs no compression per request.
 *
 * - A *segment* is the raw deflate of some bytes ended by a sync flush: its last block is not final
 *   and it ends on a byte boundary (the empty stored block 00 00 FF FF), so segments and stored
 *   blocks can follow one another in any order. Each segment is compressed on its own (it never
 *   refers to bytes before it), which is what makes appending it after other blocks valid.
 * - Per-request bytes (a wrapped answer's tail, a combine's keys and braces) go in *stored* blocks:
 *   copied, not compressed. A tail is a few dozen bytes; compressing it would save almost nothing.
 * - The trailer's CRC-32 is the CRC of the whole uncompressed answer. Bytes written per request are
 *   run through node:zlib's crc32 starting from the CRC so far; a cached part contributes its CRC
 *   computed once, joined with `crc32Combine` (below) in 32 steps instead of re-reading its bytes.
 *
 * Used by the render workers (a head's segment), the control thread (catalog blocks) and the delivery
 * loop (assembling an answer). Output is checked against node:zlib's gunzip byte for byte
 * (test/unit/shared/gzip.test.ts).
 */
import { constants, crc32, deflateRawSync, type ZlibOptions } from 'node:zlib';
import { EMPTY_WORDS, wordsOf } from './bytes.js';

/** The reflected CRC-32 polynomial (IEEE 802.3), as zlib and gzip use it. */
const POLY = 0xedb88320;

/**
 * a(x)·b(x) mod P in the reflected representation (bit 31 is x^0, bit 0 is x^31). Walks the terms of
 * `a` from x^0 up while `b` is multiplied by x at each step (a shift right, reduced by P when the
 * x^31 term falls off).
 */
function mulModP(a: number, b: number): number {
  let product = 0;
  for (let term = 0x80000000; term !== 0; term >>>= 1) {
    if ((a & term) !== 0) product ^= b;
    b = (b & 1) !== 0 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return product >>> 0;
}

/** X2N[k] = x^(2^k) mod P, for k = 0..63 (x itself is 0x40000000 in this representation). */
const X2N = new Uint32Array(64);
X2N[0] = 0x40000000;
for (let k = 1; k < 64; k++) X2N[k] = mulModP(X2N[k - 1]!, X2N[k - 1]!);

/**
 * x^(8·length) mod P: the operator that moves a CRC past `length` bytes of zeros. A cached part keeps
 * its own (computed once) so a combine costs one mulModP.
 */
export function crc32Shift(length: number): number {
  let result = 0x80000000; // x^0
  let k = 3; // 8 = 2^3
  let n = length;
  while (n > 0) {
    if (n % 2 === 1) result = mulModP(X2N[k]!, result);
    n = Math.floor(n / 2);
    k++;
  }
  return result;
}

/**
 * The CRC-32 of A followed by B from crc(A), crc(B) and the shift of B's length (crc32Shift(|B|)).
 * Linearity of the CRC: crc(A‖B) = crc(A)·x^(8|B|) ⊕ crc(B); the initial value and the final xor
 * (both all ones) cancel out.
 */
export function crc32Combine(crcA: number, crcB: number, shiftB: number): number {
  return (mulModP(shiftB, crcA) ^ crcB) >>> 0;
}

/** gzip member header: deflate, no flags, no mtime, no extra flags, OS unknown (255). */
export const GZIP_HEADER = Uint8Array.of(0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff);
/** An empty final block with fixed Huffman codes (BFINAL 1, BTYPE 01, end-of-block): closes the deflate stream. */
export const FINAL_EMPTY_BLOCK = Uint8Array.of(0x03, 0x00);
export const GZIP_TRAILER_BYTES = 8;
/** A stored block carries at most this many bytes. */
export const STORED_BLOCK_MAX = 65535;
export const STORED_HEADER_BYTES = 5;

/** A part compressed once: its segment, the CRC-32 of its uncompressed bytes and their length's shift. */
export interface CompressedPart {
  /** Raw deflate ended by a sync flush (not final, byte-aligned). */
  readonly segment: Uint8Array;
  readonly crc: number;
  readonly shift: number;
  readonly length: number;
}

/** zlib level 6 (its default): level 9 saves little more of a JSON body for several times the time. */
const DEFLATE_OPTIONS = { level: 6, finishFlush: constants.Z_SYNC_FLUSH };

export function compressPart(bytes: Uint8Array, options: ZlibOptions = DEFLATE_OPTIONS): CompressedPart {
  return { segment: deflateRawSync(bytes, options), crc: crc32(bytes), shift: crc32Shift(bytes.byteLength), length: bytes.byteLength };
}

/** Writes a non-final stored block's header for `length` bytes (<= STORED_BLOCK_MAX) at `pos`. */
function writeStoredHeader(out: Uint8Array, pos: number, length: number): void {
  out[pos] = 0; // BFINAL 0, BTYPE 00 (stored), the rest of the byte padding
  out[pos + 1] = length & 0xff;
  out[pos + 2] = length >>> 8;
  out[pos + 3] = ~length & 0xff;
  out[pos + 4] = (~length >>> 8) & 0xff;
}

/** Ends a member: the final empty block and the trailer (CRC-32, length mod 2^32, little-endian). */
export function writeGzipEnd(out: Uint8Array, pos: number, crc: number, length: number): number {
  out.set(FINAL_EMPTY_BLOCK, pos);
  pos += FINAL_EMPTY_BLOCK.byteLength;
  writeUint32LE(out, pos, crc);
  writeUint32LE(out, pos + 4, length % 0x100000000);
  return pos + GZIP_TRAILER_BYTES;
}

function writeUint32LE(out: Uint8Array, pos: number, v: number): void {
  out[pos] = v & 0xff;
  out[pos + 1] = (v >>> 8) & 0xff;
  out[pos + 2] = (v >>> 16) & 0xff;
  out[pos + 3] = (v >>> 24) & 0xff;
}

/**
 * Upper bound of a member built from `parts` compressed bytes in total and `raw` bytes written in
 * at most `pieces` separate raw writes.
 */
export function gzipBound(parts: number, raw: number, pieces: number): number {
  const runs = pieces + 1 + Math.ceil(raw / STORED_BLOCK_MAX);
  return GZIP_HEADER.byteLength + parts + raw + STORED_HEADER_BYTES * runs + FINAL_EMPTY_BLOCK.byteLength + GZIP_TRAILER_BYTES;
}

/**
 * Writes one gzip member into a caller's buffer (sized with gzipBound): raw bytes go into stored
 * blocks (consecutive raw writes share one), compressed parts are copied in. One instance per thread
 * is reused; begin() resets it.
 */
export class GzipBuilder {
  out: Buffer = Buffer.alloc(0);
  /** A DataView of `out` (digits are written through it as words: src/delivery/tail.ts). */
  words: DataView = EMPTY_WORDS;
  pos = 0;
  private crc = 0;
  private length = 0;
  /** Where the open stored block's header goes, or -1 when none is open. */
  private runHeader = -1;
  private runLength = 0;

  begin(out: Buffer): void {
    // Callers reuse one buffer: its view is made once, not per member.
    if (out !== this.out) this.words = wordsOf(out);
    this.out = out;
    out.set(GZIP_HEADER, 0);
    this.pos = GZIP_HEADER.byteLength;
    this.crc = 0;
    this.length = 0;
    this.runHeader = -1;
    this.runLength = 0;
  }

  /** The position where `n` raw bytes (n <= STORED_BLOCK_MAX) may be written; then call commit(n). */
  reserve(n: number): number {
    if (this.runHeader !== -1 && this.runLength + n > STORED_BLOCK_MAX) this.closeRun();
    if (this.runHeader === -1) {
      this.runHeader = this.pos;
      this.runLength = 0;
      this.pos += STORED_HEADER_BYTES;
    }
    return this.pos;
  }

  /** Takes the `n` bytes written at the reserved position into the member. */
  commit(n: number): void {
    this.crc = crc32(this.out.subarray(this.pos, this.pos + n), this.crc);
    this.pos += n;
    this.runLength += n;
    this.length += n;
  }

  raw(bytes: Uint8Array): void {
    for (let at = 0; at < bytes.byteLength; ) {
      const n = Math.min(STORED_BLOCK_MAX, bytes.byteLength - at);
      this.out.set(at === 0 && n === bytes.byteLength ? bytes : bytes.subarray(at, at + n), this.reserve(n));
      this.commit(n);
      at += n;
    }
  }

  part(p: CompressedPart): void {
    this.closeRun();
    this.out.set(p.segment, this.pos);
    this.pos += p.segment.byteLength;
    this.crc = crc32Combine(this.crc, p.crc, p.shift);
    this.length += p.length;
  }

  /** Closes the member; returns its length. */
  end(): number {
    this.closeRun();
    this.pos = writeGzipEnd(this.out, this.pos, this.crc, this.length);
    return this.pos;
  }

  private closeRun(): void {
    if (this.runHeader === -1) return;
    writeStoredHeader(this.out, this.runHeader, this.runLength);
    this.runHeader = -1;
  }
}

/** `bytes` (at most STORED_BLOCK_MAX) as one non-final stored block: a piece that may sit between segments. */
export function storedBlock(bytes: Uint8Array): Buffer {
  if (bytes.byteLength > STORED_BLOCK_MAX) throw new RangeError(`a stored block holds at most ${STORED_BLOCK_MAX} bytes`);
  const out = Buffer.allocUnsafe(STORED_HEADER_BYTES + bytes.byteLength);
  writeStoredHeader(out, 0, bytes.byteLength);
  out.set(bytes, STORED_HEADER_BYTES);
  return out;
}

/** The end of a member as a piece of its own: the final empty block and the trailer. */
export function gzipEnd(crc: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(FINAL_EMPTY_BLOCK.byteLength + GZIP_TRAILER_BYTES);
  writeGzipEnd(out, 0, crc, length);
  return out;
}

/** A whole gzip member of one part (what a plain answer or a catalog body is sent as). */
export function gzipMember(part: CompressedPart): Buffer {
  const out = Buffer.allocUnsafe(GZIP_HEADER.byteLength + part.segment.byteLength + FINAL_EMPTY_BLOCK.byteLength + GZIP_TRAILER_BYTES);
  out.set(GZIP_HEADER, 0);
  out.set(part.segment, GZIP_HEADER.byteLength);
  writeGzipEnd(out, GZIP_HEADER.byteLength + part.segment.byteLength, part.crc, part.length);
  return out;
}
