/**
 * Where every counter lives in shared memory. Each delivery loop owns one Float64Array (its
 * `LoopCounters`) and the control thread one (`ServerCounters`); the main thread creates them all
 * once, hands each to its writer, and the metrics listener (src/metrics/registry.ts) reads them when
 * scraped. Writers only add to or store plain numbers: no message per request, no lock (one writer
 * per array; a scrape may read a counter one increment old, which Prometheus tolerates).
 */

/** Routes as counted (label `route`). */
export const enum MetricRoute {
  Config = 0,
  Dynamic = 1,
  Combine = 2,
  /** OpenFeature (OFREP) single-flag evaluation. */
  OfrepFlag = 3,
  /** OpenFeature (OFREP) bulk evaluation. */
  OfrepBulk = 4,
  Catalog = 5,
  Events = 6,
  EventsToken = 7,
  Healthz = 8,
  Readyz = 9,
  Preflight = 10,
  Other = 11,
}
export const ROUTE_NAMES = ['config', 'dynamic', 'combine', 'ofrep_flag', 'ofrep_bulk', 'catalog', 'events', 'events_token', 'healthz', 'readyz', 'preflight', 'other'] as const;

/** Status classes (label `status`); `none` is a request that ended without an answer (client gone). */
export const STATUS_NAMES = ['none', '2xx', '3xx', '4xx', '5xx'] as const;

/** What a request came to (label `outcome`). */
export const enum Outcome {
  /** Not a content answer (errors, catalog, health). */
  None = 0,
  /** Every item from the loop's front cache. */
  Hit = 1,
  /** At least one item rendered by the pool. */
  Miss = 2,
  NotModified = 3,
  /** 503 overloaded: the pool's pending-job bound was reached. */
  Overloaded = 4,
  Aborted = 5,
}
export const OUTCOME_NAMES = ['none', 'hit', 'miss', 'not_modified', 'overloaded', 'aborted'] as const;

/** Upper bounds (seconds) of the request latency and pool job histograms. */
export const LATENCY_BOUNDS_S = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;
/** The same bounds in milliseconds, as the hot path measures. */
const LATENCY_BOUNDS_MS = LATENCY_BOUNDS_S.map((s) => s * 1000);
/** Store writes and change-feed publishes take longer: their own bounds (seconds). */
export const SLOW_BOUNDS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
const SLOW_BOUNDS_MS = SLOW_BOUNDS_S.map((s) => s * 1000);

/** A histogram's slots: one per bound, one for +Inf (not cumulative), then the sum in seconds. */
export function histogramSlots(bounds: readonly number[]): number {
  return bounds.length + 2;
}

const ROUTES = ROUTE_NAMES.length;
const STATUSES = STATUS_NAMES.length;
const OUTCOMES = OUTCOME_NAMES.length;
/** Routes with a latency histogram: the content routes, the first five (the others answer from precompiled bytes). */
export const TIMED_ROUTES = 5;
const LATENCY_SLOTS = histogramSlots(LATENCY_BOUNDS_S);

// ---------------------------------------------------------------------------------------------
// A delivery loop's array.

