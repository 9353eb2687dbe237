/**
 * The embedded Store: SQLite through better-sqlite3 (a file, or an in-memory database shared with
 * worker threads for `memory:`).
 *
 * better-sqlite3 is synchronous; the methods return promises only to satisfy the Store interface,
 * which the PostgreSQL store shares. Every write runs in one IMMEDIATE transaction that validates
 * first and writes after, so a refused write (or a crash) leaves the previous state whole, and a
 * second process writing the same file waits (busy_timeout) instead of interleaving.
 */
import { RcdError } from '../../runtime/errors.js';
import { settle } from '../../shared/settle.js';
import type { Database, Statement, TransactionFunction } from './driver.js';
import { RoutingQueries } from './routing.js';
import { listContent, listEnvironments, listKeys } from './listings.js';
import { SqliteRows } from './rows.js';
import type { Step } from '../ops/rows.js';
import { runRows } from '../ops/drive.js';
import { StepStore } from '../step-store.js';
import { StoreFiles } from './files.js';
import { SnapshotReaders } from './snapshots.js';
import { watchWal } from './wal-watch.js';
import { migrate } from './schema.js';
import { anyDue, claimOutbox, insertOutbox, listDeadLetters, outboxCounts, releaseOutbox, settleOutbox } from './outbox.js';
import { guardedView, LIVE_TOKEN_SQL, requireLiveToken, WRITE_GUARD, type WriteGuard } from '../write-guard.js';
import type { ChangeBatch, ChangeEntry, CommitWatch, ContentSummary, DirectorySnapshot, EnvironmentInfo, KeyInfo, NodeRecord, OutboxEntry, OutboxOf, OutboxOutcome, RoutingDelta, Store } from '../types.js';

/**
 * How often data_version is read where the store's WAL cannot be watched (an in-memory store, a file
 * system without change notifications): the bound on how late another process's commit is noticed.
 */
export const COMMIT_POLL_MS = 25;
/**
 * How often it is read besides the WAL watch (wal-watch.ts), which reports a commit at once: only the
 * bound for an event the watch missed, so it is slow enough that the control thread's wake-ups for it
 * cost next to nothing.
 */
export const COMMIT_POLL_WATCHED_MS = 250;

export class SqliteStore extends StepStore implements Store {
  readonly readerUrl: string;
  private readonly db: Database;
  private readonly sql: SqliteRows;
  private closed = false;
  private routingQueries: RoutingQueries | undefined;
  private readonly files: StoreFiles | null;
  /** A file store's long reads (snapshots.ts); null in memory, where they run as readStep does. */
  private readonly snapshots: SnapshotReaders | null;
  private readonly path: string | null;
  /** The switch to synchronous NORMAL, and back to the connection's own level (driver.ts: FULL for a file). */
  private readonly relaxSync: Statement<never>;
  private readonly restoreSync: Statement<never>;
  /**
   * The transaction every read and write runs in, made once, running the function it is given:
   * better-sqlite3's transaction() builds a new wrapper and its variants on each call.
   */
  private readonly inTransaction: TransactionFunction<unknown, [() => unknown]>;
  /** Null here; a guarded view's (guarded()) admin token, checked by every write of the view. */
  readonly [WRITE_GUARD]: WriteGuard | null = null;
  /** The guard's token read, prepared on the first guarded write (the admin state creates its table). */
  private liveToken: Statement<{ revoked_at: string | null }> | undefined;

  /** @param path the database file (null for an in-memory store): its files are watched for deletion. */
  constructor(db: Database, readerUrl: string, path: string | null = null) {
    super();
    migrate(db);
    this.db = db;
    this.sql = new SqliteRows(db);
    this.readerUrl = readerUrl;
    this.path = path;
    // After migrate: the WAL connection has created its -wal and -shm files by now.
    this.files = path === null ? null : new StoreFiles([path, `${path}-wal`, `${path}-shm`]);
    // An in-memory database is not in WAL mode: a read held across turns of the event loop would hold its writer up.
    this.snapshots = path === null ? null : new SnapshotReaders(path, Number(db.pragma('busy_timeout', { simple: true })));
    this.relaxSync = db.prepare('PRAGMA synchronous = NORMAL');
    this.restoreSync = db.prepare(`PRAGMA synchronous = ${Number(db.pragma('synchronous', { simple: true }))}`);
    this.inTransaction = db.transaction((fn: () => unknown) => fn());
  }

  /**
   * A write a power cut may lose without harm (a node's heartbeat: the next one, or a restart,
   * records it again), committed without waiting for the disk: in WAL mode NORMAL appends to the log
   * without an fsync, and the next FULL commit's fsync covers it. Every node writes one per change
   * applied, so an fsync each would add to every propagation's time.
   */
  private writeVolatile<T>(fn: () => T): T {
    this.relaxSync.run();
    try {
      return this.write(fn);
    } finally {
      this.restoreSync.run();
    }
  }

