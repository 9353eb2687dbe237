/**
 * The worker's one LRU: parsed revisions, compiled mappings and rendered bodies, bounded in bytes
 * (--cache-mb per thread). Keys embed immutable ids (revision, mapping), so entries never go stale:
 * an edit creates new ids and the old entries simply age out.
 */
import { LRUCache } from 'lru-cache';
import type { CompiledMapping, PreparedDoc } from '../mapping/index.js';

export interface RevisionEntry {
  readonly minified: string;
  readonly hash: string;
  /** The plain body (endpoint 2), shared with the main thread without a copy. */
  readonly plainHead: SharedArrayBuffer;
  /** Built on first wrapped request without mutations. */
  wrappedHead: SharedArrayBuffer | null;
  serializedHead: SharedArrayBuffer | null;
  /** Built on first use by a mapping (offsets for splicing, parsed value). */
  doc: PreparedDoc | null;
}

export interface MappingEntry {
  readonly compiled: CompiledMapping;
}

export type CacheValue = RevisionEntry | MappingEntry | SharedArrayBuffer;

export function createCache(maxBytes: number): LRUCache<string, CacheValue> {
  return new LRUCache<string, CacheValue>({ maxSize: maxBytes, sizeCalculation: entrySize });
}

function entrySize(value: CacheValue): number {
  if (value instanceof SharedArrayBuffer) return Math.max(1, value.byteLength);
  if ('minified' in value) return Math.max(1, value.minified.length * 3);
  return 4096;
}

/** Copies UTF-8 bytes of `text` into a new SharedArrayBuffer. */
export function sharedBytes(text: string): SharedArrayBuffer {
  const len = Buffer.byteLength(text, 'utf8');
  const sab = new SharedArrayBuffer(len);
  Buffer.from(sab).write(text, 0, 'utf8');
  return sab;
}
