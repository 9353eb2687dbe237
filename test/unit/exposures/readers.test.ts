/**
 * The readout's readers on real databases: a SQLite file (src/exposures/sqlite-reader.ts) and a
 * PostgreSQL database (src/exposures/postgres-reader.ts), each with rows inserted by SQL as the
 * writer stores them (src/exposures/schema.ts). Both create the tables when missing, read the hour
 * counts of one environment, one experiment or all, the players per variant summed over the hours,
 * and count the players who moved; a row written after the reader opened is read at once.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExposureTotals } from '../../../src/exposures/count-rows.js';
import type { ExposureReader, HourCount } from '../../../src/exposures/db.js';
import { PostgresExposureReader } from '../../../src/exposures/postgres-reader.js';
import { LazyExposureReader } from '../../../src/exposures/reader.js';
import { POSTGRES_SCHEMA, SQLITE_SCHEMA } from '../../../src/exposures/schema.js';
import { SqliteExposureReader } from '../../../src/exposures/sqlite-reader.js';
import { createDatabase } from '../../helpers/postgres.js';

const H = 3_600_000;
const T0 = Date.UTC(2026, 10, 29, 3, 0, 0);

/** [environment, experiment, variant, hour, players, first_ms, last_ms] */
type CountRow = [string, string, string, number, number, number, number];
/** [environment, experiment, player, variant, first_seen ms, moved_to] */
type ExposureRowValues = [string, string, string, string, number, string | null];

const COUNTS: CountRow[] = [
  ['live', 'Shop:price', 'A', T0, 3, T0 + 10, T0 + 900],
  ['live', 'Shop:price', 'B', T0, 2, T0 + 20, T0 + 800],
  ['live', 'Shop:price', 'A', T0 + H, 1, T0 + H + 5, T0 + H + 5],
  ['live', 'layout', 'X', T0, 4, T0 + 1, T0 + 2],
  ['dev', 'Shop:price', 'A', T0, 7, T0 + 3, T0 + 4],
];
const ROWS: ExposureRowValues[] = [
  ['live', 'Shop:price', 'p1', 'A', T0 + 10, 'B'],
  ['live', 'Shop:price', 'p2', 'A', T0 + 11, null],
  ['live', 'Shop:price', 'p3', 'A', T0 + 900, 'B'],
  ['live', 'Shop:price', 'p4', 'B', T0 + 20, 'A'],
  ['live', 'Shop:price', '', 'B', T0 + 800, null],
  ['live', 'layout', 'p1', 'X', T0 + 1, 'Y'],
  ['dev', 'Shop:price', 'p1', 'A', T0 + 3, 'B'],
];

