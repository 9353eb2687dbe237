/**
 * What the wire keeps on a front-cache entry to answer wrapped requests from it in place: the
 * entry's header block up to the uid (header-block.ts) and a buffer holding a copy of the head with
 * room for the longest per-user tail behind it. Only the wire reads or writes it; above the wire an
 * entry is its content (front-cache.ts Rendered) and nothing else.
 *
 * The scratch is made on an entry's first wrapped answer (plain entries never have one). uWS copies
 * the bytes it is given before end() returns, so one answer's bytes are free for the next answer of
 * the same entry at once.
 *
 * HOT PATH: one in-place answer per wrapped identity request.
 */
import type { CompressedPart } from '../../shared/gzip.js';
import * as bytes from '../../shared/bytes.js';
import * as headerBlock from './header-block.js';
import { BLOCK_VIEWS, UidBlock } from './header-block.js';
import * as tail from './tail.js';

// The writers used here, as this module's own consts (wire/README.md, "Module consts").
const { EMPTY_WORDS, putBytes, wordsOf } = bytes;
const { blockSize, moveBlock } = headerBlock;
const { EMPTY_BYTES, USER_PART_MAX, USER_PART_MIN, writeUserPartAfter } = tail;

/**
 * A front-cache entry as the wire reads it (front-cache.ts Rendered is one): its bytes, which never
 * change, and the scratch the wire keeps on it.
 */
export interface WireItem {
  /** The head bytes a worker rendered: the whole answer of a plain item, up to `"uid":` of a wrapped one. */
  readonly head: Uint8Array;
  /** meta.seg JSON (UTF-8) for wrapped kinds, empty for plain. */
  readonly seg: Uint8Array;
  /** `,"seg":<seg>}}` for wrapped kinds (tail.ts tailEndOf), empty for plain: every answer's tail ends with it. */
  readonly tailEnd: Uint8Array;
  /** The head as a whole gzip member, compressed once by the worker, or null under --compress-min-bytes. */
  readonly gzip: Uint8Array | null;
  /** The deflate segment inside `gzip` with the head's CRC: wrapped answers and combines append to it. */
  readonly gzPart: CompressedPart | null;
  /** The head in brotli (plain kind only: a brotli stream is not appended to), or null. */
  readonly br: Uint8Array | null;
  /** The wire's scratch for in-place answers (scratchOf), null until the entry's first wrapped answer. */
  scratch: ItemScratch | null;
}

/**
 * Where a scratch's views of `answer` are in its views array (UidBlock.blockViews, one array for the
 * block's and the answer's): index ANSWER_VIEWS + length of the user's part - USER_PART_MIN.
 */
const ANSWER_VIEWS = BLOCK_VIEWS;
const SCRATCH_VIEWS = BLOCK_VIEWS + USER_PART_MAX - USER_PART_MIN + 1;

/** What the wire keeps on a wrapped entry: its header block (UidBlock) and its in-place answer. */
export class ItemScratch extends UidBlock {
  /**
   * The buffer an identity answer is written into: a copy of the head, room behind it for the longest
   * tail (the user's digits and, where their length differs from the last answer's, tailEnd after
   * them), then the header block (UidBlock: `block` is this buffer once it moved here). Empty until
   * the entry's first identity answer (an entry only ever answered gzip never copies its head).
   */
  answer: Uint8Array = EMPTY_BYTES;
  /** A DataView of `answer`: the user's digits are written through it. */
  answerWords: DataView = EMPTY_WORDS;
  /** The head's length: where the user's part starts in `answer`. */
  readonly headLength: number;
  /** Where tailEnd sits in `answer` (-1: not written yet). */
  tailAt = -1;
  /**
   * The identity answer's view ending at answerViewEnd (-1: none yet), kept for the longest user part
   * (a ten-digit uid and a three-digit mod, the commonest): that answer reads no views array.
   */
  answerViewEnd = -1;
  answerView: Uint8Array = EMPTY_BYTES;

  /** The scratch of an entry whose head is `headLength` bytes, before its first wrapped answer. */
  constructor(headLength: number) {
    super(SCRATCH_VIEWS);
    this.headLength = headLength;
  }
}

/** Bytes a wrapped entry's scratch holds at most, charged to the front cache when the entry goes in. */
export function scratchSize(item: WireItem): number {
  return item.seg.byteLength === 0 ? 0 : item.head.byteLength + USER_PART_MAX + item.tailEnd.byteLength + 512;
}

/** The entry's scratch, made on its first wrapped answer. */
export function scratchOf(item: WireItem): ItemScratch {
  const known = item.scratch;
  if (known !== null) return known;
  const made = new ItemScratch(item.head.length);
  item.scratch = made;
  return made;
}

/**
 * The item's identity answer for this user, written in place behind the copy of its head: the user's
 * part, then tailEnd only where the last answer's user part had another length. Valid until the
 * item's next answer: uWS copies it before end() returns. The header block was written just before
 * (reply.ts writeWrapped): the uid's digits are copied from it.
 */
export function answerInPlace(item: WireItem, s: ItemScratch, uid: number, mod: number): Uint8Array {
  // Tested on the DataView's reference, not the buffer's length: a typed array's length is read
  // through its object and its buffer's (a detach check).
  if (s.answerWords === EMPTY_WORDS) placeAnswer(item, s);
  const headLength = s.headLength;
  const userEnd = writeUserPartAfter(s.answerWords, headLength, uid, mod, s.blockWords, s.blockStart);
  // The room behind the head holds USER_PART_MAX bytes of user part; past them lies the header block.
  if (userEnd - headLength > USER_PART_MAX) throw new RangeError(`wire: a user part of ${userEnd - headLength} bytes in place, room for ${USER_PART_MAX}`);
  if (s.tailAt !== userEnd) {
    putBytes(s.answer, item.tailEnd, userEnd);
    s.tailAt = userEnd;
  }
  // The view kept on the scratch first, as the header block's (header-block.ts wrappedBlock).
  if (userEnd === s.answerViewEnd) return s.answerView;
  const index = ANSWER_VIEWS + userEnd - headLength - USER_PART_MIN;
  const views = s.blockViews;
  let view = views[index];
  if (view === undefined) {
    view = s.answer.subarray(0, userEnd + item.tailEnd.length);
    views[index] = view;
  }
  if (userEnd - headLength === USER_PART_MAX) {
    s.answerViewEnd = userEnd;
    s.answerView = view;
  }
  return view;
}

/**
 * Copies the item's head into a buffer with room for the longest tail (its first identity answer),
 * and moves its header block (built by the writer just before) behind it: one ArrayBuffer, one
 * DataView and one views array for both (moveBlock).
 */
function placeAnswer(item: WireItem, s: ItemScratch): void {
  const head = item.head;
  const room = head.length + USER_PART_MAX + item.tailEnd.length;
  // The header block always exists here (wrappedBlock ran first); the check keeps the invariant visible.
  if (s.block.length === 0) throw new Error('wire: an in-place answer needs its header block first');
  const out = new Uint8Array(room + blockSize(s));
  putBytes(out, head, 0);
  const words = wordsOf(out);
  s.answer = out;
  s.answerWords = words;
  moveBlock(s, out, words, room);
}
