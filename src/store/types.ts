/**
 * The Store interface: the source of truth for environments, API keys, content revisions and
 * mappings. SQLite (embedded, default; src/store/sqlite/) and PostgreSQL (a fleet of nodes on one
 * database; src/store/postgres/) implement it, which is why every method returns a Promise even
 * though better-sqlite3 is synchronous.
 *
 * Two rules the rest of the server relies on:
 * 1. Revisions and mappings are immutable rows with ids that are never reused. Worker threads cache
 *    parsed content by those ids, so a cache entry can never go stale: an edit produces a new id.
 * 2. Every write is one transaction: a refused or crashed write leaves the previous state whole.
 *
 * The hot path never calls the Store, nor does anything on a delivery event loop: the control thread
 * (src/control/) makes every call. Every write appends what it touched to the change log in its own
 * transaction; the control thread reads the log (changesSince, loadDelta) and sends each delivery
 * loop what changed, which the loop applies before the write answers. A whole `loadDirectory()`
 * snapshot is sent only at start and to a loop that fell behind the log's retention.
 */
import type { ImportScheduler, PreparedImport } from './import-plan.js';
import type { Step } from './ops/rows.js';
import type { ScheduleRow } from './schedule/rows.js';
import type { WriteGuard } from './write-guard.js';

export interface RevisionMeta {
  /** Global, immutable, never reused: the key worker caches use. */
  readonly revId: number;
  /** 1-based position within its content item. */
  readonly number: number;
  /** XXH3-128 of the minified JSON text, 32 lowercase hex digits. */
  readonly hash: string;
  /** "X.Y.Z" or null. */
  readonly minAppVersion: string | null;
  readonly createdAt: string;
}

