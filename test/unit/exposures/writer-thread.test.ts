/**
 * The exposure writer thread for real (compiled, in a worker thread) on a real SQLite file: batches
 * posted on the loops' ports as loops post them become rows, the shared queue counter comes back to
 * zero, the writer's counters say what it wrote, a stop writes what is still in the ports, and a file
 * that cannot be opened does not stop the writer from starting (it holds the rows and says so); on
 * PostgreSQL, a row the database refuses for its content costs that row alone.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXPOSURE_PLAYERS_MOVED, EXPOSURE_QUEUE_ROWS, EXPOSURE_ROWS_WRITTEN, EXPOSURE_WRITE_FAILURES, newExposureCounters } from '../../../src/metrics/layout.js';
import type { ExposureWriterThread } from '../../../src/exposures/writer-client.js';
import { createDatabase } from '../../helpers/postgres.js';
import { until } from '../../helpers/until.js';
import { queuedRows, sendAsLoop, writerClient } from './as-loop.js';
import { playersByVariant, readPostgres, readSqlite, row } from './tables.js';

const LOG = { level: 'error', format: 'json' } as const;
const T0 = Date.UTC(2026, 10, 29, 3, 0, 0);
let dir: string;
const running: ExposureWriterThread[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rcd-exposure-writer-'));
});
afterEach(async () => {
  for (const w of running.splice(0)) await w.stop(1000);
  rmSync(dir, { recursive: true, force: true });
});

async function start(path: string, loops: number, kind: 'sqlite' | 'postgres' = 'sqlite'): Promise<{ writer: ExposureWriterThread; counters: Float64Array }> {
  const Writer = await writerClient();
  const counters = newExposureCounters();
  const writer = new Writer({ target: { kind, url: kind === 'sqlite' ? `sqlite:${path}` : path }, loops, counters, drops: null, log: LOG });
  running.push(writer);
  await writer.started();
  return { writer, counters };
}

function rowCount(path: string): number {
  try {
    return readSqlite(path).rows.length;
  } catch {
    return 0;
  }
}

describe('the exposure writer thread on SQLite', () => {
  it('writes the batches of every loop\'s port, exactly, and gives the queue back', async () => {
    const path = join(dir, 'exposures.db');
    const { writer, counters } = await start(path, 2);
    const dropped = new Float64Array(1);
    const [loop0, loop1] = writer.links;
    // Both loops see players 0..2999 in batches of 500, loop 1 after loop 0 (ports are not ordered
    // between each other) and with later clocks; player 7 gets another variant from loop 1.
    const batches = (): number[][] => Array.from({ length: 6 }, (_, b) => Array.from({ length: 500 }, (_, i) => b * 500 + i));
    for (const players of batches()) sendAsLoop(loop0!, players.map((p) => row('Shop:price', `u${p}`, p % 2 === 0 ? 'A' : 'B', T0 + p)), 1_000_000, dropped);
    await until('3,000 rows written', () => counters[EXPOSURE_ROWS_WRITTEN] === 3000 && queuedRows(loop0!) === 0, 15_000);
    for (const players of batches()) sendAsLoop(loop1!, players.map((p) => row('Shop:price', `u${p}`, p % 2 === 0 || p === 7 ? 'A' : 'B', T0 + 5000 + p)), 1_000_000, dropped);
    await until('loop 1\'s rows taken', () => counters[EXPOSURE_PLAYERS_MOVED] === 1 && queuedRows(loop1!) === 0, 15_000);
    expect(await writer.stop(5000)).toBe(0);
    running.splice(0);
    const t = readSqlite(path);
    expect(t.rows).toHaveLength(3000);
    expect(playersByVariant(t)).toEqual({ 'Shop:price/A': 1500, 'Shop:price/B': 1500 });
    const p7 = t.rows.find((r) => r.player === 'u7')!;
    expect([p7.variant, p7.movedTo]).toEqual(['B', 'A']);
    expect(counters[EXPOSURE_PLAYERS_MOVED]).toBe(1);
    expect(counters[EXPOSURE_QUEUE_ROWS]).toBe(0);
    expect(counters[EXPOSURE_WRITE_FAILURES]).toBe(0);
    expect(dropped[0]).toBe(0);
  });

  it('a stop writes what the ports still hold before it ends', async () => {
    const path = join(dir, 'exposures.db');
    const { writer } = await start(path, 1);
    const dropped = new Float64Array(1);
    sendAsLoop(writer.links[0]!, Array.from({ length: 12_000 }, (_, p) => row('X', `u${p}`, 'A', T0)), 1_000_000, dropped);
    expect(await writer.stop(10_000)).toBe(0);
    running.splice(0);
    expect(rowCount(path)).toBe(12_000);
    expect(queuedRows(writer.links[0]!)).toBe(0);
  });

  it('a file that cannot be opened: the writer still starts, holds the rows, counts the failures and gives them up at the stop', async () => {
    // The path's folder is a regular file: nothing can be created under it.
    writeFileSync(join(dir, 'not-a-folder'), '');
    const path = join(dir, 'not-a-folder', 'exposures.db');
    const { writer, counters } = await start(path, 1);
    const dropped = new Float64Array(1);
    sendAsLoop(writer.links[0]!, [row('X', 'u1', 'A', T0), row('X', 'u2', 'B', T0)], 1_000_000, dropped);
    await until('a retried failure', () => counters[EXPOSURE_WRITE_FAILURES]! >= 2, 10_000);
    expect(counters[EXPOSURE_QUEUE_ROWS]).toBe(2);
    expect(queuedRows(writer.links[0]!)).toBe(2);
    expect(await writer.stop(200)).toBe(2);
    running.splice(0);
    expect(queuedRows(writer.links[0]!)).toBe(0);
  });
});

describe('the exposure writer thread on PostgreSQL', () => {
  it('a row the database cannot hold is left out alone: the rest of its batch is written, the queue given back', async () => {
    const db = await createDatabase();
    try {
      const { writer, counters } = await start(db.url, 1, 'postgres');
      const rows = Array.from({ length: 100 }, (_, p) => row('X', p === 37 ? 'bad\u0000player' : `u${p}`, 'A', T0 + p));
      sendAsLoop(writer.links[0]!, rows, 1_000_000, new Float64Array(1));
      await until('the batch taken', () => queuedRows(writer.links[0]!) === 0, 15_000);
      expect(counters[EXPOSURE_ROWS_WRITTEN]).toBe(99);
      expect(counters[EXPOSURE_WRITE_FAILURES]).toBe(0);
      expect(await writer.stop(5000)).toBe(0);
      running.splice(0);
      const t = await readPostgres(db.url);
      expect(t.rows).toHaveLength(99);
      expect(playersByVariant(t)).toEqual({ 'X/A': 99 });
    } finally {
      await db.drop();
    }
  });
});
