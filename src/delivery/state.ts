/**
 * What the front end's handlers share: the current routing directory (updated in place by deltas,
 * replaced whole by a snapshot), the batcher, limits, and the in-flight count that graceful
 * shutdown waits on.
 */
import type { ServeConfig } from '../runtime/config.js';
import type { Directory } from './directory.js';
import type { Batcher } from '../pool/batcher.js';
import type { FrontCache } from './front-cache.js';
import type { PlanCache } from './combine-plan.js';
import type { HttpPolicy } from './http-policy.js';
import type { EventStreams } from './events.js';
import type { LoopCounters, ServerCounters } from '../metrics/layout.js';
import type { AccessSampler } from './access-log.js';
import type { KeyUse } from './key-use.js';
import type { RequestScratch } from './request-scratch.js';
import type { ExposureRecorder } from '../exposures/recorder.js';

export interface FrontEndState {
  directory: Directory;
  readonly batcher: Batcher;
  /** Rendered heads by immutable ids: repeats are answered without the pool. */
  readonly frontCache: FrontCache;
  /** Prepared combine answers (combine-plan.ts), bounded by bytes like the front cache. */
  readonly combinePlans: PlanCache;
  readonly config: ServeConfig;
  /** Which delivery loop this is (0: the main thread's), reported by /healthz. */
  readonly loop: number;
  /** Headers the configuration decides (CORS, Vary, compression threshold), compiled at start. */
  readonly http: HttpPolicy;
  /** Open change streams of this loop; told by the feed when an update was applied. */
  readonly events: EventStreams;
  /** Requests accepted and not yet answered or aborted. */
  inFlight: number;
  /** Set on SIGTERM: answers carry Connection: close so keep-alive clients move to another node. */
  shuttingDown: boolean;
  /** False once the store's files were deleted or replaced: /healthz says so (delivery goes on). */
  storeAvailable: boolean;
  /** Keys seen since the last report to the control thread (last-use bookkeeping, key-use.ts). */
  readonly keyUse: KeyUse;
  /** This loop's counters for the metrics (src/metrics/layout.ts): only plain numbers are added on the request path. */
  readonly counters: LoopCounters;
  /** The server's shared counters: read by /readyz (phase, store outage). */
  readonly server: ServerCounters;
  /** The sampled access log (--access-log), or null when it is off. */
  readonly access: AccessSampler | null;
  /** Experiment exposures this loop notes for the writer (--exposures), or null when they are off: the request path tests this alone. */
  readonly exposures: ExposureRecorder | null;
  /** Arrays reused by the request this loop is handling (request-scratch.ts). */
  readonly scratch: RequestScratch;
  /** Called once for each unexpected failure (logged, never sent to the client). */
  readonly onInternalError: (err: unknown) => void;
}
