/**
 * The exposure tables, for each kind of database (docs/experiments.md, "The assignment table").
 * `rcd_exposures` holds one row per (environment, experiment, player); `rcd_exposure_counts` the
 * players first exposed per hour and variant, kept in the same transaction as the rows it counts so
 * the readout never scans the rows. Both are created if missing by whoever opens the database first
 * (the writer or a reader). A partial index finds the players who moved to another variant (few)
 * without scanning the rows.
 */

export const SQLITE_SCHEMA = `
CREATE TABLE IF NOT EXISTS rcd_exposures (
  environment TEXT NOT NULL,
  experiment  TEXT NOT NULL,
  player      TEXT NOT NULL,
  variant     TEXT NOT NULL,
  first_seen  TEXT NOT NULL,
  app_version TEXT,
  dimensions  TEXT NOT NULL DEFAULT '{}',
  moved_to    TEXT,
  moved_at    TEXT,
  PRIMARY KEY (environment, experiment, player)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS rcd_exposures_moved ON rcd_exposures (environment, experiment, variant) WHERE moved_to IS NOT NULL;
CREATE TABLE IF NOT EXISTS rcd_exposure_counts (
  environment TEXT NOT NULL,
  experiment  TEXT NOT NULL,
  variant     TEXT NOT NULL,
  hour        INTEGER NOT NULL,
  players     INTEGER NOT NULL,
  first_ms    INTEGER NOT NULL,
  last_ms     INTEGER NOT NULL,
  PRIMARY KEY (environment, experiment, variant, hour)
) WITHOUT ROWID;
`;

export const POSTGRES_SCHEMA = `
CREATE TABLE IF NOT EXISTS rcd_exposures (
  environment text NOT NULL,
  experiment  text NOT NULL,
  player      text NOT NULL,
  variant     text NOT NULL,
  first_seen  timestamptz NOT NULL,
  app_version text,
  dimensions  jsonb NOT NULL DEFAULT '{}',
  moved_to    text,
  moved_at    timestamptz,
  PRIMARY KEY (environment, experiment, player)
);
CREATE INDEX IF NOT EXISTS rcd_exposures_moved ON rcd_exposures (environment, experiment, variant) WHERE moved_to IS NOT NULL;
CREATE TABLE IF NOT EXISTS rcd_exposure_counts (
  environment text NOT NULL,
  experiment  text NOT NULL,
  variant     text NOT NULL,
  hour        bigint NOT NULL,
  players     bigint NOT NULL,
  first_ms    bigint NOT NULL,
  last_ms     bigint NOT NULL,
  PRIMARY KEY (environment, experiment, variant, hour)
);
`;

/** The start of the hour `ms` falls in (UTC), the counts table's `hour`. */
export function hourOf(ms: number): number {
  return ms - (ms % 3_600_000);
}
