/**
 * The Store on PostgreSQL: one database shared by every node of a fleet (docs/fleet.md).
 *
 * Writes run in one transaction that first takes the store's write lock (an advisory lock, waited
 * for at most --store-busy-timeout, then 503 store_busy): validation reads and the writes that
 * follow see one state, as under SQLite's single writer, and the change log is appended by
 * triggers in the same transaction (schema.ts). Reads of several statements run in one
 * repeatable-read transaction, so they see one committed state.
 *
 * Outage: a call that finds the database unreachable marks the store unavailable (the control
 * thread reports it to /healthz and writes answer 503 store_unavailable at once instead of waiting
 * for a connection) and starts a probe that retries with backoff; once the database answers, the
 * store is available again and every commit watcher is woken, so each node reads the change log
 * from the sequence it applied and catches up.
 *
 * Silence: a database that stops answering without closing anything (a partition that drops
 * packets) leaves statements waiting until the kernel gives their connections up, for many
 * minutes. The heartbeat runs on a connection of its own (no other work delays it) and must be
 * answered within STALL_MS; when it is not, the store counts as unreachable as above, every call in
 * flight is given up on (503 store_unavailable; a transaction among them rolls back, never commits
 * later) and the pools are replaced, so the probe and the calls after it never wait behind a silent
 * connection.
 */
import { RcdError } from '../../runtime/errors.js';
import { prepareImport } from '../bundle/bundle.js';
import { finishImport, writePlan } from '../bundle/write.js';
import { nowIso } from '../sqlite/sql.js';
import type { Step } from '../ops/rows.js';
import { runRowsAsync } from '../ops/drive.js';
import { importSchedules, STORE_IMPORT } from '../schedule/bundle.js';
import { StepStore } from '../step-store.js';
import type { ChangeBatch, ChangeEntry, CommitWatch, ContentSummary, DirectorySnapshot, EnvironmentInfo, ImportReport, KeyDigest, KeyInfo, NodeRecord, OutboxEntry, OutboxOf, OutboxOutcome, RoutingDelta, Store } from '../types.js';
import { DEFAULT_PG_CONNECT_TIMEOUT_MS, OnLost, connect, describePgError, isUnreachable, pgFailure, runOnPool, type Sql, type Tx } from './connection.js';
import { answeredWithin, CallsInFlight, STALL_MS } from './silence.js';
import { PgRows } from './rows.js';
import { transaction } from './transaction.js';
import { listContent, listEnvironments, listKeys } from './listings.js';
import * as routing from './routing.js';
import * as outboxRows from './outbox.js';
import { CHANGE_CHANNEL, WRITE_LOCK } from './schema.js';
import { guardedView, WRITE_GUARD, type WriteGuard } from '../write-guard.js';
import { requireLiveTokenPg } from './token-guard.js';

/** Connections of long reads (snapshotStep), besides the pool; more wait for one. */
const SNAPSHOT_CONNECTIONS = 2;
/** Reads of several statements: one committed state, no locks a writer waits for. */
const REPEATABLE_READ = 'ISOLATION LEVEL REPEATABLE READ READ ONLY';
/** Between two notifications, a node reads the change log anyway: a lost notification heals by then. */
export const CATCH_UP_MS = 1000;
/** Reconnection probe backoff: first retry, and the cap it doubles up to. */
const PROBE_FIRST_MS = 100;
const PROBE_MAX_MS = 1000;

/** A commit watcher's LISTEN on the change channel, on the pool of the moment. */
interface Listener {
  readonly wake: () => void;
  readonly onError: (err: unknown) => void;
  listening: { unlisten(): Promise<void> } | null;
}

export class PostgresStore extends StepStore implements Store {
  readonly readerUrl: string;
  /** The pool; replaced when the database falls silent (stalled()). */
  private sql: Sql;
  /** The heartbeat's own connection, opened by the first heartbeat. */
  private canary: Sql | null = null;
  /** Every call waiting for the database: each is given up on when it falls silent. */
  private readonly inFlight = new CallsInFlight();
  /** The change channel's listeners (watchCommits): listening again on a new pool once it answers. */
  private readonly listeners = new Set<Listener>();
  private readonly busyTimeoutMs: number;
  private readonly poolSize: number;
  private closed = false;
  private unreachable: string | null = null;
  private probe: NodeJS.Timeout | null = null;
  private probeDelayMs = PROBE_FIRST_MS;
  private readonly wakers = new Set<() => void>();
  /** Null here; a guarded view's (guarded()) admin token, checked by every write of the view. */
  readonly [WRITE_GUARD]: WriteGuard | null = null;
  private snapshots: Sql | null = null;

