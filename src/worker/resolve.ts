/**
 * One job → one rendered item: revision lookup, mapping selection, render-cache lookup or render.
 *
 * HOT PATH: change with care. The wrapped body is split in a cached, user-independent head
 * (`{"data":…,"hash":"…","meta":{"uid":`) and a small per-user tail (`uid,"mod":n,"seg":[…]}}`),
 * so a repeat (revision, applied rules) combination costs a predicate run, a cache hit and a short
 * string — never a re-parse, clone or re-serialization of the content.
 */
import type { LRUCache } from 'lru-cache';
import { userMod, userUid } from '../identity.js';
import {
  EMPTY_SELECTION,
  compileMapping,
  prepareDoc,
  renderSelection,
  selectRules,
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

  const uid = userUid(job.u);
  const mod = userMod(uid);
  let selection: Selection = EMPTY_SELECTION;
  let mapping: MappingEntry | undefined;
  if (job.mappingId !== 0) {
    mapping = loadMapping(state, job.mappingId);
    if (mapping !== undefined) {
      if (rev.doc === null) rev.doc = prepareDoc(rev.minified);
      selection = selectRules(mapping.compiled, rev.doc, job.p, job.v, mod);
    }
  }
  const tail = uid + ',"mod":' + mod + ',"seg":' + selection.seg + '}}';
  if (selection.key === '' || mapping === undefined) return success(unmutatedHead(rev, job.kind), tail);

  const key = 'w' + job.revId + ':' + job.mappingId + ':' + job.kind + ':' + selection.key;
  let head = state.cache.get(key) as SharedArrayBuffer | undefined;
  if (head === undefined) {
    const data = renderSelection(rev.doc!, mapping.compiled, selection);
    head = sharedBytes(wrappedHead(data, rev.hash, job.kind));
    state.cache.set(key, head);
  }
  return success(head, tail);
}

function unmutatedHead(rev: RevisionEntry, kind: JobKind): SharedArrayBuffer {
  if (kind === JobKind.Wrapped) {
    if (rev.wrappedHead === null) rev.wrappedHead = sharedBytes(wrappedHead(rev.minified, rev.hash, kind));
    return rev.wrappedHead;
  }
  if (rev.serializedHead === null) rev.serializedHead = sharedBytes(wrappedHead(rev.minified, rev.hash, kind));
  return rev.serializedHead;
}

function wrappedHead(data: string, hash: string, kind: JobKind): string {
  const value = kind === JobKind.Serialized ? JSON.stringify(data) : data;
  return '{"data":' + value + ',"hash":"' + hash + '","meta":{"uid":';
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

function success(head: SharedArrayBuffer, tail: string): JobResult {
  return { head, headLength: head.byteLength, tail, error: '' };
}

function failure(code: string): JobResult {
  return { head: null, headLength: 0, tail: '', error: code };
}
