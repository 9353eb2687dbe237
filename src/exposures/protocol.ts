/**
 * Every message between a delivery loop and the exposure writer thread (src/exposures/): the
 * exposures a loop noted since its last send, as columns, and the one shared counter a loop reads
 * before it queues more. Both sides import this module and nothing else of each other.
 */
import type { MessagePort } from 'node:worker_threads';

/**
 * Exposures a loop noted, one row per index of `players` and of every column. A row is (environment,
 * experiment, player): the player's `u` exactly as sent, the variant the rules chose, the node's clock
 * when the answer was given, the app version `v` (none without one) and the dimensions named by
 * --exposure-dimensions as one JSON object text (`{}` when none is named or present).
 *
 * The players are strings; every other text of a row (its environment, experiment, variant, app
 * version and dimensions) is an index into `texts`, which holds each such text of the batch once:
 * a batch repeats a few names over many rows, and a message copies each string it holds.
 */
export interface ExposureBatch {
  readonly type: 'exposures';
  readonly texts: readonly string[];
  readonly players: readonly string[];
  readonly environments: Int32Array;
  readonly experiments: Int32Array;
  readonly variants: Int32Array;
  /** NO_TEXT for a row without an app version. */
  readonly appVersions: Int32Array;
  readonly dimensions: Int32Array;
  /** Milliseconds since the epoch, the loop's clock when it answered. */
  readonly at: Float64Array;
}

/** The index of no text (a row without an app version). */
export const NO_TEXT = -1;

/** What a loop is given to record exposures (src/server.ts makes one per loop): its port to the writer and the writer's queue counter. */
export interface ExposureLink {
  readonly port: MessagePort;
  /** QUEUE_SLOTS Int32 slots (QUEUED_ROWS), shared by every loop and the writer. */
  readonly queue: SharedArrayBuffer;
}

/** Messages a loop sends on its exposure port. */
export type ExposureMessage = ExposureBatch;

/**
 * The writer's queue as the loops see it: one Int32 on a SharedArrayBuffer that the writer keeps at
 * the number of rows it holds (received, not yet written). A loop adds its batch's rows before it
 * posts (Atomics.add) and drops what would pass --exposure-queue, counting it; the writer subtracts
 * what it wrote or dropped.
 */
export const QUEUED_ROWS = 0;
export const QUEUE_SLOTS = 1;