  constructor(sql: Sql, readerUrl: string, busyTimeoutMs: number, poolSize: number) {
    super();
    this.sql = sql;
    this.poolSize = poolSize;
    this.readerUrl = readerUrl;
    this.busyTimeoutMs = busyTimeoutMs;
  }

  unavailableReason(): string | null {
    return this.unreachable;
  }

  /**
   * Runs a call against the database (connection.ts runOnPool: again on a connection a restart
   * ended; a read once more on a lost connection, a write not), sorting its failure and tracking
   * reachability.
   */
  private async call<T>(fn: (signal: AbortSignal) => Promise<T>, onLost = OnLost.RetryOnce): Promise<T> {
    if (this.closed) throw new RcdError('internal', 'the store is closed');
    if (this.unreachable !== null) throw new RcdError('store_unavailable', `the store is unreachable (${this.unreachable}); retrying in the background`);
    try {
      return await this.inFlight.run((signal) => runOnPool(() => fn(signal), this.poolSize, onLost));
    } catch (err) {
      if (isUnreachable(err)) this.markUnreachable(describePgError(err));
      throw pgFailure(err);
    }
  }

  /** One transaction under the write lock: `fn`, then the outbox entries it reports (types.ts, OutboxOf). */
  private write<T>(fn: (rows: PgRows) => Promise<T>, outbox?: OutboxOf<T>): Promise<T> {
    const guard = this[WRITE_GUARD];
    const locked = async (tx: Tx): Promise<T> => {
      await tx.unsafe(`SET LOCAL lock_timeout = ${this.busyTimeoutMs}`);
      await tx.unsafe('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK], { prepare: true });
      if (guard !== null) await requireLiveTokenPg(tx, guard);
      const result = await fn(new PgRows(tx));
      if (outbox !== undefined) {
        const after = outbox.contents === undefined ? [] : (await routing.delta(tx, outbox.contents, 0, 0)).contents;
        const now = Date.now();
        await outboxRows.insertOutbox(tx, outbox.build(result, after), now, now + outbox.holdMs);
      }
      return result;
    };
    return this.call((signal) => transaction(this.sql, locked, '', signal), OnLost.Throw);
  }

  writeStep<T>(step: () => Step<T>, outbox?: OutboxOf<T>): Promise<T> {
    return this.write((rows) => runRowsAsync(rows, step()), outbox);
  }

  writeStepOnEach(step: () => Step<void>): Promise<void> {
    // poolSize transactions at once: the driver gives each a connection of its own while the pool
    // has room (a reader holding one leaves one of them to queue for another, already warm).
    return Promise.all(Array.from({ length: this.poolSize }, () => this.writeStep(step))).then(() => undefined);
  }

  leaseStep<T>(step: () => Step<T>): Promise<T> {
    return this.call((signal) => transaction(this.sql, (tx) => runRowsAsync(new PgRows(tx), step()), '', signal), OnLost.Throw);
  }

  readStep<T>(step: () => Step<T>): Promise<T> {
    return this.read((tx) => runRowsAsync(new PgRows(tx), step()));
  }

  guarded(guard: WriteGuard): Store {
    return guardedView(this, guard);
  }

  /**
   * A repeatable-read read-only transaction takes no lock a writer waits for, and each row call is a
   * turn of the event loop. It runs on connections of its own (SNAPSHOT_CONNECTIONS, opened on first
   * use): a preview holding one for its replay leaves the pool to the writes and the applier, whose
   * warm-up takes every connection of the pool at once.
   */
  snapshotStep<T>(step: () => Step<T>): Promise<T> {
    const sql = (this.snapshots ??= connect(this.readerUrl, { poolSize: SNAPSHOT_CONNECTIONS, connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS }));
    return this.call((signal) => transaction(sql, (tx) => runRowsAsync(new PgRows(tx), step()), REPEATABLE_READ, signal));
  }

  private read<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.call((signal) => transaction(this.sql, fn, REPEATABLE_READ, signal));
  }

  private markUnreachable(reason: string): void {
    if (this.closed) return;
    if (this.unreachable === null) this.unreachable = reason;
    if (this.probe === null) this.scheduleProbe();
  }