// The hot path's slots and helpers below are this module's own consts, exported under other names:
// an exported binding lives in a module cell, and TurboFan reads the cell (and compares the function
// in it) before each use it inlines, in this module too, where a module's own const is folded into
// the code. Read through cells, a request's metrics would load a cell per slot, each a likely cache
// miss.
const REQUESTS_AT = 0;
const LATENCY_AT = REQUESTS_AT + ROUTES * STATUSES * OUTCOMES;
export const L_REQUESTS = REQUESTS_AT;
export const L_LATENCY = LATENCY_AT;
export const L_POOL_JOB = L_LATENCY + TIMED_ROUTES * LATENCY_SLOTS;
export const L_FRONT_HITS = L_POOL_JOB + LATENCY_SLOTS;
export const L_FRONT_MISSES = L_FRONT_HITS + 1;
/** Gauges the loop samples every second (src/delivery/loop.ts): cheaper than keeping them per request. */
export const L_FRONT_BYTES = L_FRONT_MISSES + 1;
export const L_FRONT_ENTRIES = L_FRONT_BYTES + 1;
export const L_POOL_PENDING = L_FRONT_ENTRIES + 1;
export const L_IN_FLIGHT = L_POOL_PENDING + 1;
export const L_STREAMS = L_IN_FLIGHT + 1;
export const L_APPLIED_SEQ = L_STREAMS + 1;
export const L_ACCESS_DROPPED = L_APPLIED_SEQ + 1;
/** Experiment exposures (src/exposures/recorder.ts): rows handed to the exposure writer, and rows dropped because its queue was full. */
export const L_EXPOSURES_NOTED = L_ACCESS_DROPPED + 1;
export const L_EXPOSURES_DROPPED = L_EXPOSURES_NOTED + 1;
const LOOP_SLOTS = L_EXPOSURES_DROPPED + 1;

export type LoopCounters = Float64Array;

export function newLoopCounters(): LoopCounters {
  return new Float64Array(new SharedArrayBuffer(LOOP_SLOTS * Float64Array.BYTES_PER_ELEMENT));
}

const slotOf = (route: MetricRoute, statusClass: number, outcome: Outcome): number => {
  return REQUESTS_AT + (route * STATUSES + statusClass) * OUTCOMES + outcome;
};

/** 200 → 1 (2xx) ... 503 → 4 (5xx); 0 (no answer) → 0. 200, nearly every answer, is decided first. */
const statusClassOf = (status: number): number => {
  if (status === 200) return 1;
  return status === 0 ? 0 : Math.min(4, Math.max(1, Math.floor(status / 100) - 1));
};

const count = (c: LoopCounters, route: MetricRoute, status: number, outcome: Outcome): void => {
  c[slotOf(route, statusClassOf(status), outcome)]! += 1;
};

export function requestSlot(route: MetricRoute, statusClass: number, outcome: Outcome): number {
  return slotOf(route, statusClass, outcome);
}

export function countRequest(c: LoopCounters, route: MetricRoute, status: number, outcome: Outcome): void {
  count(c, route, status, outcome);
}

/** Every request this loop has answered so far (all routes, status classes and outcomes). */
export function requestsAnswered(c: LoopCounters): number {
  let n = 0;
  for (let i = L_REQUESTS; i < L_LATENCY; i++) n += c[i]!;
  return n;
}

/** One observation of `ms` into the histogram at `base` (bounds in ms). A linear scan: 14 bounds. */
const observe = (c: Float64Array, base: number, boundsMs: readonly number[], ms: number): void => {
  let i = 0;
  const n = boundsMs.length;
  while (i < n && ms > boundsMs[i]!) i++;
  c[base + i]! += 1;
  c[base + n + 1]! += ms / 1000;
};

const latency = (c: LoopCounters, route: MetricRoute, ms: number): void => {
  observe(c, LATENCY_AT + route * LATENCY_SLOTS, LATENCY_BOUNDS_MS, ms);
};

export function observeLatency(c: LoopCounters, route: MetricRoute, ms: number): void {
  latency(c, route, ms);
}

/**
 * A timed request's end: its count and its latency in one call, with nothing exported in between (see
 * REQUESTS_AT): the delivery code reads this function's cell and no other.
 */
export function recordTimedRequest(c: LoopCounters, route: MetricRoute, status: number, outcome: Outcome, ms: number): void {
  count(c, route, status, outcome);
  latency(c, route, ms);
}

export function observePoolJob(c: LoopCounters, ms: number): void {
  observe(c, L_POOL_JOB, LATENCY_BOUNDS_MS, ms);
}

// ---------------------------------------------------------------------------------------------
// The server's array: written by the control thread, except the phase (main thread).

