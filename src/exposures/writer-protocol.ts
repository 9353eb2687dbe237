/**
 * Every message between the main thread and the exposure writer thread (writer-thread.ts); both
 * sides import this module. The loops' batches are not here: they come on the loops' own ports
 * (protocol.ts).
 */
import type { MessagePort } from 'node:worker_threads';
import type { LogSettings } from '../runtime/log.js';
import type { ExposureCounters } from '../metrics/layout.js';
import type { ExposuresKind } from './url.js';

/** Where the writer reads how many rows the loops dropped: a slot of each loop's counters. */
export interface DropCounters {
  readonly counters: readonly Float64Array[];
  readonly slot: number;
}

/** The writer thread's workerData. */
export interface WriterInit {
  readonly kind: ExposuresKind;
  readonly url: string;
  /** The writer's ends of the loops' exposure ports, one per loop (transferred). */
  readonly ports: readonly MessagePort[];
  /** The shared queue counter (protocol.ts QUEUED_ROWS). */
  readonly queue: SharedArrayBuffer;
  /** The writer's own counters, read by the metrics thread. */
  readonly counters: ExposureCounters;
  /** The loops' dropped-row counters, summed for the once-a-minute drop line; null: none to read. */
  readonly drops: DropCounters | null;
  /** How often the drop line may be logged (a minute; tests shorten it). */
  readonly dropLogMs: number;
  readonly log: LogSettings;
}

/** Main thread → writer: write what is held (and what the ports still hold) for at most `timeoutMs`, then close and end. */
export type WriterCommand = { readonly type: 'stop'; readonly timeoutMs: number };

/**
 * Writer → main thread: `ready` once it listens on the ports (the database may still be
 * unreachable: it is opened and retried in the background), `failed` when it cannot run at all,
 * `stopped` after a stop with what it wrote and what it had to leave.
 */
export type WriterEvent =
  | { readonly type: 'ready' }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'stopped'; readonly left: number };