/** Binary order of a row's key text (not the locale's). */
function byKey<T>(key: (row: T) => string): (a: T, b: T) => number {
  return (a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
}

function sorted(rows: HourCount[]): HourCount[] {
  return [...rows].sort(byKey((r) => `${r.environment} ${r.experiment} ${r.variant} ${r.hourMs}`));
}

function countOf(r: CountRow): HourCount {
  return { environment: r[0], experiment: r[1], variant: r[2], hourMs: r[3], players: r[4], firstMs: r[5], lastMs: r[6] };
}

/** The same assertions on either kind: `insert` adds one count row as the writer would. */
async function readsAsWritten(reader: ExposureReader & ExposureTotals, insert: (row: CountRow) => Promise<void>): Promise<void> {
  expect(sorted(await reader.hours('live'))).toEqual(sorted(COUNTS.filter((r) => r[0] === 'live').map(countOf)));
  expect(sorted(await reader.hours('live', 'Shop:price'))).toEqual(sorted(COUNTS.slice(0, 3).map(countOf)));
  expect(await reader.hours('live', 'nope')).toEqual([]);
  expect(sorted(await reader.hours(null))).toEqual(sorted(COUNTS.map(countOf)));
  const moved = (await reader.moved('live')).sort(byKey((m) => `${m.experiment} ${m.variant}`));
  expect(moved).toEqual([
    { environment: 'live', experiment: 'Shop:price', variant: 'A', players: 2 },
    { environment: 'live', experiment: 'Shop:price', variant: 'B', players: 1 },
    { environment: 'live', experiment: 'layout', variant: 'X', players: 1 },
  ]);
  expect(await reader.moved('live', 'layout')).toEqual([{ environment: 'live', experiment: 'layout', variant: 'X', players: 1 }]);
  expect((await reader.moved(null)).reduce((n, m) => n + m.players, 0)).toBe(5);
  // Each variant's players over its hours, summed by the database (what the metrics read).
  expect((await reader.totals()).sort(byKey((t) => `${t.environment} ${t.experiment} ${t.variant}`))).toEqual([
    { environment: 'dev', experiment: 'Shop:price', variant: 'A', players: 7 },
    { environment: 'live', experiment: 'Shop:price', variant: 'A', players: 4 },
    { environment: 'live', experiment: 'Shop:price', variant: 'B', players: 2 },
    { environment: 'live', experiment: 'layout', variant: 'X', players: 4 },
  ]);
  // Written after the reader opened: read at once.
  await insert(['live', 'late', 'A', T0 + 2 * H, 9, T0 + 2 * H, T0 + 2 * H + 1]);
  expect(await reader.hours('live', 'late')).toEqual([countOf(['live', 'late', 'A', T0 + 2 * H, 9, T0 + 2 * H, T0 + 2 * H + 1])]);
}

describe('SQLite exposure reader', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rcd-exposures-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates a missing file (and folder) with its tables, private to the server user, and reads nothing', async () => {
    const path = join(dir, 'new', 'exposures.db');
    const reader = new SqliteExposureReader(path);
    expect(await reader.hours('live')).toEqual([]);
    expect(await reader.moved(null)).toEqual([]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const db = new Database(path);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all()).toEqual([{ name: 'rcd_exposure_counts' }, { name: 'rcd_exposures' }]);
    db.close();
    await reader.close();
  });

  it('reads the rows a writer connection wrote, before and after it opened, and never writes them', async () => {
    const path = join(dir, 'exposures.db');
    const writer = new Database(path);
    writer.pragma('journal_mode = WAL');
    writer.exec(SQLITE_SCHEMA);
    const insertCount = writer.prepare('INSERT INTO rcd_exposure_counts (environment, experiment, variant, hour, players, first_ms, last_ms) VALUES (?, ?, ?, ?, ?, ?, ?)');
    for (const r of COUNTS) insertCount.run(...r);
    const insertRow = writer.prepare('INSERT INTO rcd_exposures (environment, experiment, player, variant, first_seen, app_version, dimensions, moved_to, moved_at) VALUES (?, ?, ?, ?, ?, NULL, \'{}\', ?, ?)');
    for (const [env, exp, player, variant, at, movedTo] of ROWS) insertRow.run(env, exp, player, variant, new Date(at).toISOString(), movedTo, movedTo === null ? null : new Date(at + 1000).toISOString());
    const reader = new LazyExposureReader({ url: `sqlite:${path}`, kind: 'sqlite' });
    try {
      await readsAsWritten(reader, (r) => {
        insertCount.run(...r);
        return Promise.resolve();
      });
      // The writer still takes its write lock while the reader is open: the reader holds none.
      writer.prepare('DELETE FROM rcd_exposure_counts WHERE experiment = ?').run('late');
      expect(await reader.hours('live', 'late')).toEqual([]);
    } finally {
      await reader.close();
      writer.close();
    }
    expect(existsSync(path)).toBe(true);
  });
});

describe('PostgreSQL exposure reader', () => {
  it('creates the tables when missing, reads the rows written by SQL', async () => {
    const db = await createDatabase();
    const reader = new PostgresExposureReader(db.url);
    const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
    try {
      // The first read creates the tables.
      expect(await reader.hours('live')).toEqual([]);
      const tables = await sql<{ table_name: string }[]>`SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'rcd_exposure%' ORDER BY table_name`;
      expect(tables.map((t) => t.table_name)).toEqual(['rcd_exposure_counts', 'rcd_exposures']);
      // Created again (by a writer, or another node's reader): nothing changes.
      await sql.unsafe(POSTGRES_SCHEMA);
      for (const r of COUNTS) {
        await sql`INSERT INTO rcd_exposure_counts (environment, experiment, variant, hour, players, first_ms, last_ms) VALUES (${r[0]}, ${r[1]}, ${r[2]}, ${r[3]}, ${r[4]}, ${r[5]}, ${r[6]})`;
      }
      for (const [env, exp, player, variant, at, movedTo] of ROWS) {
        await sql`INSERT INTO rcd_exposures (environment, experiment, player, variant, first_seen, moved_to, moved_at)
          VALUES (${env}, ${exp}, ${player}, ${variant}, ${new Date(at)}, ${movedTo}, ${movedTo === null ? null : new Date(at + 1000)})`;
      }
      await readsAsWritten(reader, async (r) => {
        await sql`INSERT INTO rcd_exposure_counts (environment, experiment, variant, hour, players, first_ms, last_ms) VALUES (${r[0]}, ${r[1]}, ${r[2]}, ${r[3]}, ${r[4]}, ${r[5]}, ${r[6]})`;
      });
    } finally {
      await reader.close();
      await sql.end();
      await db.drop();
    }
  });

  it('a database that cannot be reached fails the read, and the next read tries again', async () => {
    const reader = new PostgresExposureReader('postgres://nobody:x@127.0.0.1:1/none');
    try {
      await expect(reader.hours('live')).rejects.toThrow();
      await expect(reader.hours('live')).rejects.toThrow();
    } finally {
      await reader.close();
    }
  });
});