/** Store operations timed (label `operation`): the Store methods that write. */
export const STORE_WRITES = [
  'putEnvironment',
  'deleteEnvironment',
  'createKey',
  'revokeKey',
  'recordKeyUse',
  'putContent',
  'deleteContent',
  'rollback',
  'putMapping',
  'deleteMapping',
  'sync',
  'importBundle',
  'importPrepared',
  'pruneChanges',
  'heartbeat',
  'writeStep',
] as const;
export type StoreWrite = (typeof STORE_WRITES)[number];
const SLOW_SLOTS = histogramSlots(SLOW_BOUNDS_S);

/** Where the server is in its life, for /readyz. */
export const enum Phase {
  Starting = 0,
  Serving = 1,
  Draining = 2,
}
export const S_PHASE = 0;
/** Date.now() when the store became unreachable, 0 while it is reachable. */
export const S_STORE_DOWN_SINCE = 1;
export const S_APPLIED_SEQ = 2;
export const S_WEBHOOK_BACKLOG = 3;
export const S_WEBHOOK_FAILED = 4;
export const S_WEBHOOK_DELIVERED = 5;
export const S_WEBHOOK_DROPPED = 6;
export const S_STORE_WRITE = 7;
export const S_STORE_ERRORS = S_STORE_WRITE + STORE_WRITES.length * SLOW_SLOTS;
export const S_PUBLISH = S_STORE_ERRORS + STORE_WRITES.length;
/** Scheduled changes: not settled (whole store, sampled by the node holding the applier's lease), applied and failed here, lateness. */
export const S_SCHEDULE_OPEN = S_PUBLISH + SLOW_SLOTS;
export const S_SCHEDULE_APPLIED = S_SCHEDULE_OPEN + 1;
export const S_SCHEDULE_FAILED = S_SCHEDULE_APPLIED + 1;
export const S_SCHEDULE_LATENESS = S_SCHEDULE_FAILED + 1;
const SERVER_SLOTS = S_SCHEDULE_LATENESS + SLOW_SLOTS;

export type ServerCounters = Float64Array;

export function newServerCounters(): ServerCounters {
  return new Float64Array(new SharedArrayBuffer(SERVER_SLOTS * Float64Array.BYTES_PER_ELEMENT));
}

export function observeStoreWrite(c: ServerCounters, op: number, ms: number, failed: boolean): void {
  observe(c, S_STORE_WRITE + op * SLOW_SLOTS, SLOW_BOUNDS_MS, ms);
  if (failed) c[S_STORE_ERRORS + op]! += 1;
}

export function observePublish(c: ServerCounters, ms: number): void {
  observe(c, S_PUBLISH, SLOW_BOUNDS_MS, ms);
}

export function observeScheduleLateness(c: ServerCounters, ms: number): void {
  observe(c, S_SCHEDULE_LATENESS, SLOW_BOUNDS_MS, Math.max(0, ms));
}

// ---------------------------------------------------------------------------------------------
// The exposure writer's array (src/exposures/writer-thread.ts), present with --exposures.

/** Players first recorded (rows inserted) by this node's writer. */
export const EXPOSURE_ROWS_WRITTEN = 0;
/** Recorded players whose `moved_to` this writer set (an exposure to another variant than their row's). */
export const EXPOSURE_PLAYERS_MOVED = 1;
/** Writes (one transaction of up to 5,000 rows) that failed and were retried. */
export const EXPOSURE_WRITE_FAILURES = 2;
/** Rows the writer holds, received from the loops and not written yet. */
export const EXPOSURE_QUEUE_ROWS = 3;
const EXPOSURE_SLOTS = EXPOSURE_QUEUE_ROWS + 1;

export type ExposureCounters = Float64Array;

export function newExposureCounters(): ExposureCounters {
  return new Float64Array(new SharedArrayBuffer(EXPOSURE_SLOTS * Float64Array.BYTES_PER_ELEMENT));
}
