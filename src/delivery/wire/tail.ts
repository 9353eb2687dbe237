/**
 * The per-user tail of a wrapped answer. A rendered head ends with `"meta":{"uid":`; what follows
 * depends on the user and is written here, as bytes, straight into the response buffer:
 * `<uid>,"mod":<mod>,"seg":<seg JSON>}}`.
 *
 * HOT PATH: once per wrapped item. Digits and prebuilt byte runs go into the reused response buffer
 * (answer-buffer.ts) or the item's scratch: no string is concatenated and no Buffer made per answer.
 */

import * as bytes from '../../shared/bytes.js';
import { STORED_BLOCK_MAX, type GzipBuilder } from '../../shared/gzip.js';

// The digit writers call one another through this module's own consts, and export thin functions:
// an exported binding (an import too) is a cell TurboFan reads and compares before each call it
// inlines, in its own module as well; a module's own const is folded (wire/README.md, "Module consts").
const { putBytes, wordsOf } = bytes;

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
 * every wrapped answer counts them three times.
 */
const countDigits = (n: number): number => {
  if (n < 100_000) return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10_000 ? 4 : 5;
  return n < 1_000_000 ? 6 : n < 10_000_000 ? 7 : n < 100_000_000 ? 8 : n < 1_000_000_000 ? 9 : 10;
};

export function digitCount(n: number): number {
  return countDigits(n);
}

/**
 * Throws unless `uid` is a uint32 and `mod` is in 0..999: the digit writers here count and write no
 * other numbers right (USER_PART_MAX). Checked where an answer's digits are first written.
 */
export function checkUser(uid: number, mod: number): void {
  if (uid >>> 0 !== uid || mod >>> 0 !== mod || mod > 999) throw new RangeError(`wire: uid ${uid} and mod ${mod} are not a uint32 and 0..999`);
}

/** Length of the whole tail; `tailEnd` is the item's Rendered.tailEnd (tailEndOf). */
export function wrappedTailLength(uid: number, mod: number, tailEnd: Uint8Array): number {
  return partLength(uid, mod) + tailEnd.length;
}

/** Length of the tail's per-user part, `<uid>,"mod":<mod>` (the same in every item of one answer). */
const partLength = (uid: number, mod: number): number => {
  return countDigits(uid) + MOD_FIELD_LENGTH + countDigits(mod);
};

export function userPartLength(uid: number, mod: number): number {
  return partLength(uid, mod);
}

/** `,"mo` and `d":` as little-endian words (writeUserPart stores them whole). */
const MOD_WORD_0 = 0x6f6d222c;
const MOD_WORD_1 = 0x3a2264;

/**
 * Writes `<uid>,"mod":<mod>` at pos through `out` (a DataView of the bytes it goes into); returns the
 * position after it.
 */
const userPart = (out: DataView, pos: number, uid: number, mod: number): number => {
  return modPart(out, decimal(out, pos, uid), mod);
};

export function writeUserPart(out: DataView, pos: number, uid: number, mod: number): number {
  return userPart(out, pos, uid, mod);
}

/**
 * writeUserPart where the uid's digits were just written at `at` through `from`: a wrapped answer's
 * header block carries them in its ETag (header-block.ts wrappedBlock) and is written first. A uid
 * of 8 digits or more (nearly every user) is copied as 10 bytes in three loads and stores instead
 * of writing its digits again; the mod field written next covers the 2 bytes a shorter uid copies
 * past its end. Shorter uids are written.
 */
export function writeUserPartAfter(out: DataView, pos: number, uid: number, mod: number, from: DataView, at: number): number {
  if (uid < 10_000_000) return userPart(out, pos, uid, mod);
  out.setUint32(pos, from.getUint32(at, true), true);
  out.setUint32(pos + 4, from.getUint32(at + 4, true), true);
  out.setUint16(pos + 8, from.getUint16(at + 8, true), true);
  return modPart(out, pos + countDigits(uid), mod);
}

