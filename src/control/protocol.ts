/**
 * Every message between the control thread and the threads it serves; both sides import this module
 * and nothing else crosses between them.
 *
 * The control thread owns everything that can wait on the store: the store's writer connection, the
 * admin state (audit log, webhooks), the admin listener and the key-use bookkeeping. A delivery event
 * loop never calls the store: it receives routing data as messages (a snapshot at start, deltas of
 * the change log after each write) and applies them to its Directory, which is CPU work only.
 *
 * Two channels:
 * - the lifecycle channel (the worker's parentPort): the owning thread opens, seeds, and stops the
 *   control thread (which writes its own log lines);
 * - a feed per delivery loop (a MessagePort given at creation): directory updates go out, the loop
 *   acknowledges each once requests see it, and reports which API keys it saw. An admin write answers
 *   only after every feed has acknowledged its update ("live at once"). Every feed receives the same
 *   updates, so more delivery loops are more feeds.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ResolvedAdminToken } from '../admin/token.js';
import type { ServeConfig } from '../runtime/config.js';
import type { ErrorCode } from '../runtime/errors.js';
import type { DirectorySnapshot, RoutingDelta } from '../store/types.js';
import type { ServerCounters } from '../metrics/layout.js';

/** The control thread's workerData. */
export interface ControlInit {
  readonly config: ServeConfig;
  /** The feeds of the delivery loops, transferred to the control thread. */
  readonly feeds: readonly MessagePort[];
  /** Hold V8's young generation in this thread too (src/runtime/heap.ts: a new thread resets the flag). */
  readonly holdYoungGeneration: boolean;
  /** Shared with the main thread: store, feed and webhook figures for the metrics and /readyz. */
  readonly counters: ServerCounters;
  /** The admin token the main thread read before any thread started (src/admin/startup-secrets.ts); null with the admin API off. */
  readonly adminToken: ResolvedAdminToken | null;
}

// ---------------------------------------------------------------------------------------------
// Feed: control thread -> one delivery loop, and its replies.

/**
 * What a loop's Directory reads of a revision and of a content item: only these fields of the
 * store's rows cross to the loops, and as columns (PackedContents), not as an object per item.
 */
export interface RoutedRevision {
  readonly revId: number;
  readonly hash: string;
  readonly minAppVersion: string | null;
}

export interface RoutedContent {
  readonly envId: string;
  readonly id: string;
  readonly idLower: string;
  /** Oldest first. Never empty. */
  readonly revisions: readonly RoutedRevision[];
  readonly mappingId: number | null;
}

/**
 * Content entries as they cross to a loop: a few typed arrays and one string, whatever the count
 * (src/control/routed.ts packs them and reads them back). The structured clone of an object per item
 * is slow to post and receive for a large snapshot, and its garbage comes with every delta slice;
 * these columns are a memory copy.
 * An entry with no revisions is a content that is gone (a delta's delete; a snapshot never holds one).
 */
export interface PackedContents {
  readonly count: number;
  /** The environment ids the entries name; `env` indexes it. */
  readonly envIds: readonly string[];
  readonly env: Uint32Array;
  /** Per entry: how many revisions (0: the content is gone), and the mapping id (-1: none). */
  readonly revisionCounts: Uint32Array;
  readonly mappingIds: Float64Array;
  /** Per revision, entry after entry, oldest first within one: the revision id. */
  readonly revIds: Float64Array;
  /** Every string, concatenated: per entry its id and idLower, then per revision its hash and minAppVersion. */
  readonly text: string;
  /** The length of each of those strings, in order; -1 for a minAppVersion that is null. */
  readonly lengths: Int32Array;
}

/** The whole routing state as a loop builds its Directory from it (the Store's DirectorySnapshot with packed contents). */
export interface RoutedSnapshot extends Omit<DirectorySnapshot, 'contents'> {
  readonly contents: PackedContents;
}

/** A change-log delta as a loop applies it (the Store's RoutingDelta with packed contents). */
export interface RoutedDelta extends Omit<RoutingDelta, 'contents'> {
  readonly contents: PackedContents;
}

