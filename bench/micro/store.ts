/**
 * Micro-benchmark: one read of the SQLite store in a transaction (src/store/sqlite/store.ts), the way
 * every store read and write runs (the control thread's heartbeat, the change feed's reads, the admin
 * API's writes):
 * - better-sqlite3's `db.transaction(fn)` called per transaction [before]: it builds a new wrapper
 *   and its deferred/immediate/exclusive variants with Object.defineProperties each time;
 * - one wrapper made with the store, running the function it is given [after].
 * Both run the same one-row SELECT on an in-memory database (driver.ts openWriter).
 *
 * Run: `node dist/bench/micro/store.js` (after `npm run build`); prints a table.
 */
import { pathToFileURL } from 'node:url';
import { openWriter } from '../../src/store/sqlite/driver.js';
import { formatTable, measure, type Row } from './measure.js';

export function runStoreTransactionMicro(minMs?: number): Row[] {
  const db = openWriter({ kind: 'memory', name: 'bench-micro-store' }, 1000);
  try {
    db.exec('CREATE TABLE IF NOT EXISTS t (a INTEGER); DELETE FROM t; INSERT INTO t VALUES (1)');
    const select = db.prepare<{ a: number }>('SELECT a FROM t');
    const read = (): number => select.get()?.a ?? 0;
    const once = db.transaction((fn: () => number) => fn());
    // Both must read the row; a benchmark of a read that finds nothing measures nothing.
    if (db.transaction(read)() !== 1 || once(read) !== 1) throw new Error('the benchmark row is missing');
    return [
      measure('store read in a transaction, db.transaction(fn)() per call [before]', () => db.transaction(read)(), minMs),
      measure('store read in a transaction, one wrapper made with the store [after]', () => once(read), minMs),
    ];
  } finally {
    db.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(formatTable('SQLite store transactions (bench/micro/store.ts)', runStoreTransactionMicro()) + '\n');
}
