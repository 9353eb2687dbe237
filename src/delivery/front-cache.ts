/**
 * The front end's cache of rendered heads: its entries (Rendered, made from a worker's result), its
 * keys (kind, revision id[, mapping id, combination key]) and the ways an entry is found without a
 * lookup by key (a combination's key memo, numbered slots, the table by rule path). All key parts
 * are immutable ids, so an entry can never be stale: an edit routes requests to new ids and old
 * entries age out.
 *
 * Why the front end caches at all: a pool round trip per request leaves the loop idle waiting for
 * workers (bench/results/FINDINGS.md, "The pool's role"). Answering repeats here keeps the pool for
 * what is expensive (parse, compile, render a miss). Each head is rendered by a worker into its own
 * ArrayBuffer and moved here without a copy; this is the only place rendered bytes are kept.
 *
 * HOT PATH: one get per content item.
 */
import { LRUCache } from 'lru-cache';
import { rememberIn, type Combination, type FrontKeyMemo, type KeyedEntry } from '../mapping/index.js';
import { JobKind, type JobResult } from '../pool/protocol.js';
import { GZIP_HEADER, GZIP_TRAILER_BYTES, FINAL_EMPTY_BLOCK, crc32Shift, type CompressedPart } from '../shared/gzip.js';
import { scratchSize, type WireItem } from './wire/item-scratch.js';
import { PathTable } from './path-table.js';
import { EMPTY_BYTES, tailEndOf } from './wire/tail.js';

/**
 * A front-cache entry: the bytes a worker rendered for an item (WireItem: they never change; the wire
 * keeps its own scratch on the entry for in-place answers) and the cache's bookkeeping.
 */
export interface Rendered extends WireItem, KeyedEntry {
  /** The key it is cached under and its cache (keepEntry), for the ways it is found without a lookup. */
  key: FrontKey;
  owner: FrontCache | null;
  /** Answers taken from it without the cache seeing them since the cache last did (frontEntryOf). */
  uses: number;
  /** Its row in the table of entries by rule path (pathEntryOf), -1 when in none. */
  pathRow: number;
  /** Its item tag (etag.ts itemTag, without the uid), set with pathRow: the same for every answer of the entry. */
  pathTag: string;
}

/** The cache entry of a worker's result (its buffers were moved here, not copied). */
export function renderedOf(result: JobResult, head: ArrayBuffer): Rendered {
  const gzip = result.gzip === null ? null : new Uint8Array(result.gzip);
  const seg = result.seg === '' ? EMPTY_BYTES : Buffer.from(result.seg, 'utf8');
  return newRendered(new Uint8Array(head), seg, gzip, gzip === null ? null : partOf(gzip, head.byteLength), result.br === null ? null : new Uint8Array(result.br));
}

