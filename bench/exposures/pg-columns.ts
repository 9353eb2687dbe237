/**
 * `node dist/bench/exposures/pg-columns.js [--players N] [--rounds N]` (after `npm run build`): what
 * the PostgreSQL exposure writer's insert costs rcd's process a row, with its rows as the array
 * literals src/exposures/pg-columns.ts builds against the driver's own arrays (the reference: seven
 * JavaScript arrays that postgres.js serializes element by element). Both insert the launch's three
 * experiments for N new players into a database of their own on a throwaway PostgreSQL, in
 * transactions of the writer's size, the two alternating round by round; the figure is this
 * process's CPU a row inserted (the driver's work; the database's own CPU is another process's).
 */
import { parseArgs } from 'node:util';
import { connect, type Sql, type Tx } from '../../src/store/postgres/connection.js';
import { WRITE_ROWS, type ExposureRow } from '../../src/exposures/db.js';
import { COLUMN_ROWS, columnParameters, insertColumns } from '../../src/exposures/pg-columns.js';
import { compareKeys } from '../../src/exposures/batch-plan.js';
import { POSTGRES_SCHEMA } from '../../src/exposures/schema.js';
import { createDatabase, startPostgres } from '../../test/helpers/postgres.js';
import { intOption, UsageError } from '../harness/cli-options.js';
import { median } from '../harness/wrk.js';
import { LAUNCH_ENV, LAUNCH_EXPERIMENTS } from './launch-fixture.js';

const USAGE = `usage: node dist/bench/exposures/pg-columns.js [--players N] [--rounds N]
  --players N   new players a round, three rows each (default 50000)
  --rounds N    rounds of each way, alternating (default 3)`;

const INSERT = `INSERT INTO rcd_exposures (environment, experiment, player, variant, first_seen, app_version, dimensions)`;

/** The reference: the rows as seven arrays, serialized by the driver. */
async function insertDriverArrays(tx: Tx, rows: readonly ExposureRow[]): Promise<void> {
  await tx.unsafe(
    `${INSERT} SELECT e, x, p, v, to_timestamp(t / 1000.0), a, d::jsonb
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::text[]) AS r(e, x, p, v, t, a, d)
     ON CONFLICT DO NOTHING`,
    [rows.map((r) => r.environment), rows.map((r) => r.experiment), rows.map((r) => r.player), rows.map((r) => r.variant), rows.map((r) => r.atMs), rows.map((r) => r.appVersion), rows.map((r) => r.dimensions)],
    { prepare: true },
  );
}

/** The writer's way: the literals of pg-columns.ts. */
async function insertLiterals(tx: Tx, rows: readonly ExposureRow[]): Promise<void> {
  await tx.unsafe(
    `${INSERT} SELECT e, x, p, v, to_timestamp(t / 1000.0), a, d::jsonb FROM (${COLUMN_ROWS}) AS r
     ON CONFLICT DO NOTHING`,
    columnParameters(insertColumns(rows)),
    { prepare: true },
  );
}

type Insert = (tx: Tx, rows: readonly ExposureRow[]) => Promise<void>;

/** The rows of `players` new players (`prefix` then a counter), in key order as the writer sends them. */
function launchRows(prefix: string, players: number): ExposureRow[] {
  const at = Date.now();
  const rows: ExposureRow[] = [];
  for (const e of LAUNCH_EXPERIMENTS) {
    for (let i = 0; i < players; i++) {
      rows.push({ environment: LAUNCH_ENV, experiment: e.name, player: prefix + i, variant: e.variants[i % e.variants.length]!.name, appVersion: '2.0.0', dimensions: '{}', atMs: at });
    }
  }
  return rows.sort(compareKeys);
}

/** Inserts the rows in transactions of the writer's size; this process's CPU a row, µs. */
async function round(sql: Sql, insert: Insert, rows: readonly ExposureRow[]): Promise<number> {
  const before = process.cpuUsage();
  for (let from = 0; from < rows.length; from += WRITE_ROWS) {
    const batch = rows.slice(from, from + WRITE_ROWS);
    await sql.begin((tx) => insert(tx, batch));
  }
  const spent = process.cpuUsage(before);
  return (spent.user + spent.system) / rows.length;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { players: { type: 'string' }, rounds: { type: 'string' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help === true) {
    console.log(USAGE);
    return;
  }
  const players = intOption('players', values.players, 50_000, 100, 1_000_000);
  const rounds = intOption('rounds', values.rounds, 3, 1, 20);
  const pg = await startPostgres();
  try {
    const ways: [string, Insert][] = [
      ['the driver\'s arrays (reference)', insertDriverArrays],
      ['pg-columns.ts literals (the writer)', insertLiterals],
    ];
    const figures = new Map<string, number[]>(ways.map(([name]) => [name, []]));
    for (let r = 0; r < rounds; r++) {
      for (const [name, insert] of ways) {
        const db = await createDatabase(pg.url);
        const sql = connect(db.url, { poolSize: 1, connectTimeoutMs: 5000 });
        try {
          await sql.unsafe(POSTGRES_SCHEMA);
          const us = await round(sql, insert, launchRows(`r${r}-`, players));
          figures.get(name)!.push(us);
          console.log(`round ${r + 1}: ${name}: ${us.toFixed(3)} µs a row`);
        } finally {
          await sql.end({ timeout: 1 });
          await db.drop();
        }
      }
    }
    const reference = median(figures.get(ways[0]![0])!);
    const literals = median(figures.get(ways[1]![0])!);
    console.log(`median of ${rounds} round(s), ${(players * LAUNCH_EXPERIMENTS.length).toLocaleString('en-US')} rows each: the driver's arrays ${reference.toFixed(3)} µs a row, the literals ${literals.toFixed(3)} µs a row (${(literals / reference).toFixed(3)}x)`);
  } finally {
    await pg.destroy();
  }
}

main().catch((err: unknown) => {
  if (err instanceof UsageError) {
    console.error(`${err.message}\n${USAGE}`);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
