/**
 * Every message between the main thread and a delivery loop running in a worker thread
 * (src/delivery/loop-thread.ts); both sides import this module and nothing else crosses between them.
 * Routing updates do not pass here: each loop has its own feed from the control thread
 * (src/control/protocol.ts), given at creation.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ServeConfig } from '../runtime/config.js';
import type { TlsMaterial } from '../runtime/tls.js';
import type { LoopCounters, ServerCounters } from '../metrics/layout.js';
import type { ExposureLink } from '../exposures/protocol.js';

/** The loop thread's workerData. */
export interface LoopInit {
  /** 1..httpThreads-1 (loop 0 is the main thread's). */
  readonly index: number;
  readonly config: ServeConfig;
  /** This loop's end of its feed from the control thread (transferred). */
  readonly feed: MessagePort;
  /** Hold V8's young generation in this thread too (src/runtime/heap.ts: a new thread resets the flag). */
  readonly holdYoungGeneration: boolean;
  /** This loop's counters and the server's (shared memory: the metrics listener reads them). */
  readonly counters: LoopCounters;
  readonly server: ServerCounters;
  /** This loop's link to the exposure writer (its port transferred, the queue counter shared), or null when exposures are off. */
  readonly exposures: ExposureLink | null;
}

export type LoopCommand =
  /**
   * As soon as the store is open: set the thread's nice value to `nice` (null: leave it) and start
   * the pool share, whose workers open `readerUrl`; answered by `pool-started` or `failed`.
   */
  | { readonly type: 'start-pool'; readonly readerUrl: string; readonly nice: number | null }
  /**
   * Once every feed holds the first directory: bind `port` (claimed by the main thread) with
   * SO_REUSEPORT, serving HTTPS with `tls` when it is not null; answered by `listening` or `failed`.
   */
  | { readonly type: 'start'; readonly port: number; readonly tls: TlsMaterial | null }
  /** Serve `material` to new connections (certificate rotation); answered by `tls-rotated` with the same id. */
  | { readonly type: 'rotate-tls'; readonly id: number; readonly material: TlsMaterial }
  /** Answers carry Connection: close and /healthz says 503 from now on; not answered. */
  | { readonly type: 'shutting-down' }
  /** Stop accepting, drain, close connections, stop the pool share (whichever of these started); answered by `stopped`, then the thread ends. */
  | { readonly type: 'stop' }
  /** The main thread failed: close the sockets at once (no drain) and end the thread. */
  | { readonly type: 'abandon' };

export type LoopEvent =
  | { readonly type: 'pool-started' }
  | { readonly type: 'listening' }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'stopped' }
  /** `changed` false: it served that certificate already; `error` non-null: it keeps the previous one. */
  | { readonly type: 'tls-rotated'; readonly id: number; readonly changed: boolean; readonly error: string | null }
  /** An uncaught failure on the loop: the thread ends with a non-zero code right after. */
  | { readonly type: 'crashed'; readonly message: string };