export interface ContentMeta {
  readonly envId: string;
  /** The id as it was created (the catalog shows this spelling). */
  readonly id: string;
  /** Lower-cased id: the lookup key (ids are not case sensitive). */
  readonly idLower: string;
  /** Oldest first. Never empty. */
  readonly revisions: readonly RevisionMeta[];
  /** The current mapping's immutable id, or null. */
  readonly mappingId: number | null;
  /** Number of rules in the current mapping (0 when none): the catalog's `d` is ruleCount > 0. */
  readonly mappingRuleCount: number;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface KeyDigest {
  /** SHA-256 hex of the plain API key. Plain keys are never stored. */
  readonly digest: string;
  readonly keyId: string;
  readonly envId: string;
}

/** Everything the front end needs to route requests, loaded at start (and when a reader fell behind the change log). */
export interface DirectorySnapshot {
  /** The change-log sequence number this snapshot reflects (0: no change was ever logged). */
  readonly seq: number;
  readonly environments: readonly string[];
  /** Only keys that are not revoked. */
  readonly keys: readonly KeyDigest[];
  readonly contents: readonly ContentMeta[];
}

/**
 * One entry of the change log: every write appends, in its own transaction, one entry per routing
 * object it touched. An entry says "this changed, read its current state"; it does not carry the
 * state, so applying entries in order and reading the state once is always correct.
 */
export type ChangeKind = 'environment' | 'key' | 'content';

export interface ChangeEntry {
  /** Increases by one per entry across the whole store; never reused. */
  readonly seq: number;
  readonly kind: ChangeKind;
  readonly envId: string;
  /** 'key': the key id; 'content': the content's lookup key (contentIdKey); 'environment': ''. */
  readonly target: string;
}

export interface ChangeBatch {
  /** Entries with seq > afterSeq, oldest first, at most `limit`. */
  readonly entries: readonly ChangeEntry[];
  /** The newest seq in the log (0 when empty). */
  readonly headSeq: number;
  /**
   * False when entries after `afterSeq` were already pruned (retention): the reader must reload
   * from a snapshot instead of applying entries.
   */
  readonly complete: boolean;
}

/** A serving process of the store (`rcd serve`), as the node registry keeps it. */
export interface NodeRecord {
  readonly nodeId: string;
  readonly pid: number;
  readonly host: string;
  readonly startedAt: string;
  /** Unix ms of its last heartbeat: a node silent past the liveness bound no longer counts. */
  readonly heartbeatMs: number;
  /** The newest change-log seq its delivery loops have applied. */
  readonly appliedSeq: number;
}

/** The current state of every routing object a run of change entries touched. */
export interface RoutingDelta {
  /** The entries applied are those with fromSeq < seq <= toSeq. */
  readonly fromSeq: number;
  readonly toSeq: number;
  /** Environments touched: `exists` false when deleted (its keys and contents go with it). */
  readonly environments: readonly { readonly envId: string; readonly exists: boolean }[];
  /** Keys touched: `key` null when revoked or gone. */
  readonly keys: readonly { readonly keyId: string; readonly envId: string; readonly key: KeyDigest | null }[];
  /** Contents touched: `meta` null when deleted. */
  readonly contents: readonly { readonly envId: string; readonly idLower: string; readonly meta: ContentMeta | null }[];
}

export interface RevisionText {
  readonly revId: number;
  /** Minified JSON (comments stripped): what is delivered. */
  readonly minified: string;
  readonly hash: string;
}

/**
 * Read side used by worker threads: each worker opens its own reader from the store's readerUrl.
 * SQLite's is synchronous (a read-only connection, microseconds a point read). PostgreSQL's is a
 * RevisionSource: a miss is a network round trip, so a batch's misses are read together and awaited
 * (src/worker/entry.ts), never on a delivery loop.
 */
export interface RevisionReader {
  readRevision(revId: number): RevisionText | undefined;
  /** The mapping JSON text as stored, or undefined. */
  readMapping(mappingId: number): string | undefined;
  close(): void;
}

/** A worker thread's reader of a remote store: many ids in one round trip. */
export interface RevisionSource {
  /** The rows found (an id that is gone is absent). Rejects when the store cannot be reached. */
  readRevisions(revIds: readonly number[]): Promise<Map<number, RevisionText>>;
  readMappings(mappingIds: readonly number[]): Promise<Map<number, string>>;
  close(): Promise<void>;
}

/** A running watch of other connections' commits (Store.watchCommits). */
export interface CommitWatch {
  stop(): void;
}

export interface EnvironmentInfo {
  readonly id: string;
  readonly createdAt: string;
  readonly contentCount: number;
  readonly keyCount: number;
}

export interface KeyInfo {
  readonly id: string;
  readonly envId: string;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
  readonly revokedAt: string | null;
}

export interface ContentSummary {
  readonly id: string;
  readonly hash: string;
  readonly revisionCount: number;
  readonly hasMapping: boolean;
  readonly updatedAt: string;
}

export interface RevisionDetail extends RevisionMeta {
  /** The JSONC text exactly as stored (comments kept). */
  readonly text: string;
}

export interface ContentDetail {
  readonly id: string;
  readonly envId: string;
  readonly revisions: readonly RevisionDetail[];
  /** The mapping as JSON value, or null. */
  readonly mapping: unknown;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export interface PutContentResult {
  readonly id: string;
  readonly hash: string;
  /** The revision number now newest. */
  readonly revision: number;
  /** False when the text and minAppVersion equal the newest revision's (nothing was written). */
  readonly changed: boolean;
}

/** A content item a write touched: its id as created and its newest revision's hash (webhooks and audit name it so). */
export interface ContentRef {
  readonly id: string;
  readonly hash: string;
}

/** A mapping written (or found identical): its immutable id and rule count, and the content it belongs to. */
export interface MappingResult extends ContentRef {
  readonly mappingId: number;
  readonly ruleCount: number;
}

export interface SyncReport {
  readonly from: string;
  readonly to: string;
  /** One entry per id considered: what happened to it in the target environment. */
  readonly items: readonly { readonly id: string; readonly action: 'created' | 'updated' | 'unchanged'; readonly hash: string }[];
}

/** What an import wrote of the environments themselves. */
export interface ContentImportReport {
  readonly environmentsCreated: number;
  readonly keysAdded: number;
  readonly revisionsAdded: number;
  readonly mappingsChanged: number;
}

export interface ImportReport extends ContentImportReport {
  /** Scheduled changes and rollouts the bundle brought that were not already there (docs/schedule.md, "Bundles"). */
  readonly schedulesAdded: number;
  readonly rolloutsAdded: number;
}

/**
 * One webhook delivery (one event to one hook) in the store's outbox. A write adds its deliveries in
 * its own transaction, so an event exists exactly when the change it reports was committed, and it
 * survives a restart; the admin plane's dispatcher (src/admin/server/webhooks.ts) sends it later.
 */
export interface NewOutboxEntry {
  /** `msg_` + 32 hex digits: the Standard Webhooks `webhook-id`, the same on every attempt. */
  readonly id: string;
  readonly hookId: string;
  readonly event: string;
  /** The exact JSON body sent (and signed). */
  readonly body: string;
}

export interface OutboxEntry extends NewOutboxEntry {
  /** Attempts made and answered (a lease that ran out without an answer does not count). */
  readonly attempts: number;
  readonly createdAt: string;
  readonly lastError: string | null;
  /** Set once the entry is dead-lettered: no more attempts. */
  readonly deadAt: string | null;
}

/**
 * What a write adds to the outbox, decided inside its transaction once its result is known.
 * `contents`: content items whose state after the write `build` needs (read in the same
 * transaction), e.g. to announce what an import actually changed.
 */
export interface OutboxOf<R> {
  readonly contents?: readonly ChangeEntry[];
  /**
   * The entries are due this long after the commit unless released sooner (releaseOutbox): the
   * writer releases them once its change is live, so no receiver hears of a change before it is
   * served; a writer that dies first leaves them due when the hold ends.
   */
  readonly holdMs: number;
  build(result: R, after: RoutingDelta['contents']): readonly NewOutboxEntry[];
}

/** How an attempt ended, as the outbox records it (Store.settleOutbox). */
export type OutboxOutcome =
  | { readonly kind: 'delivered' }
  /** Another attempt at `atMs` (Unix ms); `counted` false when no attempt was made (the process stopped). */
  | { readonly kind: 'retry'; readonly atMs: number; readonly error: string; readonly counted: boolean }
  /** No more attempts: kept in the dead-letter list (the oldest beyond `keepDead` removed). */
  | { readonly kind: 'dead'; readonly error: string; readonly keepDead: number };

export interface Store {
  /** URL a worker thread passes to openRevisionReader() to read revisions and mappings by id. */
  readonly readerUrl: string;
  loadDirectory(): Promise<DirectorySnapshot>;
  /** Change-log entries after `afterSeq` (see ChangeBatch.complete for a reader that fell behind). */
  changesSince(afterSeq: number, limit: number): Promise<ChangeBatch>;
  /** The current state of what `entries` touched, read in one transaction. */
  loadDelta(entries: readonly ChangeEntry[], fromSeq: number, toSeq: number): Promise<RoutingDelta>;
  /** Drops all but the newest `keep` change-log entries (retention); returns how many went. */
  pruneChanges(keep: number): Promise<number>;

