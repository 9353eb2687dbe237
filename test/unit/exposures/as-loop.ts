/**
 * A delivery loop's side of the exposure protocol, done by hand for tests of the writer thread: rows
 * become an ExposureBatch, reserved on the shared QUEUED_ROWS counter before they are posted, and
 * what would pass the queue bound is dropped and counted, as src/exposures/protocol.ts says a loop
 * does. The writer thread and its client run compiled from dist/ (worker threads run JavaScript).
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { QUEUED_ROWS, type ExposureBatch } from '../../../src/exposures/protocol.js';
import type { ExposureRow } from '../../../src/exposures/db.js';
import type { ExposureLink } from '../../../src/exposures/protocol.js';
import type { ExposureWriterThread } from '../../../src/exposures/writer-client.js';

const dist = process.env.RCD_TEST_DIST ?? fileURLToPath(new URL('../../../dist', import.meta.url));

/** The compiled writer client (its thread is dist/src/exposures/writer-thread.js). */
export async function writerClient(): Promise<typeof ExposureWriterThread> {
  const m = (await import(pathToFileURL(`${dist}/src/exposures/writer-client.js`).href)) as { ExposureWriterThread: typeof ExposureWriterThread };
  return m.ExposureWriterThread;
}

export function batchOf(rows: readonly ExposureRow[]): ExposureBatch {
  return {
    type: 'exposures',
    environments: rows.map((r) => r.environment),
    experiments: rows.map((r) => r.experiment),
    variants: rows.map((r) => r.variant),
    players: rows.map((r) => r.player),
    appVersions: rows.map((r) => r.appVersion),
    dimensions: rows.map((r) => r.dimensions),
    at: Float64Array.from(rows.map((r) => r.atMs)),
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
