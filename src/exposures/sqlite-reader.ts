/**
 * The readout's reader of a SQLite exposure file (`--exposures sqlite:PATH`): the per-hour counts
 * and the moved players, for the control thread's admin API and the metrics thread. The writer
 * thread may not have created the file yet: the first read creates it with its tables (WAL, as the
 * writer opens it; CREATE IF NOT EXISTS, so either side may come first), then reads through a
 * read-only connection of its own, which never takes the writer's lock.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { makeDirectories } from '../runtime/directories.js';
import { settle } from '../shared/settle.js';
import { makeStoreFilesPrivate, type Database, type Statement } from '../store/sqlite/driver.js';
import { HOUR_COLUMNS, hourCount, TOTALS_SQL, type ExposureTotals, type HourRow, type VariantPlayers } from './count-rows.js';
import type { ExposureReader, HourCount, MovedCount } from './db.js';
import { SQLITE_SCHEMA } from './schema.js';

interface DatabaseConstructor {
  new (filename: string, options?: { readonly?: boolean; fileMustExist?: boolean }): Database;
}
const require = createRequire(import.meta.url);
const BetterSqlite3 = require('better-sqlite3') as DatabaseConstructor;

/** How long a read waits for the writer's checkpoint or the tables' creation by another connection. */
const BUSY_TIMEOUT_MS = 5000;

const MOVED = 'SELECT environment, experiment, variant, count(*) AS players FROM rcd_exposures';
const MOVED_GROUP = 'GROUP BY environment, experiment, variant';

interface Statements {
  readonly allHours: Statement<HourRow>;
  readonly envHours: Statement<HourRow>;
  readonly experimentHours: Statement<HourRow>;
  readonly allMoved: Statement<MovedCount>;
  readonly envMoved: Statement<MovedCount>;
  readonly experimentMoved: Statement<MovedCount>;
  readonly totals: Statement<VariantPlayers>;
}

/** The path of a `sqlite:PATH` exposure URL. */
export function sqliteExposurePath(url: string): string {
  return url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : url;
}

export class SqliteExposureReader implements ExposureReader, ExposureTotals {
  private db: Database | null = null;
  private statements: Statements | null = null;

  constructor(private readonly path: string) {}

  private open(): Statements {
    if (this.statements !== null) return this.statements;
    // The creating connection stays open until the reading one is: a WAL file whose last connection
    // closes loses its -wal and -shm files, which a read-only connection cannot create again.
    const creator = createTables(this.path);
    try {
      const db = new BetterSqlite3(this.path, { readonly: true, fileMustExist: true });
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      this.statements = {
        allHours: db.prepare(`SELECT ${HOUR_COLUMNS} FROM rcd_exposure_counts`),
        envHours: db.prepare(`SELECT ${HOUR_COLUMNS} FROM rcd_exposure_counts WHERE environment = ?`),
        experimentHours: db.prepare(`SELECT ${HOUR_COLUMNS} FROM rcd_exposure_counts WHERE environment = ? AND experiment = ?`),
        allMoved: db.prepare(`${MOVED} WHERE moved_to IS NOT NULL ${MOVED_GROUP}`),
        envMoved: db.prepare(`${MOVED} WHERE environment = ? AND moved_to IS NOT NULL ${MOVED_GROUP}`),
        experimentMoved: db.prepare(`${MOVED} WHERE environment = ? AND experiment = ? AND moved_to IS NOT NULL ${MOVED_GROUP}`),
        totals: db.prepare(TOTALS_SQL),
      };
      this.db = db;
    } finally {
      creator.close();
    }
    return this.statements;
  }

  hours(environment: string | null, experiment?: string): Promise<HourCount[]> {
    return settle(() => {
      const s = this.open();
      const rows = environment === null ? s.allHours.all() : experiment === undefined ? s.envHours.all(environment) : s.experimentHours.all(environment, experiment);
      return rows.map(hourCount);
    });
  }

  moved(environment: string | null, experiment?: string): Promise<MovedCount[]> {
    return settle(() => {
      const s = this.open();
      return environment === null ? s.allMoved.all() : experiment === undefined ? s.envMoved.all(environment) : s.experimentMoved.all(environment, experiment);
    });
  }

  totals(): Promise<VariantPlayers[]> {
    return settle(() => this.open().totals.all());
  }

  close(): Promise<void> {
    this.db?.close();
    this.db = null;
    this.statements = null;
    return Promise.resolve();
  }
}

/** Creates the file and its tables when missing, in WAL mode as the writer keeps it; returns the connection. */
function createTables(path: string): Database {
  makeDirectories(dirname(path), 0o700);
  // Player ids are personal data: the file and its -wal and -shm are the server user's only.
  makeStoreFilesPrivate(path);
  const db = new BetterSqlite3(path);
  try {
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('journal_mode = WAL');
    db.exec(SQLITE_SCHEMA);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}
