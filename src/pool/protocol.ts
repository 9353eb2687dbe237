/**
 * The only types the main thread and the worker threads share: the jobs sent to the pool and the
 * results sent back. Nothing else crosses the thread boundary.
 *
 * Jobs of one event-loop turn travel together as one Batch (one pool task): a pool.run per request
 * cost ~70% of throughput in the architecture measurements, batching kept ~87% of bare uWS.
 */

export const enum JobKind {
  /** Endpoint 2: the revision's content, no mutations. */
  Plain = 0,
  /** Endpoint 1 (and combine with dynamic=true): data + hash + meta, mutations applied. */
  Wrapped = 1,
  /** Like Wrapped, data is the minified JSON text as a JSON string. */
  Serialized = 2,
}

/** One content item to render for one request. Fields always in this order (stable hidden class). */
export interface Job {
  kind: JobKind;
  /** Immutable revision id chosen by the front end (by app version). */
  revId: number;
  /** Immutable mapping id or 0 when the content has none. */
  mappingId: number;
  /** The user id (u); "" when absent. */
  u: string;
  /** The user attributes (p), already validated as a plain object. */
  p: Record<string, unknown>;
  /** The app version as given ("" when absent). */
  v: string;
}

export interface Batch {
  jobs: Job[];
}

/**
 * A rendered item. The body is sent as head followed by tail:
 * - head: the cached, shared bytes (content-dependent, user-independent), e.g. `{"data":...,"hash":"...","meta":{"uid":`.
 *   A SharedArrayBuffer so that a large cached render is handed to the main thread without a copy.
 * - tail: the small per-user remainder (e.g. `123,"mod":123,"seg":[]}}`), "" for plain.
 * On failure (e.g. a revision vanished because its content was deleted mid-flight) head is null and
 * `error` names a stable code.
 */
export interface JobResult {
  head: SharedArrayBuffer | null;
  headLength: number;
  tail: string;
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
}
