/**
 * The per-user tail of a wrapped answer. A rendered head ends with `"meta":{"uid":`; what follows
 * depends on the user and is written here, as bytes, straight into the response buffer:
 * `<uid>,"mod":<mod>,"seg":<seg JSON>}}`.
 *
 * HOT PATH: once per wrapped item. Writing digits and prebuilt byte runs into the reused response
 * buffer (reply.ts) instead of concatenating a string and joining it with the head into a new Buffer:
 * 2.0 -> 0.4 µs and 2,481 -> 5 bytes of JS heap per answer (bench/micro/alloc.ts).
 */

import { putBytes } from '../shared/bytes.js';
import { STORED_BLOCK_MAX, type GzipBuilder } from '../shared/gzip.js';

export const EMPTY_BYTES = new Uint8Array(0);

/** `,"mod":` (writeUserPart writes its bytes). */
const MOD_FIELD_LENGTH = 7;
/** The shortest and longest user part `<uid>,"mod":<mod>`: one digit each, and 10 digits of uid and 3 of mod. */
export const USER_PART_MIN = 1 + MOD_FIELD_LENGTH + 1;
export const USER_PART_MAX = 10 + MOD_FIELD_LENGTH + 3;
const SEG_FIELD = Buffer.from(',"seg":', 'latin1');
const CLOSE = 0x7d; // '}'

/**
 * Decimal digits of a uint32. Comparisons, not a division per digit: a uid has 9-10 digits, and
 * every wrapped answer counts them three times (random uint32s, Node 20: 18-28 ns for the division
 * loop against 9-13 ns; perf had the loop at ~0.4% of mapped).
 */
export function digitCount(n: number): number {
  if (n < 100_000) return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10_000 ? 4 : 5;
  return n < 1_000_000 ? 6 : n < 10_000_000 ? 7 : n < 100_000_000 ? 8 : n < 1_000_000_000 ? 9 : 10;
}

/** Length of the whole tail; `tailEnd` is the item's Rendered.tailEnd (tailEndOf). */
export function wrappedTailLength(uid: number, mod: number, tailEnd: Uint8Array): number {
  return userPartLength(uid, mod) + tailEnd.length;
}

/** Length of the tail's per-user part, `<uid>,"mod":<mod>` (the same in every item of one answer). */
export function userPartLength(uid: number, mod: number): number {
  return digitCount(uid) + MOD_FIELD_LENGTH + digitCount(mod);
}

/** Writes `<uid>,"mod":<mod>` at pos; returns the position after it. */
export function writeUserPart(out: Uint8Array, pos: number, uid: number, mod: number): number {
  pos = writeDecimal(out, pos, uid);
  // `,"mod":` as seven stores: a copy call costs ~200 instructions whatever its length.
  out[pos] = 0x2c;
  out[pos + 1] = 0x22;
  out[pos + 2] = 0x6d;
  out[pos + 3] = 0x6f;
  out[pos + 4] = 0x64;
  out[pos + 5] = 0x22;
  out[pos + 6] = 0x3a;
  return writeDecimal(out, pos + MOD_FIELD_LENGTH, mod);
}

/** "00" to "99" as ASCII pairs: writeDecimal takes two digits per division. */
const DIGIT_PAIRS = Uint8Array.from({ length: 200 }, (_, i) => 0x30 + (i % 2 === 0 ? Math.floor(i / 20) : (i >> 1) % 10));

/**
 * Writes the decimal form of a uint32 at pos; returns the position after it. Two digits per division
 * (a uid has ~10 and is written twice per wrapped answer, in the ETag and the tail): 5 divisions
 * instead of 10 (bench:cost, wrapped).
 */
export function writeDecimal(out: Uint8Array, pos: number, n: number): number {
  const end = pos + digitCount(n);
  let at = end;
  while (n >= 100) {
    const q = Math.floor(n / 100);
    const pair = (n - q * 100) << 1;
    out[--at] = DIGIT_PAIRS[pair + 1]!;
    out[--at] = DIGIT_PAIRS[pair]!;
    n = q;
  }
  if (n >= 10) {
    const pair = n << 1;
    out[--at] = DIGIT_PAIRS[pair + 1]!;
    out[--at] = DIGIT_PAIRS[pair]!;
  } else {
    out[--at] = 0x30 + n;
  }
  return end;
}

/** Writes the tail at pos (room for wrappedTailLength bytes is the caller's); returns the end. */
export function writeWrappedTail(out: Uint8Array, pos: number, uid: number, mod: number, tailEnd: Uint8Array): number {
  return putBytes(out, tailEnd, writeUserPart(out, pos, uid, mod));
}

/**
 * What follows the per-user part, `,"seg":<seg>}}`, the same for every user of an item: built once
 * per cached item (front-cache.ts), so a tail is the user's digits and one copy.
 */
export function tailEndOf(seg: Uint8Array): Uint8Array {
  const out = new Uint8Array(SEG_FIELD.length + seg.length + 2);
  const pos = putBytes(out, seg, putBytes(out, SEG_FIELD, 0));
  out[pos] = CLOSE;
  out[pos + 1] = CLOSE;
  return out;
}

/**
 * Appends the tail to a gzip member being built (src/shared/gzip.ts): written in place into its open
 * stored block, so a compressed wrapped answer costs no compression and no extra copy of the tail. A
 * tail over 64 KiB (a stored block's limit: a long seg) goes through a copy.
 */
export function appendTailToGzip(gz: GzipBuilder, uid: number, mod: number, tailEnd: Uint8Array): void {
  const length = wrappedTailLength(uid, mod, tailEnd);
  if (length > STORED_BLOCK_MAX) {
    const tail = Buffer.allocUnsafe(length);
    writeWrappedTail(tail, 0, uid, mod, tailEnd);
    gz.raw(tail);
    return;
  }
  writeWrappedTail(gz.out, gz.reserve(length), uid, mod, tailEnd);
  gz.commit(length);
}
