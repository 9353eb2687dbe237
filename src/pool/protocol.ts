/**
 * The only types the main thread and the worker threads share: the jobs sent to the pool and the
 * results sent back. Nothing else crosses the thread boundary.
 *
 * Jobs of one event-loop turn travel together as one Batch (one pool task): the cost of a pool task
 * is paid once per turn, not once per request (pool/batcher.ts).
 */

export const enum JobKind {
  /** Endpoint 2: the revision's content, no mutations. */
  Plain = 0,
  /** Endpoint 1 (and combine with dynamic=true): data + hash + meta, mutations applied. */
  Wrapped = 1,
  /** Like Wrapped, data is the minified JSON text as a JSON string. */
  Serialized = 2,
}

/**
 * One item to render: a front-cache miss. The front end has already chosen the revision (by app
 * version) and evaluated the mapping's rules for the user; the worker only needs the result of that,
 * the combination key, so user data (u, p) never crosses the thread boundary.
 * Fields always in this order (stable hidden class).
 */
export interface Job {
  kind: JobKind;
  /** Immutable revision id. */
  revId: number;
  /** Immutable mapping id, or 0 when the content has none. */
  mappingId: number;
  /** The combination of rules/variants that matched ("" for none); see mapping/evaluate.ts. */
  comboKey: string;
}

export interface Batch {
  jobs: Job[];
}

/**
 * A rendered item. The body is sent as head followed by a per-user tail the front end builds:
 * - head: the content-dependent, user-independent bytes: the content (plain) or
 *   `{"data":…,"hash":"…","meta":{"uid":` (wrapped). A fresh ArrayBuffer, transferred (moved, not
 *   copied) to the front end, whose cache keeps it.
 * - seg: the JSON of meta.seg for this combination on this revision (a JSON Patch that does not apply
 *   to the revision drops its rule), "" for plain.
 * On failure head is null and `error` names a stable code (e.g. content_not_found when the content
 * was deleted while the job was queued).
 */
export interface JobResult {
  head: ArrayBuffer | null;
  seg: string;
  /**
   * The head as one gzip member whose deflate stream ends with a sync flush before its final block
   * (src/shared/gzip.ts), so a tail can be appended; null under --compress-min-bytes. Transferred.
   */
  gzip: ArrayBuffer | null;
  /** The head in brotli, plain kind only (null otherwise or under the threshold). Transferred. */
  br: ArrayBuffer | null;
  error: string;
}

export interface BatchResult {
  results: JobResult[];
}

/** Options given to every worker through Piscina's workerData. */
export interface WorkerOptions {
  /** Store URL the worker opens read-only (e.g. "sqlite:./data/rcd.db"). */
  storeUrl: string;
  /** Upper bound of the worker's LRU (parsed content and rendered bytes), in bytes. */
  cacheBytes: number;
  /** Set V8's young-generation growth factor again in the worker (see src/runtime/heap.ts). */
  holdYoungGeneration: boolean;
  /** Heads at least this long are compressed when rendered (--compress-min-bytes). */
  compressMinBytes: number;
  /**
   * The nice value the worker takes once its modules are loaded (its delivery loop's), or null to
   * keep the one it started with (src/runtime/priority.ts).
   */
  nice: number | null;
}
