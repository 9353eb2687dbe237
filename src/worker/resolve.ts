/**
 * One job → one rendered head: revision lookup, the combination's applicability to this revision,
 * render-cache lookup or render.
 *
 * The worker owns everything expensive: reading and parsing revisions, compiling mappings, rendering
 * patched content. The front end keeps the results (shared memory) and answers repeats itself, so a
 * job reaches this code only on a front-cache miss.
 */
import type { LRUCache } from 'lru-cache';
import {
  EMPTY_SELECTION,
  combinationForKey,
  compileMapping,
  prepareDoc,
  renderSelection,
  renderSelectionInto,
  selectCombination,
  type Selection,
} from '../mapping/index.js';
import { JobKind, type Job, type JobResult } from '../pool/protocol.js';
import type { RevisionReader } from '../store/types.js';
import { sharedBytes, type CacheValue, type MappingEntry, type RevisionEntry } from './cache.js';

export interface WorkerState {
  readonly reader: RevisionReader;
  readonly cache: LRUCache<string, CacheValue>;
}

export function resolveJob(state: WorkerState, job: Job): JobResult {
  const rev = loadRevision(state, job.revId);
  if (rev === undefined) return failure('content_not_found');
  if (job.kind === JobKind.Plain) return success(rev.plainHead, '');

  let selection: Selection = EMPTY_SELECTION;
  let mapping: MappingEntry | undefined;
  if (job.mappingId !== 0 && job.comboKey !== '') {
    mapping = loadMapping(state, job.mappingId);
    if (mapping === undefined) return failure('content_not_found');
    // The plain body already holds the revision's UTF-8 bytes: the splicer reads those, no second copy.
    if (rev.doc === null) rev.doc = prepareDoc(rev.minified, rev.plainHead);
    selection = selectCombination(rev.doc, combinationForKey(mapping.compiled, job.comboKey));
  }
  if (selection.key === '' || mapping === undefined) return success(unmutatedHead(rev, job.kind), '[]');

  const key = 'w' + job.revId + ':' + job.mappingId + ':' + job.kind + ':' + selection.key;
  let head = state.cache.get(key) as SharedArrayBuffer | undefined;
  if (head === undefined) {
    // Wrapped: splice the patches into the base bytes straight into the shared head (cost ~ patch size
    // plus one copy). Serialized needs the text as a JSON string, so it takes the string path.
    head =
      job.kind === JobKind.Wrapped
        ? renderSelectionInto(rev.doc!, mapping.compiled, selection, WRAPPED_PREFIX, wrappedSuffix(rev.hash))
        : sharedBytes(wrappedHead(renderSelection(rev.doc!, mapping.compiled, selection), rev.hash, job.kind));
    state.cache.set(key, head);
  }
  return success(head, selection.seg);
}

function unmutatedHead(rev: RevisionEntry, kind: JobKind): SharedArrayBuffer {
  if (kind === JobKind.Wrapped) {
    if (rev.wrappedHead === null) rev.wrappedHead = sharedBytes(wrappedHead(rev.minified, rev.hash, kind));
    return rev.wrappedHead;
  }
  if (rev.serializedHead === null) rev.serializedHead = sharedBytes(wrappedHead(rev.minified, rev.hash, kind));
  return rev.serializedHead;
}

const WRAPPED_PREFIX = '{"data":';

function wrappedSuffix(hash: string): string {
  return ',"hash":"' + hash + '","meta":{"uid":';
}

function wrappedHead(data: string, hash: string, kind: JobKind): string {
  const value = kind === JobKind.Serialized ? JSON.stringify(data) : data;
  return WRAPPED_PREFIX + value + wrappedSuffix(hash);
}

function loadRevision(state: WorkerState, revId: number): RevisionEntry | undefined {
  const key = 'r' + revId;
  const hit = state.cache.get(key) as RevisionEntry | undefined;
  if (hit !== undefined) return hit;
  const row = state.reader.readRevision(revId);
  if (row === undefined) return undefined;
  const entry: RevisionEntry = {
    minified: row.minified,
    hash: row.hash,
    plainHead: sharedBytes(row.minified),
    wrappedHead: null,
    serializedHead: null,
    doc: null,
  };
  state.cache.set(key, entry);
  return entry;
}

function loadMapping(state: WorkerState, mappingId: number): MappingEntry | undefined {
  const key = 'm' + mappingId;
  const hit = state.cache.get(key) as MappingEntry | undefined;
  if (hit !== undefined) return hit;
  const text = state.reader.readMapping(mappingId);
  if (text === undefined) return undefined;
  // Stored mappings were validated on write; compiling again here cannot fail unless the store was edited by hand.
  const entry: MappingEntry = { compiled: compileMapping(JSON.parse(text)) };
  state.cache.set(key, entry);
  return entry;
}

function success(head: SharedArrayBuffer, seg: string): JobResult {
  return { head, headLength: head.byteLength, seg, error: '' };
}

function failure(code: string): JobResult {
  return { head: null, headLength: 0, seg: '', error: code };
}
