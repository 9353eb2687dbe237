/**
 * The counts table's rows as both readers (sqlite-reader.ts, postgres-reader.ts) select them, and
 * what they become: one HourCount per (environment, experiment, variant, hour).
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
