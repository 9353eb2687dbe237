/**
 * Every message between the main thread and the metrics thread (src/metrics/thread.ts); both sides
 * import this module and nothing else crosses between them.
 */
import type { LogSettings } from '../runtime/log.js';
import type { TlsFiles } from '../runtime/config.js';
import type { TlsMaterial } from '../runtime/tls.js';
import type { ExposureCounters, LoopCounters, ServerCounters } from './layout.js';
import type { ExposureSource } from '../exposures/reader.js';

/** The metrics thread's workerData: the shared arrays it reads, and where and how to listen. */
export interface MetricsInit {
  readonly host: string;
  readonly port: number;
  readonly loops: readonly LoopCounters[];
  readonly server: ServerCounters;
  /** The exposure writer's counters (--exposures), or null. */
  readonly exposures: ExposureCounters | null;
  /** HTTPS: the files (read again on reload-tls) and what the start checked and loaded from them; null: HTTP. */
  readonly tls: { readonly files: TlsFiles; readonly material: TlsMaterial } | null;
  /** The thread writes its own log lines (reloads) with these settings. */
  readonly log: LogSettings;
  /** The exposure database (--exposures) whose counts rcd_experiment_players reads; none when null or absent. */
  readonly exposureSource?: ExposureSource | null;
}

/** Main thread → metrics thread: stop; read the certificate files again (SIGHUP or a file change). */
export type MetricsCommand = { readonly type: 'stop' } | { readonly type: 'reload-tls' };

/** Metrics thread → main thread: bound (with the port, for port 0), or could not bind; `stopped` after a stop. */
export type MetricsEvent =
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'stopped' };
