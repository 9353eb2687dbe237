/**
 * One write of exposure rows, planned the same way for both kinds of database (sqlite.ts,
 * postgres.ts): the rows in key order, each key's first row to insert, its later changes of variant
 * as moves, and the per-hour counts of what was inserted.
 *
 * The result is what writing the rows one at a time in arrival order would leave: a key's first row
 * is inserted unless the table holds the key already (the first exposure wins); every later row
 * whose variant differs from that key's previous row is offered as a move, which the database
 * applies only where the recorded variant differs and `moved_to` is not that variant already.
 * Repeats of a key with the same variant as its previous row are dropped here.
 */
import { hourOf } from './schema.js';
import type { ExposureRow, HourCount } from './db.js';

export interface BatchPlan {
  /** The first row of each key, in key order. */
  readonly firsts: readonly ExposureRow[];
  /**
   * Moves offered after the inserts, in rounds applied one after the other: round 0 holds the first
   * row of every key the insert did not take (the caller adds them: only it knows which), round i
   * (i >= 1, index i - 1 here) each key's i-th change of variant within the batch, in key order.
   */
  readonly changes: readonly (readonly ExposureRow[])[];
}

/** Orders rows by (environment, experiment, player): the lock order every node of a fleet takes. */
export function compareKeys(a: ExposureRow, b: ExposureRow): number {
  if (a.environment !== b.environment) return a.environment < b.environment ? -1 : 1;
  if (a.experiment !== b.experiment) return a.experiment < b.experiment ? -1 : 1;
  if (a.player !== b.player) return a.player < b.player ? -1 : 1;
  return 0;
}

function sameKey(a: ExposureRow, b: ExposureRow): boolean {
  return a.player === b.player && a.experiment === b.experiment && a.environment === b.environment;
}

/** Plans a write of `rows` (in arrival order). */
export function planBatch(rows: readonly ExposureRow[]): BatchPlan {
  // Array.prototype.sort is stable: rows of one key keep their arrival order.
  const sorted = rows.slice().sort(compareKeys);
  const firsts: ExposureRow[] = [];
  const changes: ExposureRow[][] = [];
  let previous: ExposureRow | null = null;
  let change = 0;
  for (const row of sorted) {
    if (previous === null || !sameKey(previous, row)) {
      firsts.push(row);
      change = 0;
    } else if (row.variant !== previous.variant) {
      (changes[change] ??= []).push(row);
      change++;
    }
    previous = row;
  }
  return { firsts, changes };
}

interface Count {
  readonly environment: string;
  readonly experiment: string;
  readonly variant: string;
  readonly hourMs: number;
  players: number;
  firstMs: number;
  lastMs: number;
}

/**
 * The counts one write adds: per (environment, experiment, variant, hour), the inserted rows, the
 * first and the last of their times; in key order (the lock order of the counts table). The rows come
 * in key order (a plan's firsts): a run of one (environment, experiment) looks only through its own
 * few counts. Rows in any other order are counted right too, each run after the first of its key
 * looking from where that key's counts start.
 */
export function countsOf(inserted: readonly ExposureRow[]): HourCount[] {
  const counts: Count[] = [];
  /** (environment, experiment), each text after its length, -> the index of its first count. */
  const runs = new Map<string, number>();
  let environment: string | null = null;
  let experiment = '';
  let from = 0;
  for (const row of inserted) {
    if (row.environment !== environment || row.experiment !== experiment) {
      environment = row.environment;
      experiment = row.experiment;
      const key = `${environment.length}:${environment}${experiment}`;
      const start = runs.get(key);
      from = start ?? counts.length;
      if (start === undefined) runs.set(key, from);
    }
    const hourMs = hourOf(row.atMs);
    let count: Count | null = null;
    for (let k = from; k < counts.length; k++) {
      const c = counts[k]!;
      if (c.variant === row.variant && c.hourMs === hourMs && c.experiment === experiment && c.environment === environment) {
        count = c;
        break;
      }
    }
    if (count === null) {
      counts.push({ environment, experiment, variant: row.variant, hourMs, players: 1, firstMs: row.atMs, lastMs: row.atMs });
    } else {
      count.players++;
      if (row.atMs < count.firstMs) count.firstMs = row.atMs;
      if (row.atMs > count.lastMs) count.lastMs = row.atMs;
    }
  }
  return counts.sort(compareCounts);
}

function compareCounts(a: HourCount, b: HourCount): number {
  if (a.environment !== b.environment) return a.environment < b.environment ? -1 : 1;
  if (a.experiment !== b.experiment) return a.experiment < b.experiment ? -1 : 1;
  if (a.variant !== b.variant) return a.variant < b.variant ? -1 : 1;
  return a.hourMs - b.hourMs;
}

/** The last time isoOf wrote and its text: the rows of a batch come in runs of one millisecond. */
const lastIso = { ms: Number.NaN, text: '' };

/** The ISO-8601 UTC text of a time, as SQLite stores `first_seen` and `moved_at`. */
export function isoOf(ms: number): string {
  if (ms !== lastIso.ms) {
    lastIso.text = new Date(ms).toISOString();
    lastIso.ms = ms;
  }
  return lastIso.text;
}
