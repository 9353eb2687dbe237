/**
 * Every message between the main thread and the metrics thread (src/metrics/thread.ts); both sides
 * import this module and nothing else crosses between them.
 */
import type { LoopCounters, ServerCounters } from './layout.js';

/** The metrics thread's workerData: the shared arrays it reads, and where to listen. */
export interface MetricsInit {
  readonly host: string;
  readonly port: number;
  readonly loops: readonly LoopCounters[];
  readonly server: ServerCounters;
}

/** Main thread → metrics thread. */
export type MetricsCommand = { readonly type: 'stop' };

/** Metrics thread → main thread: bound (with the port, for port 0), or could not bind; `stopped` after a stop. */
export type MetricsEvent =
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'stopped' };
