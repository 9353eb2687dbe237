/**
 * Long reads of a SQLite file store (Store.snapshotStep: a preview's replay) on read-only
 * connections of their own: a read transaction there holds a WAL snapshot, which the store's writer
 * (and another process's) commits past without waiting, and the step is driven a slice at a time,
 * with a turn of the event loop between slices, so this process's writes, its applier and its
 * delivery go on meanwhile. A connection is opened on first use and kept for the next read; as many
 * are open as reads ran at once (the admin API bounds that: --preview-concurrency).
 */
import { RcdError } from '../../runtime/errors.js';
import { openReader, type Database } from './driver.js';
import { SqliteRows } from './rows.js';
import type { Rows, Step } from '../ops/rows.js';
import { answerNow, failure, isParallel, resume, START } from '../ops/drive.js';

/** How long a slice runs before the event loop gets a turn (ms). */
export const SNAPSHOT_SLICE_MS = 8;

interface Reader {
  readonly db: Database;
  readonly rows: SqliteRows;
}

export class SnapshotReaders {
  private readonly idle: Reader[] = [];
  private closed = false;

  constructor(
    private readonly path: string,
    private readonly busyTimeoutMs: number,
  ) {}

  async run<T>(step: Step<T>): Promise<T> {
    if (this.closed) throw new RcdError('internal', 'the store is closed');
    const reader = this.idle.pop() ?? this.open();
    try {
      reader.db.exec('BEGIN');
    } catch (err) {
      reader.db.close();
      throw err;
    }
    try {
      return await runSliced(reader.rows, step);
    } finally {
      reader.db.exec('ROLLBACK');
      if (this.closed) reader.db.close();
      else this.idle.push(reader);
    }
  }

  close(): void {
    this.closed = true;
    for (const r of this.idle.splice(0)) r.db.close();
  }

  private open(): Reader {
    const db = openReader({ kind: 'file', path: this.path }, this.busyTimeoutMs);
    return { db, rows: new SqliteRows(db) };
  }
}

/** Runs a step's row calls, giving the event loop a turn whenever a slice has run SNAPSHOT_SLICE_MS. */
async function runSliced<T>(rows: Rows, step: Step<T>): Promise<T> {
  let last = START;
  let sliceStart = performance.now();
  for (;;) {
    const next = resume(step, last);
    if (next.done === true) return next.value;
    last = isParallel(next.value) ? failure(new RcdError('internal', 'a snapshot read runs no parallel steps')) : answerNow(rows, next.value);
    if (performance.now() - sliceStart >= SNAPSHOT_SLICE_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
  }
}
