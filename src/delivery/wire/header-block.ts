/**
 * The headers of a 200 content answer as one uWS call instead of four.
 *
 * uWS's writeHeader(name, value) copies `name: value\r\n` into the response as given. Every call
 * crosses from JavaScript into C++ (a handle scope, argument checks, one more append); on the
 * mapped path four header calls (Content-Type, ETag, Cache-Control, Vary) would be among the
 * largest JavaScript items of the main thread's profile. So Content-Type's value carries the other
 * three lines after it: `application/json\r\ncache-control: …\r\nvary: …\r\netag: "…"`, the
 * constant part prebuilt per (Cache-Control, Vary) pair and the tag written behind it into a reused
 * buffer. The bytes on the wire are the same header lines (ETag last).
 *
 * Only bytes this server made go in: the constant values, and tags built from content hashes by
 * etag.ts (hex and base64url characters, quotes, a coding suffix), never request bytes, so no line
 * break can reach the block from outside. CORS headers, whose origin value comes from the operator's
 * list, keep their own calls (reply.ts).
 */

import * as bytes from '../../shared/bytes.js';
import { ReusedBuffer } from '../../shared/bytes.js';
import { Coding, SUFFIX_BYTES } from '../etag.js';

import * as tail from './tail.js';

// The writers a block is made with, as this module's own consts (folded where inlined: wire/README.md).
const { EMPTY_WORDS, putBytes, putLatin1, wordsOf } = bytes;
const { EMPTY_BYTES, writeDecimal } = tail;

const QUOTE = 0x22;
const DOT = 0x2e;
/** The longest ETag suffix (etag.ts SUFFIX: `.gz"`). */
const SUFFIX_MAX = 4;

/** `application/json\r\ncache-control: <cc>\r\nvary: <vary>\r\netag: `. */
function prefixOf(cacheControl: Uint8Array, vary: Uint8Array): Buffer {
  return Buffer.concat([
    Buffer.from('application/json\r\ncache-control: ', 'latin1'),
    cacheControl,
    Buffer.from('\r\nvary: ', 'latin1'),
    vary,
    Buffer.from('\r\netag: ', 'latin1'),
  ]);
}

// One entry per (Cache-Control, Vary) pair of value objects: two Cache-Control values (shared and
// private) and, per delivery loop (one thread, its own module), the policy's Vary and the OpenFeature
// routes' (which also names Authorization). A handful; looked up by identity.
const cachedControls: Uint8Array[] = [];
const cachedVaries: Uint8Array[] = [];
const cachedPrefixes: Buffer[] = [];

function prefixFor(cacheControl: Uint8Array, vary: Uint8Array): Buffer {
  for (let i = 0; i < cachedControls.length; i++) {
    if (cachedControls[i] === cacheControl && cachedVaries[i] === vary) return cachedPrefixes[i]!;
  }
  const prefix = prefixOf(cacheControl, vary);
  // Bounded: the values are built once per policy; past this a new one (a test's many policies) starts over.
  if (cachedControls.length >= 16) {
    cachedControls.length = 0;
    cachedVaries.length = 0;
    cachedPrefixes.length = 0;
  }
  cachedControls.push(cacheControl);
  cachedVaries.push(vary);
  cachedPrefixes.push(prefix);
  return prefix;
}

// Reused for every answer: uWS copies a header value before writeHeader returns.
let block = new ReusedBuffer(512);

// The last block of an answer that is the same for every user (plain content, the catalog), kept
// whole: the next answer of the same representation sends it without writing a byte. A copy, since
// `block` is overwritten by the next answer of another kind. Compared by identity for the header
// values and by value for the tag (a revision's hash, the catalog's tag: the same string object).
let keptControl: Uint8Array | null = null;
let keptVary: Uint8Array | null = null;
let keptTag = '';
let keptCoding: Coding = Coding.Identity;
let keptBlock: Uint8Array = new Uint8Array(0);

/** Writes the block's prefix, the ETag's opening quote and `tag` at 0; returns the position after them. */
function putTagStart(out: Buffer, prefix: Uint8Array, tag: string): number {
  const at = putBytes(out, prefix, 0);
  out[at] = QUOTE;
  return putLatin1(out, tag, at + 1);
}