/**
 * Writes `,"mod":<mod>` at pos; returns the position after it. A 3-digit mod shares its word with
 * `d":`: three stores for the field.
 */
const modPart = (out: DataView, pos: number, mod: number): number => {
  out.setUint32(pos, MOD_WORD_0, true);
  if (mod >= 100) {
    const hundreds = Math.imul(mod, 5243) >>> 19;
    const rest = mod - hundreds * 100;
    const tens = Math.imul(rest, 205) >>> 11;
    out.setUint32(pos + 4, MOD_WORD_1 + ((0x30 + hundreds) << 24), true);
    out.setUint16(pos + 8, 0x3030 + tens + ((rest - tens * 10) << 8), true);
    return pos + 10;
  }
  out.setUint16(pos + 4, MOD_WORD_1 & 0xffff, true);
  out.setUint8(pos + 6, MOD_WORD_1 >>> 16);
  return shortDecimal(out, pos + 7, mod);
};

/** Four ASCII `0`s as a word: a digit is added to its byte. */
const ZEROS = 0x30303030;

/**
 * The four decimal digits of n (0..9999, leading zeros kept) as the little-endian word of their ASCII
 * bytes. Divisions by 100 and 10 as multiplications and shifts (exact in these ranges: n * 5243 >>> 19
 * is n / 100 below 43,699; n * 205 >>> 11 is n / 10 below 1,029).
 */
const fourDigits = (n: number): number => {
  const high = Math.imul(n, 5243) >>> 19;
  const low = n - high * 100;
  const a = Math.imul(high, 205) >>> 11;
  const c = Math.imul(low, 205) >>> 11;
  return ZEROS + a + ((high - a * 10) << 8) + (c << 16) + ((low - c * 10) << 24);
};

/**
 * Writes the decimal form of a uint32 at pos through `out` (a DataView of the bytes it goes into);
 * returns the position after it. A uid has 9 or 10 digits for 98% of users (uniform over uint32):
 * those go out as two words of four digits and one or two more, from one division by 10^8, not a byte
 * store per digit and a division per pair: a uid is written twice per wrapped answer (answerInPlace
 * and the header block).
 */
const decimal = (out: DataView, pos: number, n: number): number => {
  if (n < 100_000_000) return shortDecimal(out, pos, n);
  const top = Math.floor(n / 100_000_000);
  const rest = (n - top * 100_000_000) | 0;
  if (top >= 10) {
    const tens = Math.imul(top, 205) >>> 11;
    out.setUint16(pos, 0x3030 + tens + ((top - tens * 10) << 8), true);
    pos += 2;
  } else {
    out.setUint8(pos, 0x30 + top);
    pos += 1;
  }
  const upper = (rest / 10_000) | 0;
  out.setUint32(pos, fourDigits(upper), true);
  out.setUint32(pos + 4, fourDigits(rest - upper * 10_000), true);
  return pos + 8;
};

export function writeDecimal(out: DataView, pos: number, n: number): number {
  return decimal(out, pos, n);
}

/** writeDecimal of n below 10^8, a byte per digit. */
const shortDecimal = (out: DataView, pos: number, n: number): number => {
  let left = n | 0;
  const end = pos + countDigits(left);
  let at = end;
  do {
    const q = (left / 10) | 0;
    out.setUint8(--at, 0x30 + left - q * 10);
    left = q;
  } while (left > 0);
  return end;
};

/**
 * Writes the tail at pos (room for wrappedTailLength bytes is the caller's); returns the end. `words`
 * is a DataView of the same bytes as `out`.
 */
export function writeWrappedTail(out: Uint8Array, words: DataView, pos: number, uid: number, mod: number, tailEnd: Uint8Array): number {
  return putBytes(out, tailEnd, userPart(words, pos, uid, mod));
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
    writeWrappedTail(tail, wordsOf(tail), 0, uid, mod, tailEnd);
    gz.raw(tail);
    return;
  }
  writeWrappedTail(gz.out, gz.words, gz.reserve(length), uid, mod, tailEnd);
  gz.commit(length);
}
