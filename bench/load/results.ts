/**
 * The result model of the load suite (`npm run bench`): what a run records in its JSON file, read back
 * by bench:compare, bench:verdict and the charts.
 */
import type { RssSample } from '../harness/measure.js';
import type { WrkPass } from '../harness/wrk.js';

export interface LatencyMs {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

/** One autocannon run against one target (the real server or the ceiling). */
export interface RunStats {
  readonly requests: number;
  readonly durationSec: number;
  readonly reqPerSec: number;
  readonly latencyMs: LatencyMs;
  readonly throughputBytesPerSec: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly mismatches: number;
  readonly statusCodes: Readonly<Record<string, number>>;
  /** Target process CPU (user+system, all threads) divided by completed requests, microseconds. */
  readonly cpuUsPerReq: number | null;
  /** Target process CPU over the run, in cores (1.0 = one core busy the whole time). */
  readonly cpuCores: number;
  readonly peakRssBytes: number;
  /** True when VmHWM was reset before the run, so peakRssBytes is this run's peak and not the process's. */
  readonly peakRssIsPerRun: boolean;
  readonly rssStartBytes: number;
  readonly rssAt10sBytes: number | null;
  readonly rssEndBytes: number;
  readonly rssSamples: readonly RssSample[];
  readonly clientCores: number;
  readonly clientBound: boolean;
}

export interface ScenarioResult {
  /** name, or name@Nt when several server thread counts were run. */
  readonly key: string;
  readonly name: string;
  /** Scenario number (`--scenario` accepts it beside the name). */
  readonly number: number;
  readonly title: string;
  readonly threads: number | null;
  /** Delivery loops of the server (and of the ceiling), or null for the server's default; absent in older results. */
  readonly httpThreads?: number | null;
  readonly connections: number;
  readonly server: RunStats;
  readonly ceiling: RunStats;
  /** server req/s / ceiling req/s. */
  readonly ratio: number | null;
  /** ceiling CPU per request / server CPU per request. */
  readonly cpuEfficiency: number | null;
  /** Response-body size the ceiling was configured with (taken from a real server answer). */
  readonly bodyBytes: number;
  /** The --wrk latency pass (same requests, same connections, sent by wrk); null when not run. */
  readonly wrk: WrkPass | null;
  readonly problems: readonly string[];
}

/** The load settings of a run, as given on the command line and recorded with its results. */
export interface RunOptions {
  readonly durationSec: number;
  readonly warmupSec: number;
  readonly connections: number;
  readonly threads: readonly (number | null)[];
  /** Absent in results recorded before the option existed. */
  readonly httpThreads?: readonly (number | null)[];
  readonly workers: number;
  readonly smoke: boolean;
}

/** What stands in the "server" column: rcd, a second ceiling (calibration), or the floor (bench/harness/ceiling.ts). */
export type BenchTarget = 'server' | 'ceiling' | 'floor';

export interface BenchResults {
  readonly version: 1;
  readonly date: string;
  readonly host: string;
  readonly node: string;
  readonly cpus: { readonly model: string; readonly count: number };
  readonly loadavgAtStart: readonly number[];
  /**
   * 'server' normally; 'ceiling' for calibration runs (ceiling against ceiling: ratios show the noise
   * floor); 'floor' when the floor stood in for the server (ratios show the most any server can reach).
   */
  readonly target: BenchTarget;
  readonly options: RunOptions;
  readonly scenarios: ScenarioResult[];
  readonly ok: boolean;
}
