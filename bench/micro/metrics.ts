/**
 * Micro-benchmark: what the metrics cost a delivery request (src/metrics/layout.ts). Rows: the
 * shared-array increments one content request makes (its request counter and its latency
 * histogram), the same figures through prom-client's own Counter and Histogram (a labelled inc and
 * observe: what using the library on the hot path would cost), and the clock reads a request makes
 * for its latency: two of the server's clock (src/metrics/clock.ts, process.hrtime) beside two
 * performance.now(), which it replaced.
 *
 * Run: `node dist/bench/micro/metrics.js` (after `npm run build`); prints a table.
 */
import { pathToFileURL } from 'node:url';
import { Counter, Histogram, Registry } from 'prom-client';
import { LATENCY_BOUNDS_S, MetricRoute, OUTCOME_NAMES, Outcome, ROUTE_NAMES, countRequest, newLoopCounters, observeLatency } from '../../src/metrics/layout.js';
import { nowMs } from '../../src/metrics/clock.js';
import { formatTable, measure, type Row } from './measure.js';

/** Latencies (ms) as the mapped scenario sees them on a hit or a miss. */
const LATENCIES = Array.from({ length: 1024 }, (_, i) => 0.05 + ((i * 37) % 1000) / 400);

export function runMetricsMicro(minMs?: number): Row[] {
  const mask = 1023;
  const counters = newLoopCounters();
  const registry = new Registry();
  const requests = new Counter({ name: 'r_total', help: 'r', labelNames: ['route', 'status', 'outcome'], registers: [registry] });
  const latency = new Histogram({ name: 'r_seconds', help: 'r', labelNames: ['route'], buckets: [...LATENCY_BOUNDS_S], registers: [registry] });
  const route = ROUTE_NAMES[MetricRoute.Config];
  const outcome = OUTCOME_NAMES[Outcome.Hit];
  return [
    measure('shared array: request counter + latency histogram (this server)', (i) => {
      countRequest(counters, MetricRoute.Config, 200, Outcome.Hit);
      observeLatency(counters, MetricRoute.Config, LATENCIES[i & mask]!);
      return counters[0];
    }, minMs),
    measure('prom-client: Counter.inc + Histogram.observe with labels', (i) => {
      requests.inc({ route, status: '2xx', outcome });
      latency.observe({ route }, LATENCIES[i & mask]! / 1000);
      return i;
    }, minMs),
    measure('two reads of the clock (the latency of one request: metrics/clock.ts)', () => nowMs() - nowMs(), minMs),
    measure('two performance.now() (what it replaced)', () => performance.now() - performance.now(), minMs),
  ];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(formatTable('Metrics on the request path', runMetricsMicro()));
}
