/**
 * The exposure writer on a SQLite file of its own (--exposures sqlite:PATH), never the config
 * store's: WAL, so the readout's readers never wait for the writer, and synchronous=NORMAL (a
 * transaction survives a crash of the process; a power loss may take the last ones back).
 * better-sqlite3 is synchronous: each write is one transaction run to its end on the writer thread.
 */
import { openWriter, type Database, type Statement, type TransactionFunction } from '../store/sqlite/driver.js';
import { countsOf, isoOf, planBatch } from './batch-plan.js';
import { SQLITE_SCHEMA } from './schema.js';
import type { ExposureRow, ExposureWriter, WriteOutcome } from './db.js';

/** How long a write waits for a lock another connection holds (a reader's checkpoint, a copy in progress). */
const BUSY_TIMEOUT_MS = 5000;

/** Opens (creating it and its tables if missing) the exposure file; throws when it cannot be opened. */
export function openSqliteExposureWriter(path: string): ExposureWriter {
  return new SqliteExposureWriter(openExposureFile(path));
}

/**
 * The exposure file as the writer opens it: WAL, synchronous=NORMAL, the tables created if missing.
 * bench:exposures opens its spike floor's file with it too (bench/exposures/sqlite-floor.ts).
 */
export function openExposureFile(path: string): Database {
  const db = openWriter({ kind: 'file', path }, BUSY_TIMEOUT_MS);
  try {
    db.pragma('synchronous = NORMAL');
    db.exec(SQLITE_SCHEMA);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** SQLite stores any text it is given: a failure is never about the rows themselves (postgres.ts has one that is). */
export function sqliteRefusesRows(): boolean {
  return false;
}

/** The failure as one line for the writer's log. */
export function describeSqliteFailure(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return typeof e?.code === 'string' && !message.includes(e.code) ? `${e.code}: ${message}` : message;
}

class SqliteExposureWriter implements ExposureWriter {
  private readonly insert: Statement<unknown>;
  private readonly move: Statement<unknown>;
  private readonly count: Statement<unknown>;
  private readonly transaction: TransactionFunction<WriteOutcome, [readonly ExposureRow[]]>;

  constructor(private readonly db: Database) {
    this.insert = db.prepare(
      `INSERT OR IGNORE INTO rcd_exposures (environment, experiment, player, variant, first_seen, app_version, dimensions)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
    this.move = db.prepare(
      `UPDATE rcd_exposures SET moved_to = ?, moved_at = ?
        WHERE environment = ? AND experiment = ? AND player = ? AND variant <> ? AND moved_to IS NOT ?`,
    );
    this.count = db.prepare(
      `INSERT INTO rcd_exposure_counts (environment, experiment, variant, hour, players, first_ms, last_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (environment, experiment, variant, hour) DO UPDATE SET
         players = players + excluded.players,
         first_ms = min(first_ms, excluded.first_ms),
         last_ms = max(last_ms, excluded.last_ms)`,
    );
    this.transaction = db.transaction((rows: readonly ExposureRow[]) => this.writeRows(rows));
  }

  write(rows: readonly ExposureRow[]): Promise<WriteOutcome> {
    if (rows.length === 0) return Promise.resolve({ inserted: 0, moved: 0 });
    // BEGIN IMMEDIATE: the write lock is taken (or waited for, up to the busy timeout) at the start,
    // never midway. A failure rejects the promise (thrown inside its executor).
    return new Promise((resolve) => resolve(this.transaction.immediate(rows)));
  }

  close(): Promise<void> {
    if (this.db.open) this.db.close();
    return Promise.resolve();
  }

  /** Inside the transaction: inserts, moves in their rounds, then the counts of what was inserted. */
  private writeRows(rows: readonly ExposureRow[]): WriteOutcome {
    const plan = planBatch(rows);
    const inserted: ExposureRow[] = [];
    let moved = 0;
    for (const row of plan.firsts) {
      const result = this.insert.run(row.environment, row.experiment, row.player, row.variant, isoOf(row.atMs), row.appVersion, row.dimensions);
      if (result.changes === 1) inserted.push(row);
      else moved += this.moveRow(row);
    }
    for (const round of plan.changes) for (const row of round) moved += this.moveRow(row);
    for (const c of countsOf(inserted)) this.count.run(c.environment, c.experiment, c.variant, c.hourMs, c.players, c.firstMs, c.lastMs);
    return { inserted: inserted.length, moved };
  }

  private moveRow(row: ExposureRow): number {
    return this.move.run(row.variant, isoOf(row.atMs), row.environment, row.experiment, row.player, row.variant, row.variant).changes;
  }
}
