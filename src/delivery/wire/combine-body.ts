/**
 * The bytes of a combine assembled item by item (a request no plan answers): each found item's key,
 * head and (wrapped kinds) per-user tail, in one buffer written once, not several uWS calls per id.
 *
 * HOT PATH: once per combine not answered from a plan.
 */
import * as bytes from '../../shared/bytes.js';
import * as gzip from '../../shared/gzip.js';
import { GzipBuilder } from '../../shared/gzip.js';
import type { WireItem } from './item-scratch.js';
import * as answerBuffers from './answer-buffer.js';
import * as tail from './tail.js';

// The writers used here, as this module's own consts (wire/README.md, "Module consts").
const { putBytes } = bytes;
const { gzipBound } = gzip;
const { answerBuffer, answerView, answerWords } = answerBuffers;
const { appendTailToGzip, checkUser, wrappedTailLength, writeWrappedTail } = tail;

/** A combine entry's JSON key as bytes (query.ts CombineEntry is one). */
export interface CombineKey {
  /** `{"id":` */
  readonly firstKey: Buffer;
  /** `,"id":` */
  readonly nextKey: Buffer;
}

/** The JSON key of an entry as bytes: `{"id":` for the first written, `,"id":` after. */
function entryKey(entry: CombineKey, first: boolean): Buffer {
  return first ? entry.firstKey : entry.nextKey;
}

/**
 * `{"id":head+tail,...}` as one buffer, the items in `rendered` (null: not found, left out) under
 * the keys of `entries`, each wrapped item followed by the tail of (uid, mod): sizes first, then
 * copies into the reused answer buffer. Valid until the next answer is built.
 */
export function combineBody(entries: readonly CombineKey[], rendered: readonly (WireItem | null)[], wrapped: boolean, uid: number, mod: number): Uint8Array {
  if (wrapped) checkUser(uid, mod);
  let total = 1;
  let first = true;
  for (let i = 0; i < entries.length; i++) {
    const item = rendered[i];
    if (item === null || item === undefined) continue;
    total += entryKey(entries[i]!, first).length + item.head.length + (wrapped ? wrappedTailLength(uid, mod, item.tailEnd) : 0);
    first = false;
  }
  if (first) return EMPTY_OBJECT;
  // The reply's reused buffer (sendContent's end() copies it before returning): a combine answer is
  // larger than Buffer.allocUnsafe's pool takes, so a buffer of its own would be a fresh ArrayBuffer.
  const out = answerBuffer(total);
  const words = answerWords();
  let pos = 0;
  first = true;
  for (let i = 0; i < entries.length; i++) {
    const item = rendered[i];
    if (item === null || item === undefined) continue;
    pos = putBytes(out, item.head, putBytes(out, entryKey(entries[i]!, first), pos));
    first = false;
    if (wrapped) pos = writeWrappedTail(out, words, pos, uid, mod, item.tailEnd);
  }
  out[pos] = 0x7d; // '}'
  if (pos + 1 !== total) throw new Error(`wire: a combine body of ${pos + 1} bytes, sized ${total}`);
  return answerView(pos + 1);
}

const EMPTY_OBJECT = Buffer.from('{}');

const combineGzipBuilder = new GzipBuilder();

const CLOSE_BRACE = Buffer.from('}');

/**
 * The same answer as combineBody, as one gzip member built from the items compressed once: no byte
 * is compressed here. Written into the reply's reused buffer (sendContent copies it before returning).
 */
export function combineGzipBody(entries: readonly CombineKey[], rendered: readonly (WireItem | null)[], wrapped: boolean, uid: number, mod: number): Uint8Array {
  if (wrapped) checkUser(uid, mod);
  let compressed = 0;
  let raw = 1;
  let pieces = 1;
  let first = true;
  for (let i = 0; i < entries.length; i++) {
    const item = rendered[i];
    if (item === null || item === undefined) continue;
    raw += entryKey(entries[i]!, first).length + (wrapped ? wrappedTailLength(uid, mod, item.tailEnd) : 0);
    first = false;
    if (item.gzPart !== null) compressed += item.gzPart.segment.length;
    else raw += item.head.length;
    pieces += 3;
  }
  const bound = gzipBound(compressed, raw, pieces);
  const gz = combineGzipBuilder;
  gz.begin(answerBuffer(bound));
  first = true;
  for (let i = 0; i < entries.length; i++) {
    const item = rendered[i];
    if (item === null || item === undefined) continue;
    gz.raw(entryKey(entries[i]!, first));
    first = false;
    if (item.gzPart !== null) gz.part(item.gzPart);
    else gz.raw(item.head);
    if (wrapped) appendTailToGzip(gz, uid, mod, item.tailEnd);
  }
  gz.raw(CLOSE_BRACE);
  const written = gz.end();
  if (written > bound) throw new RangeError(`wire: a combine gzip body of ${written} bytes, bound ${bound}`);
  return answerView(written);
}
