/**
 * Reading a batch's misses from a remote store before it renders: the revision and mapping ids its
 * jobs need that the worker's cache does not hold, read in one query each. The rows found are kept
 * in a Prefetched (the synchronous reader resolve.ts reads) until the batch is rendered, which puts
 * them in the cache.
 */
import type { LRUCache } from 'lru-cache';
import type { Job } from '../pool/protocol.js';
import type { RevisionReader, RevisionSource, RevisionText } from '../store/types.js';
import { mappingKey, revisionKey, type CacheValue } from './content-cache.js';

export class Prefetched implements RevisionReader {
  revisions = new Map<number, RevisionText>();
  mappings = new Map<number, string>();

  readRevision(revId: number): RevisionText | undefined {
    return this.revisions.get(revId);
  }

  readMapping(mappingId: number): string | undefined {
    return this.mappings.get(mappingId);
  }

  clear(): void {
    if (this.revisions.size > 0) this.revisions = new Map();
    if (this.mappings.size > 0) this.mappings = new Map();
  }

  close(): void {
    this.clear();
  }
}

/** Reads into `into` what `jobs` need beyond `cache`. */
export async function prefetch(
  cache: LRUCache<string, CacheValue>,
  source: RevisionSource,
  jobs: readonly Job[],
  into: Prefetched,
): Promise<void> {
  const revIds = new Set<number>();
  const mappingIds = new Set<number>();
  // get, not has: a hit becomes the most recently used entry, so rendering this batch (which adds
  // its misses to the cache) cannot evict what the batch itself needs.
  for (const job of jobs) {
    if (cache.get(revisionKey(job.revId)) === undefined) revIds.add(job.revId);
    if (job.mappingId !== 0 && job.comboKey !== '' && cache.get(mappingKey(job.mappingId)) === undefined) mappingIds.add(job.mappingId);
  }
  if (revIds.size === 0 && mappingIds.size === 0) return;
  const [revisions, mappings] = await Promise.all([source.readRevisions([...revIds]), source.readMappings([...mappingIds])]);
  for (const [id, r] of revisions) into.revisions.set(id, r);
  for (const [id, m] of mappings) into.mappings.set(id, m);
}
