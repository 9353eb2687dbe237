/**
 * One definition of a write's steps for both stores. SQLite runs a transaction synchronously
 * (better-sqlite3: the transaction function may not await), PostgreSQL awaits every statement; the
 * steps themselves are the same. So a step is written once, as a generator that yields the row
 * calls it needs (`yield* row('findContent', env, key)`) and gets each call's result back; the
 * SQLite store drives it with its synchronous rows, the PostgreSQL store with its asynchronous ones
 * (drive.ts). Scheduled changes, the kill switch and rollouts are written this
 * way, and so are the single writes they share their semantics with (ops/content.ts), so a change a
 * schedule applies is exactly the write a person would have sent.
 *
 * A row call that throws is thrown back into the generator at its `yield`, so a step may catch a
 * failure of its own part (a savepoint rolled back) and go on.
 */
import type { CompiledContent } from '../jsonc.js';
import type { ContentRow, EnvRow, KeyRow, MappingRow, RevisionArgs, RevisionRow } from '../sqlite/sql.js';
import type { LeaseHolder, RolloutRow, ScheduleQuery, ScheduleRow } from '../schedule/rows.js';

/** The row operations a step may yield, as the SQLite store runs them (PostgreSQL's return promises). */
export interface Rows {
  getEnv(envId: string): EnvRow | undefined;
  insertEnv(envId: string, at: string): void;
  /** Deletes the environment with its keys, content, revisions and mappings (cascade). */
  deleteEnv(envId: string): void;
  /** How many content items the environment holds. */
  countContents(envId: string): number;
  /** Every environment's id, in binary order. */
  envIds(): string[];
  keyByDigest(digest: string): KeyRow | undefined;
  /** The environment owning each of `digests` (those stored). */
  keyOwners(digests: readonly string[]): Map<string, string>;
  insertKey(keyId: string, envId: string, digest: string, at: string): void;
  keyOf(envId: string, keyId: string): Pick<KeyRow, 'revoked_at'> | undefined;
  revokeKey(keyId: string, at: string): void;
  findContent(envId: string, idLower: string): ContentRow | undefined;
  /** Every content row of the environment, ordered by id_lower. */
  contentsOf(envId: string): ContentRow[];
  insertContent(envId: string, idLower: string, id: string, at: string): ContentRow;
  /** Deletes the item with its revisions and mappings (cascade). */
  deleteContent(contentPk: number): void;
  newestRevision(contentPk: number): RevisionRow | undefined;
  revision(contentPk: number, number: number): RevisionRow | undefined;
  /** Every revision, oldest first. */
  revisions(contentPk: number): RevisionRow[];
  newestHash(contentPk: number): string | undefined;
  /** The newest `count` revisions, oldest first. */
  newestRevisions(contentPk: number, count: number): RevisionRow[];
  /**
   * Writes revision `number` without marking the item updated: for an item created in the same
   * transaction, whose insert already put it in the change log.
   */
  insertRevision(...revision: RevisionArgs): void;
  /** Writes revision `number` and marks the item updated (which logs the change); returns the number. */
  appendRevision(...revision: RevisionArgs): number;
  /** For each key (in order): the item of `envId` and its newest revision, when they exist. */
  contentHeads(envId: string, keys: readonly string[]): ContentHead[];
  /** Creates these items (none exists yet); returns their rows in order. */
  insertContents(envId: string, items: readonly { readonly idLower: string; readonly id: string }[], at: string): ContentRow[];
  /**
   * Writes these revisions; an item whose row already existed (`touch`) is marked updated as
   * appendRevision does, one created in the same transaction is not (insertRevision).
   */
  insertRevisions(revisions: readonly NewRevision[], at: string): void;
  getMapping(mappingId: number | null): MappingRow | undefined;
  insertMapping(contentPk: number, json: string, ruleCount: number, at: string): number;
  clearMapping(contentPk: number, at: string): void;

