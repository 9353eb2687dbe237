/**
 * The exposure database as the rest of rcd sees it, whichever kind it is (sqlite.ts, postgres.ts):
 * the writer thread writes batches of rows; the control thread (readout) and the metrics thread read
 * the per-hour counts. The tables are described once, in docs/experiments.md ("The assignment table").
 */

/** Rows the writer thread writes in one transaction at most. */
export const WRITE_ROWS = 5000;

/** One exposure as written: the key is (environment, experiment, player). */
export interface ExposureRow {
  readonly environment: string;
  readonly experiment: string;
  readonly player: string;
  readonly variant: string;
  readonly appVersion: string | null;
  /** A JSON object's text. */
  readonly dimensions: string;
  readonly atMs: number;
}

export interface WriteOutcome {
  /** Rows that were a player's first exposure to the experiment (new rows). */
  readonly inserted: number;
  /** Rows of players already recorded with another variant (their row's moved_to was set). */
  readonly moved: number;
}

export interface ExposureWriter {
  /** Writes the rows in one transaction: the first exposure wins, counts follow exactly. */
  write(rows: readonly ExposureRow[]): Promise<WriteOutcome>;
  close(): Promise<void>;
}

/** Players first exposed in one hour, per (environment, experiment, variant). */
export interface HourCount {
  readonly environment: string;
  readonly experiment: string;
  readonly variant: string;
  /** The hour's start, ms since the epoch (UTC). */
  readonly hourMs: number;
  readonly players: number;
  /** The first and the last first exposure in that hour, ms since the epoch. */
  readonly firstMs: number;
  readonly lastMs: number;
}

/** Players who moved to another variant after their first exposure, per experiment and first variant. */
export interface MovedCount {
  readonly environment: string;
  readonly experiment: string;
  readonly variant: string;
  readonly players: number;
}

export interface ExposureReader {
  /** Hour counts of one environment (every environment when null), of one experiment when named. */
  hours(environment: string | null, experiment?: string): Promise<HourCount[]>;
  moved(environment: string | null, experiment?: string): Promise<MovedCount[]>;
  close(): Promise<void>;
}