  private scheduleProbe(): void {
    this.probe = setTimeout(() => void this.runProbe(), this.probeDelayMs);
    this.probe.unref();
  }

  private async runProbe(): Promise<void> {
    if (this.closed) return;
    try {
      // Each pooled connection that was idle across a restart hands its shutdown error (57P01) to
      // its next query, this probe included: those say nothing about the database now, so the
      // probe tries the next connection at once instead of backing off once per dead connection.
      const sql = this.sql;
      await answeredWithin(runOnPool(() => sql.unsafe('SELECT 1'), this.poolSize, OnLost.Throw), STALL_MS, (err) => this.stalled(err));
    } catch (err) {
      this.unreachable = describePgError(err);
      this.probeDelayMs = Math.min(this.probeDelayMs * 2, PROBE_MAX_MS);
      this.scheduleProbe();
      return;
    }
    this.probe = null;
    this.probeDelayMs = PROBE_FIRST_MS;
    this.unreachable = null;
    for (const l of this.listeners) if (l.listening === null) void this.listen(l);
    for (const wake of this.wakers) wake();
  }

  private async requireEnv(rows: PgRows, envId: string): Promise<void> {
    if ((await rows.getEnv(envId)) === undefined) throw new RcdError('not_found', `environment ${JSON.stringify(envId)} does not exist`);
  }

  loadDirectory(): Promise<DirectorySnapshot> {
    return this.read((tx) => routing.snapshot(tx));
  }

  changesSince(afterSeq: number, limit: number): Promise<ChangeBatch> {
    return this.call(() => routing.changesSince(this.sql, afterSeq, limit));
  }

  loadDelta(entries: readonly ChangeEntry[], fromSeq: number, toSeq: number): Promise<RoutingDelta> {
    if (!routing.deltaNeedsTransaction(entries)) return this.call(() => routing.delta(this.sql, entries, fromSeq, toSeq));
    return this.read((tx) => routing.delta(tx, entries, fromSeq, toSeq));
  }

  pruneChanges(keep: number): Promise<number> {
    // Under the write lock: no writer numbers entries while the head is read and the tail cut.
    return this.write((rows) => routing.pruneChanges(rows.tx, keep));
  }