/**
 * Content-Type's value with Cache-Control, Vary and ETag lines behind it (see above); the ETag is
 * `tag` in `coding` (etag.ts etagValue: a quote, the tag, the coding's suffix). With `keep` (an answer
 * the same for every user) the block is kept for the next call with the same arguments. The result
 * is valid until the next call, which is after uWS copied it.
 */
export function representationBlock(cacheControl: Uint8Array, vary: Uint8Array, tag: string, coding: Coding, keep: boolean): Uint8Array {
  if (keep && tag === keptTag && coding === keptCoding && cacheControl === keptControl && vary === keptVary) return keptBlock;
  const prefix = prefixFor(cacheControl, vary);
  const suffix = SUFFIX_BYTES[coding]!;
  const size = prefix.length + 1 + tag.length + suffix.length;
  if (block.size < size) block = new ReusedBuffer(size * 2);
  const out = block.bytes;
  const at = putBytes(out, suffix, putTagStart(out, prefix, tag));
  if (!keep) return block.view(at);
  keptBlock = new Uint8Array(at);
  putBytes(keptBlock, block.view(at), 0);
  keptControl = cacheControl;
  keptVary = vary;
  keptTag = tag;
  keptCoding = coding;
  return keptBlock;
}

/** Room kept behind an item's block start: a uint32's digits and the longest suffix. */
export const BLOCK_ROOM = 10 + SUFFIX_MAX;

/** Entries of UidBlock.blockViews for the block's views: one per length of what follows blockStart. */
export const BLOCK_VIEWS = BLOCK_ROOM + 1;

/**
 * The header block of answers whose ETag is one tag and a user's uid, kept by what they are made of:
 * a front-cache entry (its wrapped answers) or a combine plan (its dynamic answers).
 *
 * The block sits in `block` from blockFrom on: a buffer of its own, or (a front-cache entry, once
 * moved: moveBlock) behind the entry's in-place answer, where `block`, `blockWords` and `blockViews`
 * are the entry's answer buffer, its DataView and its views array, the same objects. A wrapped answer
 * then touches one buffer, one DataView and one array for both its header block and its body: each is
 * a heap object in a line of its own, seldom still in the cache when the entry answers again.
 */
export class UidBlock {
  /** The tag the block was built for. */
  blockTag = '';
  blockControl: Uint8Array | null = null;
  blockVary: Uint8Array | null = null;
  /**
   * The buffer holding the block (from its ArrayBuffer's first byte): `<prefix>"<tag>.` from blockFrom,
   * then BLOCK_ROOM bytes for the uid and the ETag's end; built on first use.
   */
  block: Uint8Array = EMPTY_BYTES;
  /** A DataView of `block`: the uid's digits are written through it. */
  blockWords: DataView = EMPTY_WORDS;
  /** Where the uid goes in `block`. */
  blockStart = 0;
  /** Where the block begins in `block`. */
  blockFrom = 0;
  /**
   * The view of the block ending at blockViewEnd (-1: none yet), kept on the item for a uid of ten
   * digits (78% of uids: they are uniform over uint32): that answer reads no views array.
   */
  blockViewEnd = -1;
  blockView: Uint8Array = EMPTY_BYTES;
  /** The block's views, index: length of what follows blockStart (BLOCK_VIEWS of them first), made on first use. */
  readonly blockViews: (Uint8Array | undefined)[];

  /**
   * A block before its first answer, with `views` entries in its views array: BLOCK_VIEWS, or more
   * where the array also holds an in-place answer's views (item-scratch.ts ItemScratch, which extends
   * this class: the block's fields come first there too, at the same places).
   */
  constructor(views: number) {
    this.blockViews = new Array<Uint8Array | undefined>(views).fill(undefined);
  }
}

/** A UidBlock before its first answer (a combine plan's). */
export function newUidBlock(): UidBlock {
  return new UidBlock(BLOCK_VIEWS);
}

/**
 * The block of a wrapped answer of `item`, whose ETag is `itemTag`.`uid` in `coding` (etag.ts
 * wrappedTag): everything up to the uid is the same for every user of the item, kept on it (built
 * on its first answer) with room behind it, where an answer writes the uid's digits and the
 * coding's suffix in place: no tag string is built per answer, nor written through Buffer#write,
 * nor its start copied into a shared buffer. Valid until the next call for the item, as
 * representationBlock's.
 */
