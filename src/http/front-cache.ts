/**
 * The front end's cache of rendered heads, keyed by what determines them:
 * (kind, revision id[, mapping id, combination key]). All parts are immutable ids, so an entry can
 * never be stale: an edit routes requests to new ids and old entries age out.
 *
 * Why the front end caches at all: on this 2-core box a pool round trip per request left the main
 * thread idle half the time waiting for workers (bench/README.md, "The pool's role"). Answering
 * repeats here keeps the pool for what is expensive (parse, compile, render a miss). The bytes live
 * in SharedArrayBuffers shared with the worker that rendered them: caching them here costs a
 * reference, not a copy.
 *
 * HOT PATH: one get per content item.
 */
import { LRUCache } from 'lru-cache';
import { JobKind } from '../pool/protocol.js';

export interface Rendered {
  /** The head bytes (a view on the worker's SharedArrayBuffer). */
  readonly head: Uint8Array;
  /** meta.seg JSON for wrapped kinds, "" for plain. */
  readonly seg: string;
}

export type FrontCache = LRUCache<string, Rendered>;

export function createFrontCache(maxBytes: number): FrontCache {
  return new LRUCache<string, Rendered>({ maxSize: maxBytes, sizeCalculation: renderedSize });
}

function renderedSize(r: Rendered): number {
  return r.head.byteLength + r.seg.length + 64;
}

const KIND_PREFIX = ['p', 'w', 's'];

/** The cache key of one item. Mapping and combination only matter for wrapped kinds. */
export function frontKey(kind: JobKind, revId: number, mappingId: number, comboKey: string): string {
  if (kind === JobKind.Plain || comboKey === '') return KIND_PREFIX[kind]! + revId;
  return KIND_PREFIX[kind]! + revId + ':' + mappingId + ':' + comboKey;
}