  /** Registers (or re-registers) a serving process of this store. */
  registerNode(node: NodeRecord): Promise<void>;
  /** Records that the node is alive and has applied every change up to `appliedSeq`. */
  heartbeat(nodeId: string, appliedSeq: number, atMs: number): Promise<void>;
  /** Every registered node, stale ones included (the caller judges liveness by heartbeat). */
  listNodes(): Promise<NodeRecord[]>;
  /** Removes a node (its own shutdown, or one silent for long). */
  removeNode(nodeId: string): Promise<void>;
  /**
   * Calls `wake` when another connection or process may have committed, so that the caller reads the
   * change log after the seq it applied (a wake with nothing new is harmless). SQLite: its
   * data_version read when its WAL is written, and polled (every 250 ms beside that watch, 25 ms
   * without one). PostgreSQL: LISTEN/NOTIFY, a catch-up wake every second (a lost
   * notification heals) and a wake when the database is reachable again.
   */
  watchCommits(wake: () => void, onError: (err: unknown) => void): Promise<CommitWatch>;
  /** Mapping texts by immutable id (the ids found), for the control thread's routing updates. */
  readMappings(mappingIds: readonly number[]): Promise<Map<number, string>>;

  listEnvironments(): Promise<EnvironmentInfo[]>;
  /** Creates the environment when missing; true when it was created. */
  putEnvironment(envId: string): Promise<boolean>;
  /**
   * RcdError conflict while it holds content, unless force; not_found when missing. The scheduled
   * changes of the environment (or into it) that were not applied yet are cancelled with it; returns them.
   */
  deleteEnvironment(envId: string, force: boolean, outbox?: OutboxOf<readonly ScheduleRow[]>): Promise<readonly ScheduleRow[]>;

  /** Creates a key (random when plainKey is omitted); the plain key is returned only here. */
  createKey(envId: string, plainKey?: string): Promise<{ id: string; key: string }>;
  listKeys(envId: string): Promise<KeyInfo[]>;
  revokeKey(envId: string, keyId: string): Promise<void>;
  /** Batched last-use bookkeeping; never on the request path. */
  recordKeyUse(keyIds: readonly string[], at: string): Promise<void>;

  listContent(envId: string): Promise<ContentSummary[]>;
  /** Validates JSONC (invalid_content with line and column); adds a revision unless unchanged. */
  putContent(envId: string, id: string, text: string, minAppVersion: string | null, outbox?: OutboxOf<PutContentResult>): Promise<PutContentResult>;
  getContent(envId: string, id: string): Promise<ContentDetail | undefined>;
  deleteContent(envId: string, id: string, outbox?: OutboxOf<ContentRef>): Promise<ContentRef>;
  /** Copies revision `to` as the newest revision. */
  rollback(envId: string, id: string, to: number, outbox?: OutboxOf<PutContentResult>): Promise<PutContentResult>;