  /** The store's clock (Unix ms): the database server's for PostgreSQL, so every node reads one clock. */
  storeNowMs(): number;
  insertSchedule(row: ScheduleRow, items: readonly ScheduleItem[]): void;
  getSchedule(scheduleId: string): ScheduleRow | undefined;
  listSchedules(query: ScheduleQuery): ScheduleRow[];
  /** Pending schedules due by `nowMs`, oldest due first (then by id), at most `limit`. */
  dueSchedules(nowMs: number, limit: number): ScheduleRow[];
  /**
   * Pending schedules of `envId` due before `beforeMs` (or at it with an id below `beforeId`) that
   * touch one of `keys` (content keys, or ALL_ITEMS), in the order they will apply.
   */
  pendingTouching(envId: string, keys: readonly string[], beforeMs: number, beforeId: string): ScheduleRow[];
  /**
   * Pending and paused schedules that write the item: those that name it, and the syncs of every item
   * from another environment into this one (a sync of every item from this one does not write it);
   * with ALL_ITEMS, every one of the environment or writing into it.
   */
  openTouching(envId: string, idLower: string): ScheduleRow[];
  /** Open (pending or paused) schedules created with this token. */
  openOfToken(tokenId: string): ScheduleRow[];
  /** Sets the row's outcome if its status is still one of `from`; returns how many rows changed (0 or 1). */
  settleSchedule(scheduleId: string, from: readonly ScheduleRow['status'][], outcome: ScheduleOutcomeRow): number;
  /** Marks these pending schedules applied (one statement where the store can); returns how many rows changed. */
  settleApplied(applied: readonly AppliedRow[], settledAt: string): number;
  /** Moves a pending or paused schedule; returns how many rows changed. */
  moveSchedule(scheduleId: string, dueMs: number): number;
  /** Replaces the ops, note and items of a pending or paused schedule; returns how many rows changed. */
  editSchedule(scheduleId: string, ops: string, note: string, items: readonly ScheduleItem[]): number;
  /** Changes status `from` to `to`; returns how many rows changed. */
  setScheduleStatus(scheduleId: string, from: ScheduleRow['status'], to: ScheduleRow['status']): number;
  countOpen(): number;
  /** The earliest due time of a pending schedule (Unix ms), or null when none is pending. */
  nextDueMs(): number | null;
  insertRollout(row: RolloutRow): void;
  getRollout(rolloutId: string): RolloutRow | undefined;
  listRollouts(envId: string | null, limit: number): RolloutRow[];
  setRolloutStatus(rolloutId: string, status: RolloutRow['status']): void;
  /** Takes or renews the named lease for `holder` until `untilMs` when it is free, expired or held by `holder`; returns the holder after. */
  takeLease(name: string, holder: string, nowMs: number, untilMs: number): LeaseHolder;
  releaseLease(name: string, holder: string): void;

  savepoint(name: string): void;
  rollbackTo(name: string): void;
  releaseSavepoint(name: string): void;
}

export interface ContentHead {
  readonly content: ContentRow | undefined;
  readonly newest: RevisionRow | undefined;
}

export interface NewRevision {
  readonly contentPk: number;
  readonly number: number;
  readonly text: string;
  readonly compiled: Pick<CompiledContent, 'minified' | 'hash'>;
  readonly minAppVersion: string | null;
  /** The item existed before this transaction: mark it updated (which logs the change). */
  readonly touch: boolean;
}

export interface ScheduleItem {
  readonly envId: string;
  /** A content key, or ALL_ITEMS: a sync without ids touches every item of its environments. */
  readonly idLower: string;
}

/** The item key of "every item of the environment" (no content key is empty). */
export const ALL_ITEMS = '';

export interface ScheduleOutcomeRow {
  readonly status: ScheduleRow['status'];
  readonly settledAt: string;
  readonly lateMs: number | null;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly result: string | null;
}

export interface AppliedRow {
  readonly scheduleId: string;
  readonly lateMs: number;
  /** What each op did, JSON. */
  readonly result: string;
}

/** PostgreSQL's rows: the same calls, each a round trip. */
export type AsyncRows = { [K in keyof Rows]: (...args: Parameters<Rows[K]>) => Promise<ReturnType<Rows[K]>> };

export interface RowCall {
  readonly method: keyof Rows;
  readonly args: readonly unknown[];
}

/** Steps that touch disjoint rows: a driver may interleave their row calls (PostgreSQL pipelines them). */
export interface ParallelCall {
  readonly parallel: readonly Step<unknown>[];
}

/** A step: yields row calls (or parallel steps), receives their results, returns T. */
export type Step<T> = Generator<RowCall | ParallelCall, T, unknown>;

/** One row call inside a step: `const row = yield* call('findContent', env, key)`. */
export function* call<K extends keyof Rows>(method: K, ...args: Parameters<Rows[K]>): Step<ReturnType<Rows[K]>> {
  return (yield { method, args }) as ReturnType<Rows[K]>;
}

/**
 * Runs steps that touch disjoint rows, each to its end even when another fails (so nothing of them
 * is still running when the caller handles the failure), and returns their results in order, or
 * throws the first failure. PostgreSQL interleaves their row calls on the transaction's connection,
 * so N steps of k calls cost about k round trips instead of N x k; SQLite runs them one by one.
 */
export function* parallel<T>(steps: readonly Step<T>[]): Step<T[]> {
  return (yield { parallel: steps }) as T[];
}
