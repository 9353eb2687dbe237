/**
 * The readout's reader of a PostgreSQL exposure database (`--exposures postgres://...`): the
 * per-hour counts and the moved players, for the control thread's admin API and the metrics thread.
 * One connection, opened at the first read and closed after a minute idle; the tables are created
 * if missing (the writer of any node may not have run yet). Reads only, in their own statements: a
 * read never holds a lock the writers wait for.
 */
import postgres from 'postgres';
import { connect, DEFAULT_PG_CONNECT_TIMEOUT_MS, OnLost, runOnPool } from '../store/postgres/connection.js';
import { HOUR_COLUMNS, hourCount, TOTALS_SQL, type ExposureTotals, type HourRow, type VariantPlayers } from './count-rows.js';
import type { ExposureReader, HourCount, MovedCount } from './db.js';
import { POSTGRES_SCHEMA } from './schema.js';

/**
 * Creating the tables may fail without harm: two sessions creating them at once (the other one
 * did), or a role that may read but not create (the writer's role created them; if not, the read
 * says so).
 */
const CREATED_ELSEWHERE = new Set(['23505', '42P07', '42501']);

const HOURS = `SELECT ${HOUR_COLUMNS} FROM rcd_exposure_counts`;
const MOVED = 'SELECT environment, experiment, variant, count(*)::bigint AS players FROM rcd_exposures';
const MOVED_GROUP = 'GROUP BY environment, experiment, variant';

export class PostgresExposureReader implements ExposureReader, ExposureTotals {
  private readonly sql: postgres.Sql;
  private created: Promise<void> | null = null;

  constructor(url: string) {
    this.sql = connect(url, { poolSize: 1, connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS });
  }

  private async query<T extends object>(text: string, params: unknown[]): Promise<T[]> {
    this.created ??= this.createTables().catch((err: unknown) => {
      this.created = null;
      throw err;
    });
    await this.created;
    // A read may run twice: a connection lost while the database restarted is tried once more.
    return runOnPool(() => this.sql.unsafe<T[]>(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }), 1, OnLost.RetryOnce);
  }

  private async createTables(): Promise<void> {
    try {
      await this.sql.unsafe(POSTGRES_SCHEMA);
    } catch (err) {
      if (!CREATED_ELSEWHERE.has((err as { code?: string }).code ?? '')) throw err;
    }
  }

  async hours(environment: string | null, experiment?: string): Promise<HourCount[]> {
    const rows =
      environment === null
        ? await this.query<HourRow>(HOURS, [])
        : experiment === undefined
          ? await this.query<HourRow>(`${HOURS} WHERE environment = $1`, [environment])
          : await this.query<HourRow>(`${HOURS} WHERE environment = $1 AND experiment = $2`, [environment, experiment]);
    return rows.map(hourCount);
  }

  async moved(environment: string | null, experiment?: string): Promise<MovedCount[]> {
    const rows =
      environment === null
        ? await this.query<MovedCount>(`${MOVED} WHERE moved_to IS NOT NULL ${MOVED_GROUP}`, [])
        : experiment === undefined
          ? await this.query<MovedCount>(`${MOVED} WHERE environment = $1 AND moved_to IS NOT NULL ${MOVED_GROUP}`, [environment])
          : await this.query<MovedCount>(`${MOVED} WHERE environment = $1 AND experiment = $2 AND moved_to IS NOT NULL ${MOVED_GROUP}`, [environment, experiment]);
    return rows.map((r) => ({ environment: r.environment, experiment: r.experiment, variant: r.variant, players: r.players }));
  }

  async totals(): Promise<VariantPlayers[]> {
    const rows = await this.query<VariantPlayers>(TOTALS_SQL, []);
    return rows.map((r) => ({ environment: r.environment, experiment: r.experiment, variant: r.variant, players: r.players }));
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 5 });
  }
}
