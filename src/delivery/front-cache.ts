/**
 * The front end's cache of rendered heads, keyed by what determines them:
 * (kind, revision id[, mapping id, combination key]). All parts are immutable ids, so an entry can
 * never be stale: an edit routes requests to new ids and old entries age out.
 *
 * Why the front end caches at all: on this 2-core box a pool round trip per request left the main
 * thread idle half the time waiting for workers (bench/README.md, "The pool's role"). Answering
 * repeats here keeps the pool for what is expensive (parse, compile, render a miss). Each head was
 * rendered by a worker into its own ArrayBuffer and moved here without a copy; this is the only
 * place rendered bytes are kept.
 *
 * HOT PATH: one get per content item.
 */
import { LRUCache } from 'lru-cache';
import type { Combination, FrontKeyMemo } from '../mapping/index.js';
import { JobKind, type JobResult } from '../pool/protocol.js';
import { GZIP_HEADER, GZIP_TRAILER_BYTES, FINAL_EMPTY_BLOCK, crc32Shift, type CompressedPart } from '../shared/gzip.js';
import { EMPTY_BYTES, tailEndOf } from './tail.js';

export interface Rendered {
  /** The head bytes (the whole ArrayBuffer a worker rendered and transferred). */
  readonly head: Uint8Array;
  /** meta.seg JSON (UTF-8) for wrapped kinds, empty for plain. */
  readonly seg: Uint8Array;
  /** `,"seg":<seg>}}` for wrapped kinds (tail.ts tailEndOf), empty for plain: every answer's tail ends with it. */
  readonly tailEnd: Uint8Array;
  /**
   * The head as a whole gzip member, compressed once by the worker (a plain answer sends it as is), or
   * null when the head is under --compress-min-bytes.
   */
  readonly gzip: Uint8Array | null;
  /** The deflate segment inside `gzip` with the head's CRC: wrapped answers and combines append to it. */
  readonly gzPart: CompressedPart | null;
  /** The head in brotli (plain kind only: brotli streams are not appended to), or null. */
  readonly br: Uint8Array | null;
  /**
   * The header block of this item's answers up to the uid (header-block.ts wrappedBlock), built on
   * first use, with the Cache-Control, Vary and item tag it was built for.
   */
  block: Uint8Array;
  blockControl: Uint8Array | null;
  blockVary: Uint8Array | null;
  blockTag: string;
}

/** The cache entry of a worker's result (its buffers were moved here, not copied). */
export function renderedOf(result: JobResult, head: ArrayBuffer): Rendered {
  const gzip = result.gzip === null ? null : new Uint8Array(result.gzip);
  const seg = result.seg === '' ? EMPTY_BYTES : Buffer.from(result.seg, 'utf8');
  return {
    head: new Uint8Array(head),
    seg,
    tailEnd: seg === EMPTY_BYTES ? EMPTY_BYTES : tailEndOf(seg),
    gzip,
    gzPart: gzip === null ? null : partOf(gzip, head.byteLength),
    br: result.br === null ? null : new Uint8Array(result.br),
    block: EMPTY_BYTES,
    blockControl: null,
    blockVary: null,
    blockTag: '',
  };
}

/** The deflate segment of a one-part member and its CRC (read from the trailer the worker wrote). */
function partOf(member: Uint8Array, length: number): CompressedPart {
  const trailer = member.byteLength - GZIP_TRAILER_BYTES;
  const crc = (member[trailer]! | (member[trailer + 1]! << 8) | (member[trailer + 2]! << 16) | (member[trailer + 3]! << 24)) >>> 0;
  return {
    segment: member.subarray(GZIP_HEADER.byteLength, trailer - FINAL_EMPTY_BLOCK.byteLength),
    crc,
    shift: crc32Shift(length),
    length,
  };
}

/**
 * A cache key: a number for an answer that depends on kind and revision only (most items: no
 * mapping, or no rule applied), a string with the mapping and combination otherwise. A number is
 * built with one multiply and hashed by V8 without reading characters; the string it replaced
 * (`w123`) was formatted, concatenated and hashed on every request.
 */
export type FrontKey = number | string;

export type FrontCache = LRUCache<FrontKey, Rendered>;

export function createFrontCache(maxBytes: number): FrontCache {
  return new LRUCache<FrontKey, Rendered>({ maxSize: maxBytes, sizeCalculation: renderedSize });
}

function renderedSize(r: Rendered): number {
  return r.head.byteLength + r.seg.byteLength + r.tailEnd.byteLength + 256 + (r.gzip === null ? 0 : r.gzip.byteLength) + (r.br === null ? 0 : r.br.byteLength) + 128;
}

const KIND_PREFIX = ['p', 'w', 's'];

/** Kinds per revision in a numeric key (revId * KINDS + kind). */
const KINDS = 3;

/** The cache key of one item. Mapping and combination only matter for wrapped kinds. */
export function frontKey(kind: JobKind, revId: number, mappingId: number, comboKey: string): FrontKey {
  if (kind === JobKind.Plain || comboKey === '') return revId * KINDS + kind;
  return combinationKey(kind, revId, mappingId, comboKey);
}

function combinationKey(kind: JobKind, revId: number, mappingId: number, comboKey: string): string {
  return KIND_PREFIX[kind]! + revId + ':' + mappingId + ':' + comboKey;
}

/** Front-cache keys remembered per combination (Combination.cacheKeys): items of one mapping in one combine. */
const FRONT_KEY_MEMO = 8;

/**
 * The cache key of an item whose rules were evaluated (`c`), or of one without (null: plain answers
 * and content without a mapping). A combination's keys are memoized on it for the last
 * FRONT_KEY_MEMO (kind, revision, mapping) it served. Returning the same string object matters as
 * much as not building it: V8 caches a string's hash in the string, so the cache lookup then neither
 * flattens nor hashes a fresh key (bench/micro/alloc.ts: cache key). bench:cost (combine-50, five
 * items of one mapping, callgrind): one memo entry per combination rebuilt four of the five keys.
 */
export function frontKeyOf(kind: JobKind, revId: number, mappingId: number, c: Combination | null): FrontKey {
  if (c === null || c.key === '' || kind === JobKind.Plain) return revId * KINDS + kind;
  const memo = c.cacheKeys;
  for (let i = 0; i < memo.length; i++) {
    const m = memo[i]!;
    if (m.rev === revId && m.kind === (kind as number) && m.mapping === mappingId) return m.key;
  }
  const key = combinationKey(kind, revId, mappingId, c.key);
  const entry: FrontKeyMemo = { rev: revId, mapping: mappingId, kind, key };
  if (memo.length < FRONT_KEY_MEMO) {
    memo.push(entry);
  } else {
    memo[c.cacheKeyNext] = entry;
    c.cacheKeyNext = (c.cacheKeyNext + 1) % FRONT_KEY_MEMO;
  }
  return key;
}
