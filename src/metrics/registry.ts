/**
 * The Prometheus registry (prom-client): every metric reads the shared counter arrays
 * (src/metrics/layout.ts) when scraped, so nothing is sent or computed per request. Process metrics
 * are prom-client's default collectors, run in the metrics thread: CPU, resident memory and file
 * descriptors are the process's; heap, GC and event-loop figures are that thread's own.
 * docs/metrics.md describes each one.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';
import {
  EXPOSURE_PLAYERS_MOVED,
  EXPOSURE_QUEUE_ROWS,
  EXPOSURE_ROWS_WRITTEN,
  EXPOSURE_WRITE_FAILURES,
  L_ACCESS_DROPPED,
  L_APPLIED_SEQ,
  L_EXPOSURES_DROPPED,
  L_EXPOSURES_NOTED,
  L_FRONT_BYTES,
  L_FRONT_ENTRIES,
  L_FRONT_HITS,
  L_FRONT_MISSES,
  L_IN_FLIGHT,
  L_LATENCY,
  L_POOL_JOB,
  L_POOL_PENDING,
  L_STREAMS,
  LATENCY_BOUNDS_S,
  OUTCOME_NAMES,
  ROUTE_NAMES,
  S_APPLIED_SEQ,
  S_PUBLISH,
  S_SCHEDULE_APPLIED,
  S_SCHEDULE_FAILED,
  S_SCHEDULE_LATENESS,
  S_SCHEDULE_OPEN,
  S_STORE_DOWN_SINCE,
  S_STORE_ERRORS,
  S_STORE_WRITE,
  S_WEBHOOK_BACKLOG,
  S_WEBHOOK_DELIVERED,
  S_WEBHOOK_DROPPED,
  S_WEBHOOK_FAILED,
  SLOW_BOUNDS_S,
  STATUS_NAMES,
  STORE_WRITES,
  TIMED_ROUTES,
  histogramSlots,
  requestSlot,
  type ExposureCounters,
  type LoopCounters,
  type ServerCounters,
} from './layout.js';
import type { ExposureTotals } from '../exposures/count-rows.js';
import { experimentPlayersMetric } from './experiment-players.js';

type Labels = Record<string, string | number>;
interface Sample {
  readonly labels: Labels;
  readonly value: number;
  readonly metricName?: string;
}
interface MetricValue {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly values: Sample[];
  readonly aggregator: 'sum';
}

/**
 * A metric whose samples are computed from the shared arrays at scrape time. prom-client's own
 * Counter/Histogram classes keep their values in their own maps, which would mean copying every
 * series into them per scrape; its registry takes any object with get().
 */
class SharedMetric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
    private readonly read: () => Sample[],
  ) {}

  get(): MetricValue {
    return { name: this.name, help: this.help, type: this.type, values: this.read(), aggregator: 'sum' };
  }
}

/** Histogram samples (cumulative buckets, sum, count) from the slots at `base`. */
function histogramSamples(name: string, c: Float64Array, base: number, bounds: readonly number[], labels: Labels, out: Sample[]): void {
  let cumulative = 0;
  for (let i = 0; i < bounds.length; i++) {
    cumulative += c[base + i]!;
    out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: bounds[i]! }, value: cumulative });
  }
  cumulative += c[base + bounds.length]!;
  out.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: cumulative });
  out.push({ metricName: `${name}_sum`, labels, value: c[base + bounds.length + 1]! });
  out.push({ metricName: `${name}_count`, labels, value: cumulative });
}

function perLoop(loops: readonly LoopCounters[], slot: number): Sample[] {
  return loops.map((c, loop) => ({ labels: { loop }, value: c[slot]! }));
}