/** One stored mapping's JSON text; mapping ids are immutable, so a loop may cache what it compiled. */
export interface MappingText {
  readonly id: number;
  readonly json: string;
}

/**
 * One environment's catalog body, built by the control thread (src/control/catalog.ts). The body
 * and its gzip member each come as pieces to be sent in order (one piece for a small body). Every
 * piece is a view of a SharedArrayBuffer that is never written once sent: every loop reads the same
 * bytes, receiving a body costs no copy whatever its size, and an edit sends new bytes only for the
 * block of entries it changed (the other pieces are the same memory as before).
 */
export interface CatalogText {
  readonly envId: string;
  /** `{"catalog":{...}}` as UTF-8, in pieces. */
  readonly body: readonly Uint8Array[];
  /** The body's length (the sum of its pieces'). */
  readonly bodyBytes: number;
  /** The body as one gzip member, in pieces: its blocks compressed once and shared the same way. */
  readonly gzip: readonly Uint8Array[];
  readonly gzipBytes: number;
  /** The body's entity tag (XXH3-128 of the body, computed here once; src/delivery/etag.ts). */
  readonly tag: string;
}

/**
 * An environment's new catalog body as a change to the one every loop holds for it (the last
 * CatalogText or CatalogChange sent for that environment): the same number of pieces, with the
 * pieces at `bodyAt` and `gzipAt` replaced and every other piece kept. An edit changes one block of
 * entries, so it carries one body piece and two gzip pieces (the block's segment and the closing
 * trailer) whatever the environment's size; a whole CatalogText would carry every piece again, and
 * each SharedArrayBuffer received costs the loop an object to make, promote and collect.
 * A loop that does not hold a body of these sizes refuses the update (the control thread then
 * sends a whole snapshot).
 */
export interface CatalogChange {
  readonly envId: string;
  /** How many pieces the body has (the held body must have as many). */
  readonly bodyPieces: number;
  /** Indexes of the body pieces replaced, in order, and their new pieces. */
  readonly bodyAt: readonly number[];
  readonly body: readonly Uint8Array[];
  readonly bodyBytes: number;
  readonly gzipPieces: number;
  readonly gzipAt: readonly number[];
  readonly gzip: readonly Uint8Array[];
  readonly gzipBytes: number;
  readonly tag: string;
}

/** A catalog in an update: whole, or as a change to the one held. */
export type CatalogUpdate = CatalogText | CatalogChange;

/** True for a change to the held catalog (CatalogChange), false for a whole one. */
export function isCatalogChange(c: CatalogUpdate): c is CatalogChange {
  return 'bodyAt' in c;
}

/**
 * The whole routing state, self-contained: the snapshot, the text of every mapping it references
 * (the loop compiles only ids it has not compiled before) and every environment's catalog body.
 * O(store): sent at start, and when a reader fell behind the change log's retained window.
 */
export interface SnapshotUpdate {
  readonly kind: 'snapshot';
  readonly snapshot: RoutedSnapshot;
  readonly mappings: readonly MappingText[];
  readonly catalogs: readonly CatalogText[];
}

/**
 * One slice of a change-log delta: the current state of what changed between two sequence numbers
 * (`delta.fromSeq` must be the loop's applied sequence), applied in place at O(what it carries).
 * A delta too big to apply within the slice budget (src/control/delta.ts) is cut into slices
 * sent one after the other, each once every loop acknowledged the previous one, so requests run
 * between them; every slice carries the whole delta's `fromSeq`/`toSeq`.
 * - `mappings`: the text of each mapping id this slice references that no content referenced
 *   before the update (the loops hold every referenced mapping compiled);
 * - `catalogs`: on the last slice only, the new body of every environment the delta touched (as a
 *   change to the held one where the number of pieces stayed the same), so a catalog never
 *   announces a hash the routing does not serve yet;
 * - `last`: the write this delta carries is live once the last slice is acknowledged.
 */
