/**
 * One job → one rendered head, moved to the front end: revision lookup, the combination's
 * applicability to this revision, and the render.
 *
 * The worker owns everything expensive: reading and parsing revisions, compiling mappings, rendering
 * patched content. A job reaches it only on a front-cache miss; the result is a fresh ArrayBuffer that
 * the batch transfers (no copy) and the front cache keeps.
 */
import type { LRUCache } from 'lru-cache';
import {
  EMPTY_SELECTION,
  combinationForKey,
  compileStoredMapping,
  ownedText,
  prepareDoc,
  renderSelection,
  renderSelectionInto,
  selectCombination,
  type PreparedDoc,
  type Selection,
} from '../mapping/index.js';
import { JobKind, type Job, type JobResult } from '../pool/protocol.js';
import type { RevisionReader } from '../store/types.js';
import { brotliCompressSync, constants, type BrotliOptions } from 'node:zlib';
import { compressPart, gzipMember } from '../shared/gzip.js';
import { mappingKey, revisionKey, type CacheValue, type MappingEntry, type RevisionEntry } from './content-cache.js';

export interface WorkerState {
  readonly reader: RevisionReader;
  readonly cache: LRUCache<string, CacheValue>;
  /** Heads at least this long are compressed here, once, when rendered (--compress-min-bytes). */
  readonly compressMinBytes: number;
}

const WRAPPED_PREFIX = '{"data":';

export function resolveJob(state: WorkerState, job: Job): JobResult {
  const rev = loadRevision(state, job.revId);
  if (rev === undefined) return failure('content_not_found');
  if (job.kind === JobKind.Plain) {
    const b = rev.bytes;
    return success(state, job.kind, b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer, '');
  }

  let selection: Selection = EMPTY_SELECTION;
  if (job.mappingId !== 0 && job.comboKey !== '') {
    const mapping = loadMapping(state, job.mappingId);
    if (mapping === undefined) return failure('content_not_found');
    selection = selectCombination(docOf(rev), combinationForKey(mapping.compiled, job.comboKey));
  }
  const suffix = ',"hash":"' + rev.hash + '","meta":{"uid":';
  if (job.kind === JobKind.Serialized) {
    // data is the JSON text as a JSON string: the whole text is escaped, so this takes the string path.
    const data = selection.key === '' ? rev.minified : renderSelection(docOf(rev), selection);
    return success(state, job.kind, ownedText(WRAPPED_PREFIX + JSON.stringify(data) + suffix), selection.seg);
  }
  // Splice the patches (if any) into the base bytes, written once into the buffer that is sent.
  return success(state, job.kind, renderSelectionInto(docOf(rev), selection, WRAPPED_PREFIX, suffix), selection.seg);
}

function docOf(rev: RevisionEntry): PreparedDoc {
  // The revision's UTF-8 bytes are the splice base: no second copy.
  if (rev.doc === null) rev.doc = prepareDoc(rev.minified, rev.bytes);
  return rev.doc;
}

function loadRevision(state: WorkerState, revId: number): RevisionEntry | undefined {
  return cachedOrRead(state, revisionKey(revId), revId, readRevisionEntry);
}

function loadMapping(state: WorkerState, mappingId: number): MappingEntry | undefined {
  return cachedOrRead(state, mappingKey(mappingId), mappingId, readMappingEntry);
}

/**
 * The cache's entry under `key`, else the one `read` makes of row `id` from the store, kept in the
 * cache; undefined when the store has no such row. A named reader, not a closure: no function is made
 * per job.
 */
function cachedOrRead<Entry extends CacheValue>(state: WorkerState, key: string, id: number, read: (reader: RevisionReader, id: number) => Entry | undefined): Entry | undefined {
  const hit = state.cache.get(key) as Entry | undefined;
  if (hit !== undefined) return hit;
  const entry = read(state.reader, id);
  if (entry !== undefined) state.cache.set(key, entry);
  return entry;
}

function readRevisionEntry(reader: RevisionReader, revId: number): RevisionEntry | undefined {
  const row = reader.readRevision(revId);
  return row === undefined ? undefined : { minified: row.minified, hash: row.hash, bytes: Buffer.from(row.minified, 'utf8'), doc: null };
}

function readMappingEntry(reader: RevisionReader, mappingId: number): MappingEntry | undefined {
  const text = reader.readMapping(mappingId);
  // Stored mappings were validated on write; compiling again here cannot fail unless the store was edited by hand.
  return text === undefined ? undefined : { compiled: compileStoredMapping(text) };
}

/**
 * The result, with the head compressed when it is long enough: the one time these bytes are
 * compressed (the front end keeps them beside the head). gzip for every kind, as a member a tail can
 * be appended to; brotli only for plain heads, which are sent whole.
 */
function success(state: WorkerState, kind: JobKind, head: ArrayBuffer, seg: string): JobResult {
  if (head.byteLength < state.compressMinBytes) return { head, seg, gzip: null, br: null, error: '' };
  const bytes = new Uint8Array(head);
  const gzip = ownedCopy(gzipMember(compressPart(bytes)));
  const br = kind === JobKind.Plain ? ownedCopy(brotliCompressSync(bytes, brotliOptions(bytes.byteLength))) : null;
  return { head, seg, gzip, br, error: '' };
}

/**
 * Brotli quality 5: on JSON it compresses much better than quality 4 in no more time, and close to
 * quality 8 in a third of it (the default, 11, takes far longer). Paid once per rendered head.
 */
function brotliOptions(size: number): BrotliOptions {
  return {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 5,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_SIZE_HINT]: size,
    },
  };
}

/** The bytes in an ArrayBuffer of their own (a pooled Buffer's memory cannot be transferred). */
function ownedCopy(b: Uint8Array): ArrayBuffer {
  const out = new ArrayBuffer(b.byteLength);
  new Uint8Array(out).set(b);
  return out;
}

function failure(code: string): JobResult {
  return { head: null, seg: '', gzip: null, br: null, error: code };
}
