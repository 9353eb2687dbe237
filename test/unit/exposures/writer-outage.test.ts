/**
 * The exposure database goes away under the writer thread, on a PostgreSQL server of this test's own
 * (stopped and started for real): the writer holds what it received, the loops' reservations hit the
 * queue bound and what passes it is dropped and counted, a writer started during the outage starts
 * all the same, the drop line is logged with the reason, and once the database is back every row
 * held is written by itself, exactly.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPOSURE_QUEUE_ROWS, EXPOSURE_ROWS_WRITTEN, EXPOSURE_WRITE_FAILURES, newExposureCounters } from '../../../src/metrics/layout.js';
import type { ExposureRow } from '../../../src/exposures/db.js';
import type { ExposureWriterThread } from '../../../src/exposures/writer-client.js';
import { createDatabase, startPostgres, type RunningPostgres } from '../../helpers/postgres.js';
import { until } from '../../helpers/until.js';
import { queuedRows, sendAsLoop, writerClient } from './as-loop.js';
import { playersByVariant, readPostgres, row, rowsByVariant } from './tables.js';

const LOG = { level: 'error', format: 'json' } as const;
const T0 = Date.UTC(2026, 10, 29, 3, 0, 0);
/** The queue bound the test's loop keeps (--exposure-queue). */
const LIMIT = 5000;
let pg: RunningPostgres;
let url: string;
const running: ExposureWriterThread[] = [];

beforeAll(async () => {
  pg = await startPostgres();
  url = (await createDatabase(pg.url)).url;
}, 60_000);
afterAll(async () => {
  for (const w of running.splice(0)) await w.stop(1000);
  await pg.destroy();
});

function players(from: number, to: number, experiment = 'Shop:price'): ExposureRow[] {
  return Array.from({ length: to - from }, (_, i) => row(experiment, `u${from + i}`, (from + i) % 2 === 0 ? 'A' : 'B', T0 + from + i));
}

async function start(): Promise<{ writer: ExposureWriterThread; counters: Float64Array }> {
  const Writer = await writerClient();
  const counters = newExposureCounters();
  const writer = new Writer({ target: { kind: 'postgres', url }, loops: 1, counters, drops: null, log: LOG });
  running.push(writer);
  await writer.started();
  return { writer, counters };
}

/** The drop line of a writer in a process of its own (its log goes to that process's stderr), the database down. */
function dropLineWhileDown(): Promise<string> {
  const dist = process.env.RCD_TEST_DIST ?? fileURLToPath(new URL('../../../dist', import.meta.url));
  const script = `(async () => {
    const { ExposureWriterThread } = await import(process.env.CLIENT);
    const counters = new Float64Array(new SharedArrayBuffer(64));
    const dropped = new Float64Array(new SharedArrayBuffer(8));
    const w = new ExposureWriterThread({ target: { kind: 'postgres', url: process.env.URL }, loops: 1, counters,
      drops: { counters: [dropped], slot: 0 }, log: { level: 'info', format: 'json' }, dropLogMs: 300 });
    await w.started();
    dropped[0] = 42;
    await new Promise((r) => setTimeout(r, 1500));
    await w.stop(100);
  })()`;
  const child = spawn(process.execPath, ['-e', script], {
    env: { ...process.env, CLIENT: pathToFileURL(`${dist}/src/exposures/writer-client.js`).href, URL: url },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', () => resolve(out));
  });
}

describe('the exposure writer while PostgreSQL is stopped and started again', () => {
  it('holds, drops past the bound and counts it, starts anyway, logs the drops, and resumes by itself with exact rows', async () => {
    const { writer, counters } = await start();
    const link = writer.links[0]!;
    const dropped = new Float64Array(1);
    sendAsLoop(link, players(0, 1000), LIMIT, dropped);
    await until('the first 1,000 rows', () => counters[EXPOSURE_ROWS_WRITTEN] === 1000 && queuedRows(link) === 0, 15_000);

    await pg.stop();
    sendAsLoop(link, players(1000, 4000), LIMIT, dropped);
    await until('a failed write', () => counters[EXPOSURE_WRITE_FAILURES]! >= 1, 15_000);
    // The next 4,000: 2,000 fit under the bound, 2,000 are dropped at the loop and counted.
    const sent = sendAsLoop(link, players(4000, 8000), LIMIT, dropped);
    expect(sent).toHaveLength(2000);
    expect(dropped[0]).toBe(2000);
    expect(queuedRows(link)).toBe(LIMIT);
    await until('every row received', () => counters[EXPOSURE_QUEUE_ROWS] === LIMIT, 5000);

    // A node that starts during the outage starts all the same and holds its rows.
    const late = await start();
    sendAsLoop(late.writer.links[0]!, players(0, 300, 'Bonus:vip'), LIMIT, new Float64Array(1));
    // The drop line, from a writer whose loops dropped rows while the database is down.
    const lines = await dropLineWhileDown();
    expect(lines).toMatch(/exposures: 42 dropped in the last 0\.3 s \(writer queue full: the database is unreachable: /);
    expect(lines).toMatch(/exposures: cannot write to postgres:\/\/postgres:\*\*\*@/);
    await new Promise((r) => setTimeout(r, 2500));
    expect(counters[EXPOSURE_ROWS_WRITTEN]).toBe(1000);
    const failures = counters[EXPOSURE_WRITE_FAILURES]!;
    expect(failures).toBeGreaterThanOrEqual(2);
    // Backing off to 2 s: a few tries over the outage, not one per batch or per millisecond.
    expect(failures).toBeLessThan(20);

    await pg.start();
    await until('the held rows written', () => queuedRows(link) === 0 && queuedRows(late.writer.links[0]!) === 0, 20_000);
    expect(counters[EXPOSURE_ROWS_WRITTEN]).toBe(6000);
    expect(late.counters[EXPOSURE_ROWS_WRITTEN]).toBe(300);
    const t = await readPostgres(url);
    expect(t.rows).toHaveLength(6300);
    expect(playersByVariant(t)).toEqual(rowsByVariant(t));
    expect(playersByVariant(t)).toEqual({ 'Shop:price/A': 3000, 'Shop:price/B': 3000, 'Bonus:vip/A': 150, 'Bonus:vip/B': 150 });
    // The dropped players are the ones missing, and only they.
    const written = new Set(t.rows.filter((r) => r.experiment === 'Shop:price').map((r) => Number(r.player.slice(1))));
    for (let p = 0; p < 8000; p++) expect(written.has(p)).toBe(p < 6000);
  }, 90_000);
});