  /** One IMMEDIATE transaction: `fn`, then the outbox entries it reports (types.ts, OutboxOf). */
  private write<T>(fn: () => T, outbox?: OutboxOf<T>): T {
    if (this.closed) throw new RcdError('internal', 'the store is closed');
    this.requireOwnFiles();
    let result: T;
    const guard = this[WRITE_GUARD];
    const checked = guard === null ? fn : (): T => {
      // The admin state's table, in this database file: the transaction holds the write lock a revocation needs.
      requireLiveToken((this.liveToken ??= this.db.prepare(LIVE_TOKEN_SQL + '?')).get(guard.tokenId));
      return fn();
    };
    const body = outbox === undefined ? checked : (): T => {
      const r = checked();
      const after = outbox.contents === undefined ? [] : this.routing().delta(outbox.contents, 0, 0).contents;
      const now = Date.now();
      insertOutbox(this.db, outbox.build(r, after), now, now + outbox.holdMs);
      return r;
    };
    try {
      result = this.inTransaction.immediate(body) as T;
    } catch (err) {
      throw sqliteFailure(err);
    }
    // Checked again after the commit: a file deleted meanwhile took the commit with it, and a
    // write that is not durable must not be acknowledged.
    this.requireOwnFiles();
    return result;
  }

  private read<T>(fn: () => T): T {
    if (this.closed) throw new RcdError('internal', 'the store is closed');
    // A deferred transaction gives the several SELECTs of one answer a consistent snapshot.
    try {
      return this.inTransaction(fn) as T;
    } catch (err) {
      throw sqliteFailure(err);
    }
  }

  writeStep<T>(step: () => Step<T>, outbox?: OutboxOf<T>): Promise<T> {
    return settle(() => this.write(() => runRows(this.sql, step()), outbox));
  }

  writeStepOnEach(step: () => Step<void>): Promise<void> {
    return this.writeStep(step);
  }

  leaseStep<T>(step: () => Step<T>): Promise<T> {
    return settle(() => this.writeVolatile(() => runRows(this.sql, step())));
  }

  readStep<T>(step: () => Step<T>): Promise<T> {
    return settle(() => this.read(() => runRows(this.sql, step())));
  }

  guarded(guard: WriteGuard): Store {
    return guardedView(this, guard);
  }

  async snapshotStep<T>(step: () => Step<T>): Promise<T> {
    if (this.snapshots === null) return this.readStep(step);
    try {
      return await this.snapshots.run(step());
    } catch (err) {
      throw sqliteFailure(err);
    }
  }

  private requireOwnFiles(): void {
    const problem = this.files?.problem() ?? null;
    if (problem !== null) throw unavailable(problem);
  }

  unavailableReason(): string | null {
    return this.files?.problem() ?? null;
  }

  private requireEnv(envId: string): void {
    if (this.sql.getEnv(envId) === undefined) throw new RcdError('not_found', `environment ${JSON.stringify(envId)} does not exist`);
  }

  loadDirectory(): Promise<DirectorySnapshot> {
    return settle(() => {
      return this.read(() => this.routing().snapshot());
    });
  }

  changesSince(afterSeq: number, limit: number): Promise<ChangeBatch> {
    return settle(() => {
      return this.read(() => this.routing().changesSince(afterSeq, limit));
    });
  }

  loadDelta(entries: readonly ChangeEntry[], fromSeq: number, toSeq: number): Promise<RoutingDelta> {
    return settle(() => {
      return this.read(() => this.routing().delta(entries, fromSeq, toSeq));
    });
  }

  pruneChanges(keep: number): Promise<number> {
    return settle(() => {
      return this.write(() => this.routing().pruneChanges(keep));
    });
  }

  registerNode(node: NodeRecord): Promise<void> {
    return settle(() => {
      this.write(() => this.routing().registerNode(node));
    });
  }

  heartbeat(nodeId: string, appliedSeq: number, atMs: number): Promise<void> {
    return settle(() => {
      this.writeVolatile(() => this.routing().heartbeat(nodeId, appliedSeq, atMs));
    });
  }

  listNodes(): Promise<NodeRecord[]> {
    return settle(() => {
      return this.read(() => this.routing().listNodes());
    });
  }

  removeNode(nodeId: string): Promise<void> {
    return settle(() => {
      this.write(() => this.routing().removeNode(nodeId));
    });
  }

