/**
 * The worker's LRU of parsed content: revisions (text, UTF-8 bytes, the splice index built on first
 * mutation) and compiled mappings, bounded in bytes (--cache-mb per thread). Keys embed immutable
 * ids (revision, mapping), so entries never go stale: an edit creates new ids and old entries age out.
 *
 * Rendered bodies are not kept here: each is moved (transferred) to the front end, whose cache holds
 * it (src/delivery/front-cache.ts). Keeping them in shared memory instead defeats garbage collection:
 * churned SharedArrayBuffers are freed far later than transferred ArrayBuffers, and RSS grows.
 */
import { LRUCache } from 'lru-cache';
import type { CompiledMapping, PreparedDoc } from '../mapping/index.js';

export interface RevisionEntry {
  readonly minified: string;
  readonly hash: string;
  /** UTF-8 of minified: the plain body's source and the splice base. */
  readonly bytes: Buffer;
  /** Built on first use by a wrapped request (byte index for splicing). */
  doc: PreparedDoc | null;
}

export interface MappingEntry {
  readonly compiled: CompiledMapping;
}

export type CacheValue = RevisionEntry | MappingEntry;

/** The cache key of revision `revId`'s entry. */
export function revisionKey(revId: number): string {
  return 'r' + revId;
}

/** The cache key of mapping `mappingId`'s entry. */
export function mappingKey(mappingId: number): string {
  return 'm' + mappingId;
}

export function createCache(maxBytes: number): LRUCache<string, CacheValue> {
  return new LRUCache<string, CacheValue>({ maxSize: maxBytes, sizeCalculation: entrySize });
}

function entrySize(value: CacheValue): number {
  // Text (UTF-16, up to 2 bytes per char) + its UTF-8 bytes + the splice index, roughly.
  if ('minified' in value) return Math.max(1, value.minified.length * 4);
  return 4096;
}