/** A front-cache entry; `seg` empty for plain answers. Every entry is made here (one object shape). */
export function newRendered(head: Uint8Array, seg: Uint8Array, gzip: Uint8Array | null, gzPart: CompressedPart | null, br: Uint8Array | null): Rendered {
  // The fields an answer reads, in the order it reads them (found: owner, uses, pathTag; its coding;
  // the wire's scratch), before those it does not: an entry is cold when its next user comes, and
  // each line of it an answer touches is a wait.
  return {
    owner: null,
    uses: 0,
    pathTag: '',
    gzip,
    br,
    scratch: null,
    head,
    tailEnd: seg.length === 0 ? EMPTY_BYTES : tailEndOf(seg),
    memo: null,
    key: 0,
    pathRow: -1,
    seg,
    gzPart,
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
 * built with one multiply and hashed by V8 without reading characters, where a string (`w123`) is
 * formatted, concatenated and hashed.
 */
export type FrontKey = number | string;

export type FrontCache = LRUCache<FrontKey, Rendered>;

export function createFrontCache(maxBytes: number): FrontCache {
  return new LRUCache<FrontKey, Rendered>({ maxSize: maxBytes, sizeCalculation: renderedSize, dispose: releaseEntry });
}

/** Caches a rendered entry under `key`: every entry goes in here. */
export function keepEntry(cache: FrontCache, key: FrontKey, entry: Rendered): void {
  entry.key = key;
  entry.owner = cache;
  cache.set(key, entry);
}

function renderedSize(r: Rendered): number {
  // A wrapped entry is charged for the scratch its in-place answers make (a copy of its head with room).
  return r.head.byteLength + r.seg.byteLength + r.tailEnd.byteLength + scratchSize(r) + 256 + (r.gzip === null ? 0 : r.gzip.byteLength) + (r.br === null ? 0 : r.br.byteLength) + 128;
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
 * flattens nor hashes a fresh key. Several per combination: a combine's items of one mapping each
 * need their own key.
 */
export function frontKeyOf(kind: JobKind, revId: number, mappingId: number, c: Combination | null): FrontKey {
  const memo = frontKeyMemo(kind, revId, mappingId, c);
  return memo === null ? revId * KINDS + kind : memo.key;
}

/** The memo of a combination's key (frontKeyOf), null for a numeric key. */
function frontKeyMemo(kind: JobKind, revId: number, mappingId: number, c: Combination | null): FrontKeyMemo | null {
  if (c === null || c.key === '' || kind === JobKind.Plain) return null;
  const memo = c.cacheKeys;
  for (let i = 0; i < memo.length; i++) {
    const m = memo[i]!;
    if (m.rev === revId && m.kind === (kind as number) && m.mapping === mappingId) return m;
  }
  const m: FrontKeyMemo = { rev: revId, mapping: mappingId, kind, key: combinationKey(kind, revId, mappingId, c.key), entry: null };
  c.cacheKeyNext = rememberIn(memo, m, FRONT_KEY_MEMO, c.cacheKeyNext);
  return m;
}

/**
 * Answers taken from an entry found without the cache (a memo, a slot; a combine plan on its key memo:
 * combine-plan.ts currentPlanOf) between two uses the cache sees (a power of two): its recency is
 * refreshed on one answer in this many, enough to keep an entry answered that often from being
 * evicted as the least recently used.
 */
export const USES_PER_REFRESH = 16;

/**
 * Entries under numeric keys (items without a combination) found without a lookup by key: a
 * direct-mapped table, slot key & (NUMBERED_SLOTS - 1), one per thread (a thread runs one delivery
 * loop; an entry is taken only from the cache that holds it, `owner`). Two keys of one slot take it
 * in turns, each then found the cache's way.
 */
const NUMBERED_SLOTS = 4096;
const numbered: (Rendered | null)[] = new Array<Rendered | null>(NUMBERED_SLOTS).fill(null);

/**
 * The front-cache entry of an item (frontKeyOf's key), or undefined. Found once through the cache,
 * an entry is kept where the next request for it looks first: an item behind a mapping on its key's
 * memo (FrontKeyMemo.entry), any other in its slot of a small table: no lookup by key, no recency
 * bookkeeping but on one answer in USES_PER_REFRESH. The cache's get touches many lines seldom in
 * the CPU cache (its options and diagnostics channel, the key map, the value and link arrays). Only
 * an entry the cache holds is kept
 * there: the cache's dispose takes it out (releaseEntry), and an entry is on one memo at most, so
 * nothing evicted stays reachable.
 */
export function frontEntryOf(cache: FrontCache, kind: JobKind, revId: number, mappingId: number, c: Combination | null): Rendered | undefined {
  const memo = frontKeyMemo(kind, revId, mappingId, c);
  if (memo === null) return numberedEntry(cache, revId * KINDS + kind);
  const known = memo.entry as Rendered | null;
  if (known !== null && known.owner === cache) return used(cache, known);
  const hit = cache.get(memo.key);
  if (hit !== undefined) {
    // Taken from another memo of the same key (another combination object of an equal key).
    if (hit.memo !== null) hit.memo.entry = null;
    hit.memo = memo;
    memo.entry = hit;
  }
  return hit;
}

function numberedEntry(cache: FrontCache, key: number): Rendered | undefined {
  const slot = key & (NUMBERED_SLOTS - 1);
  const known = numbered[slot]!;
  if (known !== null && known.key === key && known.owner === cache) return used(cache, known);
  const hit = cache.get(key);
  if (hit !== undefined && hit.owner === cache) numbered[slot] = hit;
  return hit;
}

/**
 * Entries of mapped items found by the rule path that selected them, before the path becomes its
 * Combination (path-table.ts says why): one table per thread, keyed by (revision id, mapping id,
 * kind, path): one table row touches fewer cold lines than the stages of the way through the
 * combination. An empty path is not kept: its entry is
 * the revision's own (a numeric key, found in its slot), shared by every mapping of the content,
 * where a row holds one; nor ids past int32. An entry is in one row at most (its key names one
 * path), and the cache's dispose takes it out, as it does for the memos and the numbered slots.
 */
const byPath = new PathTable<Rendered>();

/** Whether (revision, mapping, path) can be kept in the table. */
function pathKeyed(revId: number, mappingId: number, length: number): boolean {
  return length > 0 && (revId | 0) === revId && (mappingId | 0) === mappingId;
}

/**
 * The front-cache entry of a mapped item by its rule path (the first `length` edges of `path`), held
 * by `cache`, or null: then the item goes the way through its combination (frontEntryOf), and
 * rememberPathEntry files what that finds. HOT PATH.
 */
export function pathEntryOf(cache: FrontCache, kind: JobKind, revId: number, mappingId: number, path: Int32Array, length: number): Rendered | null {
  if (!pathKeyed(revId, mappingId, length)) return null;
  const known = byPath.find(revId, mappingId, kind, path, length);
  if (known === null || known.owner !== cache) return null;
  return used(cache, known);
}

/**
 * Files `entry` (found through its combination, tagged `tag`) under its rule path for pathEntryOf:
 * called when pathEntryOf did not find it (never filed, or its row was taken by another key since).
 */
export function rememberPathEntry(kind: JobKind, revId: number, mappingId: number, path: Int32Array, length: number, entry: Rendered, tag: string): void {
  if (!pathKeyed(revId, mappingId, length)) return;
  entry.pathRow = byPath.keep(revId, mappingId, kind, path, length, entry);
  entry.pathTag = tag;
}

/** An entry answered without the cache: the cache sees one use in USES_PER_REFRESH. */
function used(cache: FrontCache, entry: Rendered): Rendered {
  if ((++entry.uses & (USES_PER_REFRESH - 1)) === 0) cache.get(entry.key);
  return entry;
}

/** The cache's dispose: an entry it evicts, replaces or deletes leaves its memo or slot. */
function releaseEntry(entry: Rendered): void {
  const memo = entry.memo;
  if (memo !== null) {
    if (memo.entry === entry) memo.entry = null;
    entry.memo = null;
  }
  if (entry.pathRow >= 0) {
    byPath.clear(entry.pathRow, entry);
    entry.pathRow = -1;
  }
  const key = entry.key;
  if (typeof key !== 'number') return;
  const slot = key & (NUMBERED_SLOTS - 1);
  if (numbered[slot] === entry) numbered[slot] = null;
}
