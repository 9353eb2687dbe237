/**
 * The spike's floor on SQLite: what SQLite itself spends on the rows a launch spike writes, with no
 * rcd around it. A fresh exposure file opened as the writer opens it (src/exposures/sqlite.ts
 * openExposureFile), then the launch's three experiments for `players` new players, in transactions
 * of the writer's size (WRITE_ROWS), each one INSERT OR IGNORE ... SELECT whose rows a recursive CTE
 * makes inside SQLite, in key order: no JavaScript and no statement per row. The process's CPU a row
 * is the least any writer of this table pays on this machine; times the rows a spike request queues,
 * over an exposures-off request's CPU, it is the least the spike's on/off CPU ratio can be.
 */
import { openExposureFile } from '../../src/exposures/sqlite.js';
import { WRITE_ROWS } from '../../src/exposures/db.js';
import { LAUNCH_ENV, LAUNCH_EXPERIMENTS } from './launch-fixture.js';

export interface SqliteFloor {
  readonly rows: number;
  /** SQLite's CPU per row written, µs. */
  readonly usPerRow: number;
}

/**
 * Rows for players [@from, @to): every experiment of the launch for each, the variant alternating, the
 * app version of a launch body and no dimensions (the benchmark's servers name none), first seen at
 * @firstSeen.
 */
function insertSql(): string {
  const experiments = LAUNCH_EXPERIMENTS.map((e, k) => `SELECT ${k} AS k, '${e.name}' AS name`).join(' UNION ALL ');
  return `WITH RECURSIVE n(i) AS (SELECT @from UNION ALL SELECT i + 1 FROM n WHERE i + 1 < @to)
    INSERT OR IGNORE INTO rcd_exposures (environment, experiment, player, variant, first_seen, app_version, dimensions)
    SELECT '${LAUNCH_ENV}', e.name, 'floor-' || n.i, CASE (n.i + e.k) % 2 WHEN 0 THEN 'A' ELSE 'B' END, @firstSeen, '2.0.0', '{}'
      FROM (${experiments}) AS e, n
     ORDER BY 1, 2, 3`;
}

/** Writes the rows of `players` new players into a fresh file at `path` and measures SQLite's CPU a row. */
export function measureSqliteFloor(path: string, players: number): SqliteFloor {
  const db = openExposureFile(path);
  try {
    const insert = db.prepare(insertSql());
    const perTransaction = Math.max(1, Math.floor(WRITE_ROWS / LAUNCH_EXPERIMENTS.length));
    const firstSeen = new Date().toISOString();
    let rows = 0;
    // The benchmark's process does nothing else meanwhile: its CPU is SQLite's.
    const before = process.cpuUsage();
    for (let from = 0; from < players; from += perTransaction) {
      const to = Math.min(players, from + perTransaction);
      db.exec('BEGIN IMMEDIATE');
      rows += insert.run({ from, to, firstSeen }).changes;
      db.exec('COMMIT');
    }
    const spent = process.cpuUsage(before);
    const micros = spent.user + spent.system;
    return { rows, usPerRow: rows === 0 ? 0 : micros / rows };
  } finally {
    db.close();
  }
}
