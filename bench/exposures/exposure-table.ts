/**
 * The assignment table as the benchmark reads it, from outside the server: rows per experiment and
 * variant, the per-hour counts' sums, moved players, and which of a few players have their rows yet
 * (the writer-lag probe). One interface over SQLite (the file `--exposures sqlite:PATH` names,
 * opened read-only beside the writer) and PostgreSQL (the `--exposures postgres://...` database).
 */
import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { LAUNCH_ENV, LAUNCH_EXPERIMENTS, type Split } from './launch-fixture.js';

export interface ExposureTable {
  /** Rows of rcd_exposures in the launch environment, by experiment and variant. */
  rows(): Promise<Split>;
  /** The same from rcd_exposure_counts (players summed over the hours): what the readout reports. */
  counted(): Promise<Split>;
  /** Rows in the launch environment whose player moved to another variant. */
  moved(): Promise<number>;
  /** Of `players`, how many launch-experiment rows each has (players without rows are left out). */
  found(players: readonly string[]): Promise<Map<string, number>>;
  close(): Promise<void>;
}

const EXPERIMENTS = LAUNCH_EXPERIMENTS.map((e) => e.name);

function toSplit(list: readonly { experiment: string; variant: string; n: number | string | bigint }[]): Split {
  const split: Split = new Map();
  for (const r of list) {
    let variants = split.get(r.experiment);
    if (variants === undefined) split.set(r.experiment, (variants = new Map<string, number>()));
    variants.set(r.variant, Number(r.n));
  }
  return split;
}

/** Opens the table named by a server's `--exposures` value (sqlite:PATH or a PostgreSQL URL). */
export function openExposureTable(exposures: string): ExposureTable {
  return exposures.startsWith('sqlite:') ? sqliteTable(exposures.slice('sqlite:'.length)) : postgresTable(exposures);
}

function sqliteTable(path: string): ExposureTable {
  let db: Database.Database | null = null;
  // The writer creates the file; until it has, every question answers "nothing yet".
  const open = (): Database.Database | null => {
    if (db === null && existsSync(path)) {
      db = new Database(path, { readonly: true, fileMustExist: true });
      db.pragma('busy_timeout = 5000');
    }
    return db;
  };
  let ready = false;
  const hasTables = (d: Database.Database): boolean =>
    (ready ||= (d.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name IN ('rcd_exposures', 'rcd_exposure_counts')").get() as { n: number }).n === 2);
  const all = <T>(sql: string, ...params: unknown[]): T[] => {
    const d = open();
    if (d === null || !hasTables(d)) return [];
    return d.prepare(sql).all(...params) as T[];
  };
  return {
    rows: () =>
      Promise.resolve(toSplit(all('SELECT experiment, variant, count(*) AS n FROM rcd_exposures WHERE environment = ? GROUP BY experiment, variant', LAUNCH_ENV))),
    counted: () =>
      Promise.resolve(toSplit(all('SELECT experiment, variant, sum(players) AS n FROM rcd_exposure_counts WHERE environment = ? GROUP BY experiment, variant', LAUNCH_ENV))),
    moved: () => Promise.resolve(all<{ n: number }>('SELECT count(*) AS n FROM rcd_exposures WHERE environment = ? AND moved_to IS NOT NULL', LAUNCH_ENV)[0]?.n ?? 0),
    found(players) {
      if (players.length === 0) return Promise.resolve(new Map());
      const list = all<{ player: string; n: number }>(
        `SELECT player, count(*) AS n FROM rcd_exposures WHERE environment = ? AND experiment IN (${EXPERIMENTS.map(() => '?').join(',')}) AND player IN (${players.map(() => '?').join(',')}) GROUP BY player`,
        LAUNCH_ENV,
        ...EXPERIMENTS,
        ...players,
      );
      return Promise.resolve(new Map(list.map((r) => [r.player, r.n])));
    },
    close() {
      db?.close();
      db = null;
      return Promise.resolve();
    },
  };
}

function postgresTable(url: string): ExposureTable {
  const sql = postgres(url, { max: 1, onnotice: () => undefined, connect_timeout: 5 });
  const missing = (err: unknown): boolean => (err as { code?: string }).code === '42P01';
  // Until the writer created the tables, every question answers "nothing yet".
  const query = async <T>(text: string, params: unknown[]): Promise<T[]> => {
    try {
      return (await sql.unsafe(text, params as never[])) as unknown as T[];
    } catch (err) {
      if (missing(err)) return [];
      throw err;
    }
  };
  return {
    rows: async () =>
      toSplit(await query('SELECT experiment, variant, count(*) AS n FROM rcd_exposures WHERE environment = $1 GROUP BY experiment, variant', [LAUNCH_ENV])),
    counted: async () =>
      toSplit(await query('SELECT experiment, variant, sum(players) AS n FROM rcd_exposure_counts WHERE environment = $1 GROUP BY experiment, variant', [LAUNCH_ENV])),
    moved: async () => Number((await query<{ n: string }>('SELECT count(*) AS n FROM rcd_exposures WHERE environment = $1 AND moved_to IS NOT NULL', [LAUNCH_ENV]))[0]?.n ?? 0),
    async found(players) {
      if (players.length === 0) return new Map();
      const at = (i: number): string => `$${i}`;
      const list = await query<{ player: string; n: string }>(
        `SELECT player, count(*) AS n FROM rcd_exposures WHERE environment = $1 AND experiment IN (${EXPERIMENTS.map((_, i) => at(i + 2)).join(',')}) ` +
          `AND player IN (${players.map((_, i) => at(i + 2 + EXPERIMENTS.length)).join(',')}) GROUP BY player`,
        [LAUNCH_ENV, ...EXPERIMENTS, ...players],
      );
      return new Map(list.map((r) => [r.player, Number(r.n)]));
    },
    close: () => sql.end({ timeout: 5 }),
  };
}

/** The total of a split (rows over every experiment and variant). */
export function splitTotal(split: Split): number {
  let n = 0;
  for (const variants of split.values()) for (const v of variants.values()) n += v;
  return n;
}

/**
 * Waits for the writer to catch up after the load: polls the per-hour counts until they add up to
 * `want` rows, or have not moved for `stableMs`, or `timeoutMs` passed. Returns the last total and
 * how long it waited.
 */
export async function settle(table: ExposureTable, want: number, stableMs: number, timeoutMs: number): Promise<{ total: number; waitedMs: number }> {
  const t0 = performance.now();
  let total = -1;
  let movedAt = t0;
  for (;;) {
    const now = splitTotal(await table.counted());
    const at = performance.now();
    if (now !== total) {
      total = now;
      movedAt = at;
    }
    if (total >= want || at - movedAt >= stableMs || at - t0 >= timeoutMs) return { total, waitedMs: at - t0 };
    await new Promise((r) => setTimeout(r, 50));
  }
}
