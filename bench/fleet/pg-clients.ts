/**
 * Which PostgreSQL client the store uses: `pg` (node-postgres) against `postgres` (postgres.js), on
 * the two calls the store makes most: reading the change log after a sequence (every node, after
 * every write anywhere) and a content put (a transaction: read the newest revision, insert one,
 * touch the content row). Both clients use a pool of 4 connections and run the same SQL.
 *
 *   node dist/bench/fleet/pg-clients.js postgres://user:pass@host:port/db [rounds]
 *
 * The database must be a scratch one: the benchmark creates and drops its own tables (bench_*).
 */
import pg from 'pg';
import postgres from 'postgres';

const url = process.argv[2];
const rounds = Number(process.argv[3] ?? 2000);
if (url === undefined) {
  console.error('usage: node dist/bench/fleet/pg-clients.js postgres://... [rounds]');
  process.exit(2);
}

const SETUP = `
DROP TABLE IF EXISTS bench_changes, bench_revisions, bench_contents;
CREATE TABLE bench_changes (seq bigserial PRIMARY KEY, kind text NOT NULL, env_id text NOT NULL, target text NOT NULL);
CREATE TABLE bench_contents (pk bigserial PRIMARY KEY, updated_at text NOT NULL);
CREATE TABLE bench_revisions (rev_id bigserial PRIMARY KEY, content_pk bigint NOT NULL, number int NOT NULL, text text NOT NULL, UNIQUE (content_pk, number));
INSERT INTO bench_changes (kind, env_id, target) SELECT 'content', 'prod', 'item-' || g FROM generate_series(1, 20000) g;
INSERT INTO bench_contents (updated_at) SELECT 'x' FROM generate_series(1, 100);
`;

const LOG_SQL = 'SELECT seq, kind, env_id, target FROM bench_changes WHERE seq > $1 ORDER BY seq LIMIT 100';
const NEWEST_SQL = 'SELECT number FROM bench_revisions WHERE content_pk = $1 ORDER BY number DESC LIMIT 1';
const INSERT_SQL = 'INSERT INTO bench_revisions (content_pk, number, text) VALUES ($1, $2, $3)';
const TOUCH_SQL = 'UPDATE bench_contents SET updated_at = $1 WHERE pk = $2';
const TEXT = JSON.stringify({ level: 3, flags: Array.from({ length: 40 }, (_, i) => `flag-${i}`) });

interface Client {
  readLog(after: number): Promise<number>;
  put(pk: number): Promise<void>;
  end(): Promise<void>;
}

function pgClient(): Client {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  return {
    async readLog(after) {
      const r = await pool.query({ name: 'log', text: LOG_SQL, values: [after] });
      return r.rows.length;
    },
    async put(pk) {
      const c = await pool.connect();
      try {
        await c.query('BEGIN');
        const r = await c.query<{ number: number }>({ name: 'newest', text: NEWEST_SQL, values: [pk] });
        const n = (r.rows[0]?.number ?? 0) + 1;
        await c.query({ name: 'insert', text: INSERT_SQL, values: [pk, n, TEXT] });
        await c.query({ name: 'touch', text: TOUCH_SQL, values: [new Date().toISOString(), pk] });
        await c.query('COMMIT');
      } catch (err) {
        await c.query('ROLLBACK');
        throw err;
      } finally {
        c.release();
      }
    },
    end: () => pool.end(),
  };
}

function postgresClient(): Client {
  const sql = postgres(url!, { max: 4, onnotice: () => undefined });
  return {
    async readLog(after) {
      const rows = await sql.unsafe(LOG_SQL, [after], { prepare: true });
      return rows.length;
    },
    async put(pk) {
      await sql.begin(async (tx) => {
        const r = await tx.unsafe<{ number: number }[]>(NEWEST_SQL, [pk], { prepare: true });
        const n = (r[0]?.number ?? 0) + 1;
        await tx.unsafe(INSERT_SQL, [pk, n, TEXT], { prepare: true });
        await tx.unsafe(TOUCH_SQL, [new Date().toISOString(), pk], { prepare: true });
      });
    },
    end: () => sql.end(),
  };
}

async function measure(name: string, make: () => Client): Promise<void> {
  const client = make();
  // Warm-up: connections opened, statements prepared.
  for (let i = 0; i < 200; i++) await client.readLog(i * 50);
  for (let i = 0; i < 50; i++) await client.put(1 + (i % 100));
  let t = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) await client.readLog((i * 97) % 19_000);
  const logUs = Number(process.hrtime.bigint() - t) / 1000 / rounds;
  t = process.hrtime.bigint();
  const puts = Math.max(1, Math.floor(rounds / 4));
  for (let i = 0; i < puts; i++) await client.put(1 + (i % 100));
  const putUs = Number(process.hrtime.bigint() - t) / 1000 / puts;
  // Concurrency: 8 log reads in flight at once, as several nodes' followers would not, but as one
  // node's publish and admin listings can.
  t = process.hrtime.bigint();
  const parallel = Math.max(8, Math.floor(rounds / 8) * 8);
  for (let i = 0; i < parallel; i += 8) {
    await Promise.all(Array.from({ length: 8 }, (_, j) => client.readLog(((i + j) * 97) % 19_000)));
  }
  const parUs = Number(process.hrtime.bigint() - t) / 1000 / parallel;
  await client.end();
  console.log(`${name.padEnd(9)} change-log read ${logUs.toFixed(0)} µs  content put ${putUs.toFixed(0)} µs  8 reads in flight ${parUs.toFixed(0)} µs/read`);
}

const setup = postgres(url, { max: 1, onnotice: () => undefined });
await setup.unsafe(SETUP);
// Alternated so that a drift of the shared machine hits both.
for (let round = 0; round < 2; round++) {
  await measure('pg', pgClient);
  await measure('postgres', postgresClient);
}
await setup.unsafe('DROP TABLE IF EXISTS bench_changes, bench_revisions, bench_contents');
await setup.end();