  /**
   * Reads SQLite's data_version (it changes when another connection commits) whenever the store's
   * WAL is written (src/store/sqlite/wal-watch.ts: at once, where the platform reports file changes)
   * and every COMMIT_POLL_WATCHED_MS in any case, or every COMMIT_POLL_MS where there is no watch
   * (or once it failed); wakes the caller when it moved.
   */
  watchCommits(wake: () => void, onError: (err: unknown) => void): Promise<CommitWatch> {
    return settle(() => {
      if (this.closed) throw new RcdError('internal', 'the store is closed');
      let version = this.routing().dataVersion();
      const check = (): void => {
        if (this.closed) return;
        try {
          const now = this.routing().dataVersion();
          if (now === version) return;
          version = now;
        } catch (err) {
          onError(err);
          return;
        }
        wake();
      };
      let timer: NodeJS.Timeout | null = null;
      let stopped = false;
      const poll = (everyMs: number): void => {
        if (stopped) return;
        if (timer !== null) clearInterval(timer);
        timer = setInterval(check, everyMs);
        timer.unref();
      };
      const wal = this.path === null ? null : watchWal(this.path, check, () => poll(COMMIT_POLL_MS));
      poll(wal === null ? COMMIT_POLL_MS : COMMIT_POLL_WATCHED_MS);
      return {
        stop: () => {
          stopped = true;
          if (timer !== null) clearInterval(timer);
          wal?.close();
        },
      };
    });
  }

  readMappings(mappingIds: readonly number[]): Promise<Map<number, string>> {
    return settle(() =>
      this.read(() => {
        const stmt = this.db.prepare<{ json: string }>('SELECT json FROM mappings WHERE mapping_id = ?');
        const out = new Map<number, string>();
        for (const id of mappingIds) {
          const row = stmt.get(id);
          if (row !== undefined) out.set(id, row.json);
        }
        return out;
      }),
    );
  }

  /** Prepared on first use: the admin CLI's stores never read routing data. */
  private routing(): RoutingQueries {
    return (this.routingQueries ??= new RoutingQueries(this.db));
  }

  listEnvironments(): Promise<EnvironmentInfo[]> {
    return settle(() => this.read(() => listEnvironments(this.db)));
  }

  listKeys(envId: string): Promise<KeyInfo[]> {
    return settle(() =>
      this.read(() => {
        this.requireEnv(envId);
        return listKeys(this.db, envId);
      }),
    );
  }

  listContent(envId: string): Promise<ContentSummary[]> {
    return settle(() =>
      this.read(() => {
        this.requireEnv(envId);
        return listContent(this.db, envId);
      }),
    );
  }

  recordKeyUse(keyIds: readonly string[], at: string): Promise<void> {
    return settle(() => {
      if (keyIds.length === 0) return;
      this.write(() => {
        const stmt = this.db.prepare(
          'UPDATE api_keys SET last_used_at = ? WHERE key_id = ? AND (last_used_at IS NULL OR last_used_at < ?)',
        );
        for (const id of keyIds) stmt.run(at, id, at);
      });
    });
  }

  claimOutbox(nowMs: number, leaseUntilMs: number, limit: number): Promise<OutboxEntry[]> {
    // Polled every second or so: a read finds most polls empty without taking the write lock.
    return settle(() => (this.read(() => anyDue(this.db, nowMs)) ? this.write(() => claimOutbox(this.db, nowMs, leaseUntilMs, limit)) : []));
  }

  settleOutbox(id: string, outcome: OutboxOutcome): Promise<void> {
    return settle(() => this.write(() => settleOutbox(this.db, id, outcome, Date.now())));
  }

  releaseOutbox(ids: readonly string[], atMs: number): Promise<void> {
    return settle(() => {
      if (ids.length > 0) this.write(() => releaseOutbox(this.db, ids, atMs));
    });
  }

  listDeadLetters(limit: number): Promise<OutboxEntry[]> {
    return settle(() => this.read(() => listDeadLetters(this.db, limit)));
  }

  outboxCounts(): Promise<{ pending: number; dead: number }> {
    return settle(() => this.read(() => outboxCounts(this.db)));
  }

  close(): Promise<void> {
    return settle(() => {
      if (this.closed) return;
      this.closed = true;
      this.snapshots?.close();
      this.db.close();
    });
  }
}

function unavailable(problem: string): RcdError {
  return new RcdError('store_unavailable', `the store is unavailable (${problem}); writes are refused until the server is restarted on an intact store`);
}

/**
 * SQLITE_BUSY: another connection held the lock past the busy timeout; the caller may retry.
 * SQLITE_READONLY_DBMOVED: SQLite noticed the file was moved or deleted. Anything else is a bug or
 * damage and stays as it is (logged, answered 500).
 */
function sqliteFailure(err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return err;
  if (code.startsWith('SQLITE_BUSY')) return new RcdError('store_busy', 'the store is locked by another connection; retry shortly');
  if (code === 'SQLITE_READONLY_DBMOVED') return unavailable('the database file was moved or deleted');
  return err;
}