  async readMappings(mappingIds: readonly number[]): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    if (mappingIds.length === 0) return out;
    const rows = await this.call(() =>
      this.sql.unsafe<{ mapping_id: number; json: string }[]>('SELECT mapping_id, json FROM mappings WHERE mapping_id = ANY($1::bigint[])', [
        mappingIds as number[],
      ]),
    );
    for (const r of rows) out.set(r.mapping_id, r.json);
    return out;
  }

  registerNode(node: NodeRecord): Promise<void> {
    return this.call(() => routing.registerNode(this.sql, node));
  }

  /** On the heartbeat's own connection, answered within STALL_MS (silence.ts) or the database counts as silent. */
  heartbeat(nodeId: string, appliedSeq: number, atMs: number): Promise<void> {
    this.canary ??= connect(this.readerUrl, { poolSize: 1, connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS });
    const canary = this.canary;
    return this.call(() => answeredWithin(routing.heartbeat(canary, nodeId, appliedSeq, atMs), STALL_MS, (err) => this.stalled(err)));
  }

  /**
   * The database has not answered within STALL_MS: the store is unreachable, every call in flight is
   * given up on, and every pool is replaced by a new one (the old ones are ended at once, their
   * statements refused), so nothing waits behind a connection that went silent.
   */
  private stalled(err: Error): void {
    if (this.closed) return;
    this.markUnreachable(err.message);
    this.inFlight.giveUp(err);
    const old = [this.sql, this.canary, this.snapshots];
    this.sql = connect(this.readerUrl, { poolSize: this.poolSize, connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS });
    this.canary = null;
    this.snapshots = null;
    for (const pool of old) pool?.end({ timeout: 0 }).catch(() => undefined);
    for (const l of this.listeners) l.listening = null;
  }

  listNodes(): Promise<NodeRecord[]> {
    return this.call(() => routing.listNodes(this.sql));
  }

  removeNode(nodeId: string): Promise<void> {
    return this.call(() => routing.removeNode(this.sql, nodeId));
  }

  /**
   * LISTEN on the change channel (a connection of its own that postgres.js re-opens with backoff
   * after a loss; each (re)connection wakes the caller too, since notifications sent meanwhile are
   * lost), plus a wake every CATCH_UP_MS and one when the store becomes reachable again.
   */
  async watchCommits(wake: () => void, onError: (err: unknown) => void): Promise<CommitWatch> {
    this.wakers.add(wake);
    const timer = setInterval(wake, CATCH_UP_MS);
    timer.unref();
    const listener: Listener = { wake, onError, listening: null };
    this.listeners.add(listener);
    await this.listen(listener);
    return {
      stop: () => {
        clearInterval(timer);
        this.wakers.delete(wake);
        this.listeners.delete(listener);
        listener.listening?.unlisten().catch(() => undefined);
      },
    };
  }

  /** LISTEN for `l` on the current pool; a failure is reported and the catch-up timer goes on. */
  private async listen(l: Listener): Promise<void> {
    const sql = this.sql;
    try {
      const listening = await sql.listen(CHANGE_CHANNEL, () => l.wake(), () => l.wake());
      // Replaced meanwhile (stalled()): that pool is ended, and this listener listens again on the new one.
      if (sql === this.sql && this.listeners.has(l)) l.listening = listening;
      else listening.unlisten().catch(() => undefined);
    } catch (err) {
      // The catch-up timer and the probe still bring changes in; the listener is retried by the driver.
      l.onError(err);
    }
  }

  listEnvironments(): Promise<EnvironmentInfo[]> {
    return this.read((tx) => listEnvironments(tx));
  }

  listKeys(envId: string): Promise<KeyInfo[]> {
    return this.read(async (tx) => {
      await this.requireEnv(new PgRows(tx), envId);
      return listKeys(tx, envId);
    });
  }

  listContent(envId: string): Promise<ContentSummary[]> {
    return this.read(async (tx) => {
      await this.requireEnv(new PgRows(tx), envId);
      return listContent(tx, envId);
    });
  }

  async recordKeyUse(keyIds: readonly string[], at: string): Promise<void> {
    if (keyIds.length === 0) return;
    // Not routing data: no write lock, one statement.
    await this.call(() =>
      this.sql.unsafe('UPDATE api_keys SET last_used_at = $1 WHERE key_id = ANY($2::text[]) AND (last_used_at IS NULL OR last_used_at < $1)', [
        at,
        keyIds as string[],
      ]),
    );
  }

  /**
   * `rcd migrate`: a bundle (every revision and mapping) and the API keys as digests (plain keys
   * are never stored, so a bundle cannot carry them), in one transaction, into an empty store.
   */
  importWithKeyDigests(bundle: unknown, keys: readonly KeyDigest[]): Promise<ImportReport> {
    return this.write(async (rows) => {
      const n = (await rows.tx.unsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM environments'))[0]?.n ?? 0;
      if (n > 0) throw new RcdError('conflict', `the target store already holds ${n} environment(s): rcd migrate copies into an empty store only`);
      const prepared = prepareImport(bundle);
      const report = await runRowsAsync(rows, writePlan(finishImport(prepared, () => undefined)));
      const at = nowIso();
      for (const k of keys) await rows.insertKey(k.keyId, k.envId, k.digest, at);
      return { ...report, keysAdded: keys.length, ...(await runRowsAsync(rows, importSchedules(prepared.schedules, STORE_IMPORT))) };
    });
  }

  claimOutbox(nowMs: number, leaseUntilMs: number, limit: number): Promise<OutboxEntry[]> {
    return this.call(() => outboxRows.claimOutbox(this.sql, nowMs, leaseUntilMs, limit), OnLost.Throw);
  }

  settleOutbox(id: string, outcome: OutboxOutcome): Promise<void> {
    return this.call(() => outboxRows.settleOutbox(this.sql, id, outcome, Date.now()), OnLost.Throw);
  }

  releaseOutbox(ids: readonly string[], atMs: number): Promise<void> {
    return this.call(() => outboxRows.releaseOutbox(this.sql, ids, atMs), OnLost.Throw);
  }

  listDeadLetters(limit: number): Promise<OutboxEntry[]> {
    return this.call(() => outboxRows.listDeadLetters(this.sql, limit));
  }

  outboxCounts(): Promise<{ pending: number; dead: number }> {
    return this.call(() => outboxRows.outboxCounts(this.sql));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.probe !== null) clearTimeout(this.probe);
    this.probe = null;
    this.wakers.clear();
    await this.snapshots?.end({ timeout: 1 });
    await this.canary?.end({ timeout: 1 });
    await this.sql.end({ timeout: 1 });
  }
}