/**
 * The period of the sampling timer behind prom-client's event-loop-lag figures (its default is 10 ms).
 * They describe this metrics thread's own loop, which only answers scrapes, and each sample is a
 * wake-up of the thread: a 10 ms timer keeps an idle server's core busier than it needs to be. At
 * 100 ms a 15 s scrape interval still holds 150 samples for the percentiles.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

export function metricsRegistry(loops: readonly LoopCounters[], server: ServerCounters, exposures: ExposureCounters | null = null, experiments: ExposureTotals | null = null): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const add = (name: string, help: string, type: 'counter' | 'gauge' | 'histogram', read: () => Sample[]): void => {
    registry.registerMetric(new SharedMetric(name, help, type, read) as never);
  };

  add('rcd_http_requests_total', 'Delivery requests answered (or ended without an answer: status "none"), by route, status class and outcome, summed over the delivery loops.', 'counter', () => {
    const out: Sample[] = [];
    for (let route = 0; route < ROUTE_NAMES.length; route++) {
      for (let status = 0; status < STATUS_NAMES.length; status++) {
        for (let outcome = 0; outcome < OUTCOME_NAMES.length; outcome++) {
          const slot = requestSlot(route, status, outcome);
          let v = 0;
          for (const c of loops) v += c[slot]!;
          // Series never seen stay absent: 300 combinations, most of which cannot happen.
          if (v > 0) out.push({ labels: { route: ROUTE_NAMES[route]!, status: STATUS_NAMES[status]!, outcome: OUTCOME_NAMES[outcome]! }, value: v });
        }
      }
    }
    return out;
  });
  add('rcd_http_request_duration_seconds', 'Content requests (config, dynamic, combine, ofrep_flag, ofrep_bulk): from the route handler to the answer written, on the delivery loop.', 'histogram', () => {
    const out: Sample[] = [];
    const slots = histogramSlots(LATENCY_BOUNDS_S);
    const sum = new Float64Array(slots);
    for (let route = 0; route < TIMED_ROUTES; route++) {
      sum.fill(0);
      for (const c of loops) for (let i = 0; i < slots; i++) sum[i]! += c[L_LATENCY + route * slots + i]!;
      histogramSamples('rcd_http_request_duration_seconds', sum, 0, LATENCY_BOUNDS_S, { route: ROUTE_NAMES[route]! }, out);
    }
    return out;
  });
  add('rcd_front_cache_hits_total', 'Items answered from a delivery loop\'s front cache of rendered heads.', 'counter', () => perLoop(loops, L_FRONT_HITS));
  add('rcd_front_cache_misses_total', 'Items the front cache did not hold (sent to the render pool).', 'counter', () => perLoop(loops, L_FRONT_MISSES));
  add('rcd_front_cache_bytes', 'Bytes held by each loop\'s front cache (sampled every second).', 'gauge', () => perLoop(loops, L_FRONT_BYTES));
  add('rcd_front_cache_entries', 'Rendered heads held by each loop\'s front cache (sampled every second).', 'gauge', () => perLoop(loops, L_FRONT_ENTRIES));
  add('rcd_pool_pending_jobs', 'Render jobs queued or running for each loop\'s pool share (sampled every second); --max-pending / loops is the bound past which requests answer 503 overloaded.', 'gauge', () => perLoop(loops, L_POOL_PENDING));
  add('rcd_pool_batch_duration_seconds', 'Round trip of one batch of render jobs to the pool (a batch holds one event-loop turn\'s misses).', 'histogram', () => {
    const out: Sample[] = [];
    loops.forEach((c, loop) => histogramSamples('rcd_pool_batch_duration_seconds', c, L_POOL_JOB, LATENCY_BOUNDS_S, { loop }, out));
    return out;
  });
  add('rcd_http_in_flight_requests', 'Content requests accepted and not yet answered, per loop (sampled every second).', 'gauge', () => perLoop(loops, L_IN_FLIGHT));
  add('rcd_event_streams', 'Open change streams (SSE), per loop (sampled every second).', 'gauge', () => perLoop(loops, L_STREAMS));
  add('rcd_loop_applied_seq', 'Change-log sequence each loop\'s routing directory applied (sampled every second).', 'gauge', () => perLoop(loops, L_APPLIED_SEQ));
  add('rcd_access_log_dropped_total', 'Sampled access-log records dropped because the loop already held --access-log-buffer of them between two reports.', 'counter', () => perLoop(loops, L_ACCESS_DROPPED));
  add('rcd_exposures_total', 'Experiment exposure rows each delivery loop handed to the exposure writer (--exposures): first exposures, and exposures its repeat filter did not hold.', 'counter', () => perLoop(loops, L_EXPOSURES_NOTED));
  add('rcd_exposures_dropped_total', 'Experiment exposure rows a delivery loop dropped because the exposure writer already held --exposure-queue rows (the exposure database down or slow).', 'counter', () => perLoop(loops, L_EXPOSURES_DROPPED));
  add('rcd_feed_applied_seq', 'Change-log sequence every loop of this node applied (what the node records as its heartbeat).', 'gauge', () => [{ labels: {}, value: server[S_APPLIED_SEQ]! }]);
  add('rcd_feed_publish_duration_seconds', 'From reading new change-log entries to every loop having applied them: the apply lag of one update.', 'histogram', () => {
    const out: Sample[] = [];
    histogramSamples('rcd_feed_publish_duration_seconds', server, S_PUBLISH, SLOW_BOUNDS_S, {}, out);
    return out;
  });
  add('rcd_store_available', '1 while the store is reachable, 0 while it is not (delivery goes on from the last good state).', 'gauge', () => [{ labels: {}, value: server[S_STORE_DOWN_SINCE] === 0 ? 1 : 0 }]);
  add('rcd_store_unavailable_seconds', 'How long the store has been unreachable (0 while reachable).', 'gauge', () => {
    const since = server[S_STORE_DOWN_SINCE]!;
    return [{ labels: {}, value: since === 0 ? 0 : Math.max(0, (Date.now() - since) / 1000) }];
  });
  add('rcd_store_write_duration_seconds', 'Store writes by operation, from the call to its result (validation included).', 'histogram', () => {
    const out: Sample[] = [];
    const slots = histogramSlots(SLOW_BOUNDS_S);
    STORE_WRITES.forEach((op, i) => {
      // Operations never run stay absent (most nodes never sync or import).
      if (countOf(server, S_STORE_WRITE + i * slots, SLOW_BOUNDS_S.length) === 0) return;
      histogramSamples('rcd_store_write_duration_seconds', server, S_STORE_WRITE + i * slots, SLOW_BOUNDS_S, { operation: op }, out);
    });
    return out;
  });
  add('rcd_store_write_errors_total', 'Store writes that failed for the store\'s sake (unreachable, busy, unexpected), not for bad input.', 'counter', () =>
    STORE_WRITES.map((op, i) => ({ labels: { operation: op }, value: server[S_STORE_ERRORS + i]! })),
  );
  add('rcd_webhook_backlog', 'Webhook deliveries waiting in the store outbox (every node of the store).', 'gauge', () => [{ labels: {}, value: server[S_WEBHOOK_BACKLOG]! }]);
  add('rcd_webhook_failures_total', 'Webhook deliveries this process dead-lettered (retries exhausted, or refused for good).', 'counter', () => [{ labels: {}, value: server[S_WEBHOOK_FAILED]! }]);
  add('rcd_webhook_delivered_total', 'Webhook deliveries a receiver accepted.', 'counter', () => [{ labels: {}, value: server[S_WEBHOOK_DELIVERED]! }]);
  add('rcd_webhook_dropped_total', 'Webhook deliveries dropped because their webhook was deleted.', 'counter', () => [{ labels: {}, value: server[S_WEBHOOK_DROPPED]! }]);
  add('rcd_schedule_pending', 'Scheduled changes not applied yet (pending or paused) in the whole store; kept by the node that holds the applier\'s lease (0 on the others).', 'gauge', () => [
    { labels: {}, value: server[S_SCHEDULE_OPEN]! },
  ]);
  add('rcd_schedule_applied_total', 'Scheduled changes this node applied.', 'counter', () => [{ labels: {}, value: server[S_SCHEDULE_APPLIED]! }]);
  add('rcd_schedule_failed_total', 'Scheduled changes this node found invalid at their time and marked failed (nothing of them written).', 'counter', () => [
    { labels: {}, value: server[S_SCHEDULE_FAILED]! },
  ]);
  add('rcd_schedule_lateness_seconds', 'From a scheduled change\'s due time (the store\'s clock) to every live node serving it, per change this node applied.', 'histogram', () => {
    const out: Sample[] = [];
    histogramSamples('rcd_schedule_lateness_seconds', server, S_SCHEDULE_LATENESS, SLOW_BOUNDS_S, {}, out);
    return out;
  });
  if (exposures !== null) addExposureWriterMetrics(add, exposures);
  // Experiments: read from the exposure database at scrape, not from the shared arrays (experiment-players.ts).
  if (experiments !== null) registry.registerMetric(experimentPlayersMetric(experiments) as never);
  return registry;
}

/** The exposure writer's figures (--exposures only). */
function addExposureWriterMetrics(add: (name: string, help: string, type: 'counter' | 'gauge', read: () => Sample[]) => void, c: ExposureCounters): void {
  const one = (slot: number) => (): Sample[] => [{ labels: {}, value: c[slot]! }];
  add('rcd_exposure_rows_written_total', 'Rows this node\'s exposure writer inserted: players first exposed to an experiment.', 'counter', one(EXPOSURE_ROWS_WRITTEN));
  add('rcd_exposure_players_moved_total', 'Recorded players whose moved_to this node\'s writer set: exposed to another variant than their first.', 'counter', one(EXPOSURE_PLAYERS_MOVED));
  add('rcd_exposure_write_failures_total', 'Exposure writes (one transaction each) that failed; their rows stay held and are written again.', 'counter', one(EXPOSURE_WRITE_FAILURES));
  add('rcd_exposure_queue_rows', 'Exposure rows the writer holds, received from the delivery loops and not written yet.', 'gauge', one(EXPOSURE_QUEUE_ROWS));
}

function countOf(c: Float64Array, base: number, bounds: number): number {
  let n = 0;
  for (let i = 0; i <= bounds; i++) n += c[base + i]!;
  return n;
}
