/**
 * The exposure writer on PostgreSQL (--exposures postgres://...), one table for a whole fleet: every
 * node inserts its rows with ON CONFLICT DO NOTHING, so the primary key decides which node's first
 * exposure is the row, and only the rows a node's own transaction inserted are added to the counts,
 * in that transaction. A write is idempotent (a key inserted once is never counted again, a move is
 * set only where it changes the row): a transaction whose COMMIT was lost with its connection can be
 * written again without counting twice.
 *
 * Rows are inserted in key order and the counts upserted in key order, so two nodes writing
 * overlapping players take their locks in one order; a deadlock (the moves of one batch come in
 * rounds) or a serialization failure is retried at once, a lost connection is left to the caller
 * (the writer thread backs off and writes the batch again).
 */
import { connect, describePgError, isUnreachable, type Sql, type Tx } from '../store/postgres/connection.js';
import { transaction } from '../store/postgres/transaction.js';
import { countsOf, planBatch } from './batch-plan.js';
import { COLUMN_ROWS, columnParameters, insertColumns } from './pg-columns.js';
import { POSTGRES_SCHEMA } from './schema.js';
import type { ExposureRow, ExposureWriter, WriteOutcome } from './db.js';

/** Connections of the writer's pool: it writes one batch at a time. */
const POOL_SIZE = 2;
/** Opening a connection that takes longer counts as the database being unreachable. */
const CONNECT_TIMEOUT_MS = 2000;
/** Immediate retries of a batch that lost a deadlock or a serialization check. */
const CONFLICT_RETRIES = 5;
/** pg_advisory_xact_lock key held while the tables are created: nodes starting together never race on CREATE TABLE. */
const SCHEMA_LOCK = 7_301_075;

const DEADLOCK = '40P01';
const SERIALIZATION_FAILURE = '40001';
const UNDEFINED_TABLE = '42P01';

/** Connects and creates the tables if missing; throws (with nothing left open) when the database cannot be reached. */
export async function openPostgresExposureWriter(url: string): Promise<ExposureWriter> {
  const sql = connect(url, { poolSize: POOL_SIZE, connectTimeoutMs: CONNECT_TIMEOUT_MS });
  try {
    await ensurePostgresSchema(sql);
  } catch (err) {
    await sql.end({ timeout: 0 });
    throw err;
  }
  return new PostgresExposureWriter(sql);
}

/** Creates the exposure tables if missing, under an advisory lock (the readers call it too). */
export async function ensurePostgresSchema(sql: Sql): Promise<void> {
  await transaction(sql, async (tx) => {
    await tx.unsafe('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    await tx.unsafe(POSTGRES_SCHEMA);
  });
}

function codeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/**
 * True when PostgreSQL refused the rows themselves (a data exception, SQLSTATE class 22: text it
 * cannot hold, such as a NUL character): writing them again cannot succeed. Anything else (the
 * database unreachable, out of space, a permission) is retried until it passes.
 */
export function postgresRefusesRows(err: unknown): boolean {
  return codeOf(err).startsWith('22');
}

/** The failure as one line for the writer's log. */
export function describePostgresFailure(err: unknown): string {
  return isUnreachable(err) ? `the database is unreachable: ${describePgError(err)}` : describePgError(err);
}

class PostgresExposureWriter implements ExposureWriter {
  /** False once a write found the tables missing (dropped under a running writer): created again before the next. */
  private schemaReady = true;

  constructor(private readonly sql: Sql) {}

  async write(rows: readonly ExposureRow[]): Promise<WriteOutcome> {
    if (rows.length === 0) return { inserted: 0, moved: 0 };
    if (!this.schemaReady) {
      await ensurePostgresSchema(this.sql);
      this.schemaReady = true;
    }
    for (let attempt = 0; ; attempt++) {
      try {
        return await transaction(this.sql, (tx) => writeRows(tx, rows));
      } catch (err) {
        const code = codeOf(err);
        if ((code === DEADLOCK || code === SERIALIZATION_FAILURE) && attempt < CONFLICT_RETRIES) continue;
        if (code === UNDEFINED_TABLE) this.schemaReady = false;
        throw err;
      }
    }
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 1 });
  }
}

async function writeRows(tx: Tx, rows: readonly ExposureRow[]): Promise<WriteOutcome> {
  const plan = planBatch(rows);
  const firsts = plan.firsts;
  // The inserts answer only where the table held the key already: the positions (1-based, in
  // `firsts`) of the rows not taken, usually none in a launch and few once players are seen. The
  // final SELECT sees what the INSERT returned (one statement, one snapshot), so it never reads a row
  // back that it wrote. The rows go as the array literals of pg-columns.ts, read back by its COLUMN_ROWS.
  const held = await tx.unsafe<{ i: number }[]>(
    `WITH r AS (${COLUMN_ROWS}), taken AS (
       INSERT INTO rcd_exposures (environment, experiment, player, variant, first_seen, app_version, dimensions)
       SELECT e, x, p, v, to_timestamp(t / 1000.0), a, d::jsonb FROM r
       ON CONFLICT DO NOTHING
       RETURNING environment, experiment, player
     )
     SELECT r.i::int4 AS i FROM r
      WHERE NOT EXISTS (SELECT 1 FROM taken WHERE taken.environment = r.e AND taken.experiment = r.x AND taken.player = r.p)`,
    columnParameters(insertColumns(firsts)),
    { prepare: true },
  );
  const wasHeld = new Uint8Array(firsts.length);
  for (const h of held) wasHeld[h.i - 1] = 1;
  const inserted: ExposureRow[] = [];
  const notTaken: ExposureRow[] = [];
  for (let i = 0; i < firsts.length; i++) (wasHeld[i] === 1 ? notTaken : inserted).push(firsts[i]!);
  let moved = await moveRows(tx, notTaken);
  for (const round of plan.changes) moved += await moveRows(tx, round);
  const counts = countsOf(inserted);
  if (counts.length > 0) {
    await tx.unsafe(
      `INSERT INTO rcd_exposure_counts AS c (environment, experiment, variant, hour, players, first_ms, last_ms)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
       ON CONFLICT (environment, experiment, variant, hour) DO UPDATE SET
         players = c.players + excluded.players,
         first_ms = LEAST(c.first_ms, excluded.first_ms),
         last_ms = GREATEST(c.last_ms, excluded.last_ms)`,
      [
        counts.map((c) => c.environment),
        counts.map((c) => c.experiment),
        counts.map((c) => c.variant),
        counts.map((c) => c.hourMs),
        counts.map((c) => c.players),
        counts.map((c) => c.firstMs),
        counts.map((c) => c.lastMs),
      ],
      { prepare: true },
    );
  }
  return { inserted: inserted.length, moved };
}

/** Offers one round of moves (at most one row per key, in key order); returns the rows changed. */
async function moveRows(tx: Tx, rows: readonly ExposureRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const changed = await tx.unsafe(
    `UPDATE rcd_exposures AS x SET moved_to = r.v, moved_at = to_timestamp(r.t / 1000.0)
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[]) AS r(e, ex, p, v, t)
      WHERE x.environment = r.e AND x.experiment = r.ex AND x.player = r.p
        AND x.variant <> r.v AND x.moved_to IS DISTINCT FROM r.v`,
    [rows.map((r) => r.environment), rows.map((r) => r.experiment), rows.map((r) => r.player), rows.map((r) => r.variant), rows.map((r) => r.atMs)],
    { prepare: true },
  );
  return changed.count;
}