  /** Validates (invalid_mapping with rule index and reason, incl. patches against the content). */
  putMapping(envId: string, id: string, mapping: unknown, outbox?: OutboxOf<MappingResult>): Promise<MappingResult>;
  deleteMapping(envId: string, id: string, outbox?: OutboxOf<ContentRef>): Promise<ContentRef>;

  /** Copies newest revisions (and mappings) of `ids` (all when omitted) from one environment to another. */
  sync(from: string, to: string, ids?: readonly string[], outbox?: OutboxOf<SyncReport>): Promise<SyncReport>;

  /** Validates the whole bundle first (invalid_bundle listing every problem), then writes in one transaction. Idempotent. */
  importBundle(bundle: unknown, outbox?: OutboxOf<ImportReport>, by?: ImportScheduler): Promise<ImportReport>;
  /**
   * importBundle for a bundle prepareImport (bundle.ts) already checked, in another thread: only the
   * checks that need the store (key owners) remain, then the write.
   */
  importPrepared(prepared: PreparedImport, outbox?: OutboxOf<ImportReport>, by?: ImportScheduler): Promise<ImportReport>;
  /** A bundle of everything except API keys (they are stored as digests and cannot be exported). */
  exportBundle(): Promise<unknown>;

  /**
   * Null while the store can make writes durable. Otherwise why not (e.g. its files were deleted or
   * replaced under the running process); every write then fails with store_unavailable.
   */
  unavailableReason(): string | null;

  /**
   * Up to `limit` outbox entries due by `nowMs` (not dead), oldest first, leased until `leaseUntilMs`:
   * no other dispatcher (another node, another process on the file) takes them before then, and a
   * process that dies mid-attempt leaves them due again once the lease ends.
   */
  claimOutbox(nowMs: number, leaseUntilMs: number, limit: number): Promise<OutboxEntry[]>;
  /** Records how an attempt ended: delivered (removed), due again later, or dead-lettered. */
  settleOutbox(id: string, outcome: OutboxOutcome): Promise<void>;
  /** Makes these entries due at `atMs` (the writer's change is live). */
  releaseOutbox(ids: readonly string[], atMs: number): Promise<void>;
  /** Dead letters, newest first, at most `limit`. */
  listDeadLetters(limit: number): Promise<OutboxEntry[]>;
  /** Entries still to deliver, and dead letters kept. */
  outboxCounts(): Promise<{ pending: number; dead: number }>;

  /**
   * Runs a step (src/store/ops/rows.ts: scheduled changes, rollouts, the kill switch) in one write
   * transaction under the store's write lock, then adds the outbox entries it reports, as every
   * write does.
   */
  writeStep<T>(step: () => Step<T>, outbox?: OutboxOf<T>): Promise<T>;
  /**
   * Runs `step` as writeStep does, once on each connection the store writes on, all at once
   * (PostgreSQL: every connection of the pool, opened if the pool had closed it; SQLite: its one):
   * warms them before writes expected at a known time. The step must keep nothing.
   */
  writeStepOnEach(step: () => Step<void>): Promise<void>;
  /**
   * A step that writes no routing data and that a power cut may lose without harm (the applier's
   * lease): one transaction, but not under the write lock (PostgreSQL: a holder descheduled by a
   * busy machine would hold up every write of the fleet) and committed without waiting for the disk
   * (SQLite, whose writer lock is the transaction itself).
   */
  leaseStep<T>(step: () => Step<T>): Promise<T>;
  /** Runs a step that only reads, in one read transaction (one consistent state). */
  readStep<T>(step: () => Step<T>): Promise<T>;
  /**
   * Runs a step that only reads but may run long (a preview's replay, ops/overlay.ts) on a snapshot
   * that holds up neither the store's writers nor, on SQLite, this process's event loop for its
   * whole length: PostgreSQL, a repeatable-read read-only transaction; a SQLite file, a read
   * transaction on a read-only connection of its own, driven a slice at a time.
   */
  snapshotStep<T>(step: () => Step<T>): Promise<T>;

  /**
   * This store, whose writes first check inside their own transaction that the admin token of
   * `guard` is not revoked (src/store/write-guard.ts): unauthorized, and nothing written, when it is.
   */
  guarded(guard: WriteGuard): Store;

  close(): Promise<void>;
}

export interface OpenStoreOptions {
  /** How long a write waits for another connection's lock before failing with store_busy (default 5000 ms). */
  readonly busyTimeoutMs?: number;
  /** PostgreSQL: connections of the store's pool (default DEFAULT_PG_POOL_SIZE). */
  readonly poolSize?: number;
}
