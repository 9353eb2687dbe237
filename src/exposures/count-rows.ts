/**
 * The counts table's rows as both readers (sqlite-reader.ts, postgres-reader.ts) select them, and
 * what they become: one HourCount per (environment, experiment, variant, hour), or the players of
 * each variant summed over its hours (what the metrics read at each scrape: one row per series, not
 * one per hour).
 */
import type { HourCount } from './db.js';

export const HOUR_COLUMNS = 'environment, experiment, variant, hour, players, first_ms, last_ms';

export interface HourRow {
  environment: string;
  experiment: string;
  variant: string;
  hour: number;
  players: number;
  first_ms: number;
  last_ms: number;
}

export function hourCount(r: HourRow): HourCount {
  return {
    environment: r.environment,
    experiment: r.experiment,
    variant: r.variant,
    hourMs: r.hour,
    players: r.players,
    firstMs: r.first_ms,
    lastMs: r.last_ms,
  };
}

/** Players first exposed to one variant, over every hour. */
export interface VariantPlayers {
  readonly environment: string;
  readonly experiment: string;
  readonly variant: string;
  readonly players: number;
}

/** Every variant's players, summed in the database (`players` as a 64-bit integer in both kinds). */
export const TOTALS_SQL = 'SELECT environment, experiment, variant, CAST(sum(players) AS bigint) AS players FROM rcd_exposure_counts GROUP BY environment, experiment, variant';

/** What reads the totals (both readers, and the lazy one around them). */
export interface ExposureTotals {
  totals(): Promise<VariantPlayers[]>;
}