export interface DeltaUpdate {
  readonly kind: 'delta';
  readonly delta: RoutedDelta;
  readonly mappings: readonly MappingText[];
  readonly catalogs: readonly CatalogUpdate[];
  readonly last: boolean;
}

export type DirectoryUpdate = SnapshotUpdate | DeltaUpdate;

export type StoreStatus = 'ok' | 'unavailable';

export type FeedMessage =
  /** Apply, then answer `directory-applied` with the same seq. Seqs increase by one per update. */
  | { readonly type: 'directory'; readonly seq: number; readonly update: DirectoryUpdate }
  /** Sent when the store's status changes (reported by /healthz). */
  | { readonly type: 'store-status'; readonly status: StoreStatus; readonly reason: string | null };

/**
 * One sampled request of the access log (--access-log): what a delivery loop records when a content
 * request ends; the control thread formats and writes it (src/control/access-writer.ts).
 */
export interface AccessRecord {
  /** Date.now() when the request ended. */
  readonly at: number;
  readonly loop: number;
  /** The metrics route label: config, dynamic or combine. */
  readonly route: string;
  /** The HTTP status, or 0 when the request ended without an answer (client gone). */
  readonly status: number;
  /** hit, miss, not_modified, overloaded, aborted or none (the metrics outcome label). */
  readonly outcome: string;
  /** Body bytes written (compressed bytes when compressed). */
  readonly bytes: number;
  /** From the route handler to the answer written, on the delivery loop. */
  readonly durationMs: number;
  /** The id of the API key that made the request (never the key). */
  readonly keyId: string;
}

export type FeedReply =
  /** `error` is null when requests now see update `seq`; otherwise why it could not be applied. */
  | { readonly type: 'directory-applied'; readonly seq: number; readonly error: string | null }
  /** Key ids used since the last report; `at` is an ISO timestamp. */
  | { readonly type: 'key-use'; readonly keyIds: readonly string[]; readonly at: string }
  /** Access-log records sampled since the last report (at most --access-log-buffer of them). */
  | { readonly type: 'access'; readonly records: readonly AccessRecord[] };

// ---------------------------------------------------------------------------------------------
// Lifecycle: owning thread <-> control thread.

/** What the start of a store with the demo environment has to tell the operator. */
export interface DemoNotice {
  /** The key, only on the start that created it. */
  readonly createdKey: string | null;
  /** Where the key is kept; null for a memory store (nothing is written) or when the file is missing. */
  readonly keyFile: string | null;
}

export type ControlCommand =
  /** Import --import and seed the demo (after every listener is up); answered by `seeded`. */
  | { readonly type: 'seed' }
  /** Stop the admin listener (in-flight admin calls finish); answered by `admin-stopped`. */
  | { readonly type: 'stop-admin' }
  /** Record the last key use, close the admin state and the store, end the thread; answered by `closed`. */
  | { readonly type: 'close' }
  /** SIGHUP: read the admin listener's certificate files again (the outcome is logged; no answer). */
  | { readonly type: 'reload-tls' };

/** A failure carried across the thread boundary: a stable code when it has one. */
export interface ControlFailure {
  readonly code: ErrorCode | null;
  readonly message: string;
  readonly details?: unknown;
}

export type ControlEvent =
  /**
   * The store is open (before its directory is loaded): the delivery loops may start their pools,
   * whose workers open `readerUrl` read-only. Sent once, during the opening, not as an answer.
   */
  | { readonly type: 'store-open'; readonly readerUrl: string }
  /**
   * Store open, first directory applied by every feed, admin listener up (port null when disabled);
   * `adminTokenAt` says where its token is (a file's path, or the variable), never the token.
   */
  | { readonly type: 'opened'; readonly adminPort: number | null; readonly adminTokenAt: string | null }
  | { readonly type: 'seeded'; readonly demo: DemoNotice | null }
  | { readonly type: 'admin-stopped' }
  | { readonly type: 'closed' }
  /** The command in progress (or the opening) failed; the thread has released what it held. */
  | { readonly type: 'failed'; readonly failure: ControlFailure };
