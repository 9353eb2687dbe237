/**
 * A delivery loop's side of the exposure protocol, done by hand for tests of the writer thread: rows
 * become an ExposureBatch, reserved on the shared QUEUED_ROWS counter before they are posted, and
 * what would pass the queue bound is dropped and counted, as src/exposures/protocol.ts says a loop
 * does. The writer thread and its client run compiled from dist/ (worker threads run JavaScript).
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { NO_TEXT, QUEUED_ROWS, type ExposureBatch } from '../../../src/exposures/protocol.js';
import type { ExposureRow } from '../../../src/exposures/db.js';
import type { ExposureLink } from '../../../src/exposures/protocol.js';
import type { ExposureWriterThread } from '../../../src/exposures/writer-client.js';

const dist = process.env.RCD_TEST_DIST ?? fileURLToPath(new URL('../../../dist', import.meta.url));

/** The compiled writer client (its thread is dist/src/exposures/writer-thread.js). */
export async function writerClient(): Promise<typeof ExposureWriterThread> {
  const m = (await import(pathToFileURL(`${dist}/src/exposures/writer-client.js`).href)) as { ExposureWriterThread: typeof ExposureWriterThread };
  return m.ExposureWriterThread;
}

/** A loop's batch of `rows`: each text but the players once in `texts`. */
export function batchOf(rows: readonly ExposureRow[]): ExposureBatch {
  const texts: string[] = [];
  const id = (text: string): number => {
    let i = texts.indexOf(text);
    if (i < 0) i = texts.push(text) - 1;
    return i;
  };
  const ids = (f: (r: ExposureRow) => number): Int32Array => Int32Array.from(rows.map(f));
  return {
    type: 'exposures',
    texts,
    players: rows.map((r) => r.player),
    environments: ids((r) => id(r.environment)),
    experiments: ids((r) => id(r.experiment)),
    variants: ids((r) => id(r.variant)),
    appVersions: ids((r) => (r.appVersion === null ? NO_TEXT : id(r.appVersion))),
    dimensions: ids((r) => id(r.dimensions)),
    at: Float64Array.from(rows.map((r) => r.atMs)),
  };
}

/** A batch as plain columns, its texts looked up (what a test compares). */
export interface BatchColumns {
  readonly environments: string[];
  readonly experiments: string[];
  readonly variants: string[];
  readonly players: string[];
  readonly appVersions: (string | null)[];
  readonly dimensions: string[];
  readonly at: Float64Array;
}

export function columnsOf(batch: ExposureBatch): BatchColumns {
  const text = (i: number): string => batch.texts[i]!;
  return {
    environments: [...batch.environments].map(text),
    experiments: [...batch.experiments].map(text),
    variants: [...batch.variants].map(text),
    players: [...batch.players],
    appVersions: [...batch.appVersions].map((i) => (i === NO_TEXT ? null : text(i))),
    dimensions: [...batch.dimensions].map(text),
    at: batch.at,
  };
}

/** Rows the writer holds or has been handed (the shared counter). */
export function queuedRows(link: ExposureLink): number {
  return Atomics.load(new Int32Array(link.queue), QUEUED_ROWS);
}

/**
 * Sends rows as a loop: reserves them, drops (and counts in `dropped[slot]`) what would take the
 * queue past `limit`, posts the rest. Returns the rows posted (the first ones).
 */
export function sendAsLoop(link: ExposureLink, rows: readonly ExposureRow[], limit: number, dropped: Float64Array, slot = 0): ExposureRow[] {
  const queue = new Int32Array(link.queue);
  const before = Atomics.add(queue, QUEUED_ROWS, rows.length);
  const room = Math.max(0, Math.min(rows.length, limit - before));
  if (room < rows.length) {
    Atomics.sub(queue, QUEUED_ROWS, rows.length - room);
    dropped[slot]! += rows.length - room;
  }
  const sent = rows.slice(0, room);
  if (sent.length > 0) link.port.postMessage(batchOf(sent));
  return sent;
}