export function wrappedBlock(item: UidBlock, cacheControl: Uint8Array, vary: Uint8Array, itemTag: string, uid: number, coding: Coding): Uint8Array {
  if (uid >>> 0 !== uid) throw new RangeError(`wire: uid ${uid} in an ETag is not a uint32`);
  // Object.is, not ===: the two are nearly always one string object, and SameValue answers that from
  // the references, where === on strings first checks each is a string (a load of the item's tag,
  // seldom in the cache). Both are strings, so the answers are the same.
  if (!Object.is(item.blockTag, itemTag) || item.blockControl !== cacheControl || item.blockVary !== vary) keepItemBlock(item, cacheControl, vary, itemTag);
  const words = item.blockWords;
  const start = item.blockStart;
  let at = writeDecimal(words, start, uid);
  // The quote through the DataView the digits went through: the block's Uint8Array is an object (and
  // a detach check) more, read here only for a suffix or a new view.
  if (coding === Coding.Identity) words.setUint8(at++, QUOTE);
  else at = putBytes(item.block, SUFFIX_BYTES[coding]!, at);
  // The view kept on the item first: the views array and its elements are lines of their own, seldom
  // still cached when the item answers again.
  if (at === item.blockViewEnd) return item.blockView;
  const views = item.blockViews;
  let view = views[at - start];
  if (view === undefined) {
    view = item.block.subarray(item.blockFrom, at);
    views[at - start] = view;
  }
  if (uid >= TEN_DIGITS) {
    item.blockViewEnd = at;
    item.blockView = view;
  }
  return view;
}

/** The least uid of ten digits. */
const TEN_DIGITS = 1_000_000_000;

/** Bytes the item's block takes (its room included); 0 before its first answer. */
export function blockSize(item: UidBlock): number {
  return item.block.length === 0 ? 0 : item.blockStart - item.blockFrom + BLOCK_ROOM;
}

/**
 * Moves the item's block to `into` at `at` (blockSize(item) bytes of room there are the caller's);
 * `words` is a DataView of `into` and `views` the item's views array, kept whole past BLOCK_VIEWS.
 * A front-cache entry's block goes into the buffer of its in-place answer (item-scratch.ts
 * placeAnswer), so an answer hands uWS two views of one ArrayBuffer. For every typed array it is
 * given, uWS takes the backing store (v8::ArrayBuffer::GetBackingStore: the buffer's extension, a
 * reference count up and down); an entry's own buffers are rarely in the cache, where one buffer
 * reused for every answer is.
 */
export function moveBlock(item: UidBlock, into: Uint8Array, words: DataView, at: number): void {
  putBytes(into, item.block.subarray(item.blockFrom, item.blockStart + BLOCK_ROOM), at);
  item.blockStart = at + item.blockStart - item.blockFrom;
  item.blockFrom = at;
  item.block = into;
  item.blockWords = words;
  forgetBlockViews(item);
}

/** Drops the views of the item's block (kept and in its array): its bytes moved or were rebuilt. */
function forgetBlockViews(item: UidBlock): void {
  item.blockViewEnd = -1;
  item.blockViews.fill(undefined, 0, BLOCK_VIEWS);
}

/** `<prefix>"<itemTag>.` kept on the item for these header values, with BLOCK_ROOM bytes behind it. */
function keepItemBlock(item: UidBlock, cacheControl: Uint8Array, vary: Uint8Array, itemTag: string): void {
  const prefix = prefixFor(cacheControl, vary);
  const start = Buffer.allocUnsafeSlow(prefix.length + itemTag.length + 2 + BLOCK_ROOM);
  const at = putTagStart(start, prefix, itemTag);
  start[at] = DOT;
  item.block = start;
  item.blockWords = wordsOf(start);
  item.blockStart = at + 1;
  item.blockFrom = 0;
  forgetBlockViews(item);
  item.blockControl = cacheControl;
  item.blockVary = vary;
  item.blockTag = itemTag;
}
