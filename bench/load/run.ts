/**
 * `npm run bench [-- --scenario NAME[,NAME] --duration S --connections N --threads N[,N] --http-threads N[,N] --workers N --smoke]`
 *
 * Seeds a temporary SQLite store from bench/fixtures, starts the real server (`bin/rcd.js serve`) and the
 * bare-uWS ceiling (bench/harness/ceiling.js) as child processes, probes every scenario in depth, then drives the
 * ceiling and the server with the same autocannon load, one right after the other, so that each scenario
 * reports ratios measured side by side. Everything it starts is stopped and its temp dir removed on
 * success, failure, Ctrl-C and SIGTERM.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, cpus, hostname, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultThreads, httpThreadsFor } from '../../src/runtime/config.js';
import { repoRoot, writeBundle } from '../fixtures/generate.js';
import { localResultsDir } from '../harness/results-dir.js';
import { probe } from '../harness/probe.js';
import { Supervisor, startCeiling, startServer, type Target } from '../harness/processes.js';
import { RssSampler, clientCpu, isLinuxProcAvailable, memoryStatus, processCpuMicros, resetPeakRss, rssAt } from '../harness/measure.js';
import { TARGET_LABEL, fmtInt, renderTable, writeResults } from './report.js';
import type { BenchResults, BenchTarget, RunOptions, RunStats, ScenarioResult } from './results.js';
import { anyFailed, evaluateTargets, renderVerdicts } from './targets.js';
import { runWrkPass, wrkAvailable, writeWrkScript } from '../harness/wrk.js';
import { BASE_SEED, SCENARIOS, selectScenarios, setupRequestFor, verifyBodyFor, type Scenario } from '../harness/scenarios.js';

// ---------------------------------------------------------------- autocannon (CommonJS, no bundled types)

interface AcHistogram {
  readonly average: number;
  readonly mean: number;
  readonly max: number;
  readonly total: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
}

interface AcResult {
  readonly duration: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly mismatches: number;
  readonly non2xx: number;
  readonly statusCodeStats: Record<string, { count: number }>;
  readonly latency: AcHistogram;
  readonly requests: AcHistogram;
  readonly throughput: AcHistogram;
}

interface AcInstance {
  stop(): void;
}

type AcOptions = Record<string, unknown>;
type Autocannon = (opts: AcOptions, cb: (err: Error | null, result: AcResult) => void) => AcInstance;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

// ---------------------------------------------------------------- options

interface Options extends RunOptions {
  readonly httpThreads: readonly (number | null)[];
  readonly scenarios: Scenario[];
  readonly target: BenchTarget;
  readonly outDir: string;
  readonly wrk: boolean;
  readonly wrkRounds: number;
  readonly check: boolean;
}

const MAX_DURATION_SEC = 600;

const USAGE = `usage: npm run bench -- [options]
  --scenario LIST      names or scenario numbers, comma-separated (default: all)
                       ${SCENARIOS.map((s) => `${s.name} (${s.number})`).join(', ')}
  --duration S         seconds per measured run (default 10; --smoke: 2; max ${MAX_DURATION_SEC})
  --warmup S           seconds of warm-up before each measured run (default 2; --smoke: 0)
  --connections N      concurrent connections (default 100; --smoke: 10)
  --threads N[,N]      server worker threads; a list runs everything once per value (default: server default)
  --http-threads N[,N] server delivery loops, and as many ceiling loops on one port so ratios stay fair;
                       a list runs everything once per value (default: server default)
  --workers N          autocannon worker threads (default 0 = autocannon on the main thread)
  --smoke              short runs that assert zero errors and zero unexpected statuses, not speed
  --target ceiling     calibration: a second ceiling stands in for the server (ratios ~1 show the noise floor)
  --target floor       the floor stands in for the server: a bare uWS app that pays only for the uWS calls
                       and the body parse every request needs (bench/harness/ceiling.ts); its ratio is the most any
                       server on this uWS build can reach, so a target above it is out of reach
  --wrk                after each scenario's autocannon runs, measure its latency with wrk too (needs wrk
                       on PATH: apt-get install wrk); bad-requests is left out
  --wrk-rounds N       rounds of the wrk pass, each the ceiling then the server for --duration; the
                       median round is reported (default 3; --smoke: 1; max 20)
  --check              exit 1 when any target FAILs (the verdict table printed at the end), not only on
                       errors; n/a (not measured by this run) is not a failure
  --out DIR            results directory (default $RCD_BENCH_RESULTS, else bench/results/local; --smoke: a temp dir)`;

function positiveNumber(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0 || n > max) throw new UsageError(`--${name} must be a number in 0..${max}, got "${raw}"`);
  return n;
}

class UsageError extends Error {}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      scenario: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      threads: { type: 'string' },
      'http-threads': { type: 'string' },
      workers: { type: 'string' },
      smoke: { type: 'boolean', default: false },
      target: { type: 'string', default: 'server' },
      out: { type: 'string' },
      wrk: { type: 'boolean', default: false },
      'wrk-rounds': { type: 'string' },
      check: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const smoke = values.smoke === true;
  const durationSec = positiveNumber('duration', values.duration, smoke ? 2 : 10, MAX_DURATION_SEC);
  if (durationSec < 1) throw new UsageError('--duration must be at least 1 second');
  const threads = values.threads === undefined ? [null] : values.threads.split(',').map((t) => positiveNumber('threads', t, 1, 64));
  const http = values['http-threads'];
  const httpThreads = http === undefined ? [null] : http.split(',').map((t) => Math.max(1, Math.floor(positiveNumber('http-threads', t, 1, 64))));
  if (values.target !== 'server' && values.target !== 'ceiling' && values.target !== 'floor') throw new UsageError('--target is server, ceiling or floor');
  if (values.wrk === true && !wrkAvailable()) throw new UsageError('--wrk needs wrk on PATH (Debian: apt-get install wrk)');
  return {
    scenarios: selectScenarios(values.scenario),
    durationSec,
    warmupSec: positiveNumber('warmup', values.warmup, smoke ? 0 : 2, 60),
    connections: Math.max(1, Math.floor(positiveNumber('connections', values.connections, smoke ? 10 : 100, 10000))),
    threads,
    httpThreads,
    workers: Math.floor(positiveNumber('workers', values.workers, 0, 16)),
    smoke,
    target: values.target,
    outDir: values.out ?? (smoke ? join(tmpdir(), 'rcd-bench-smoke') : localResultsDir()),
    wrk: values.wrk === true,
    wrkRounds: Math.max(1, Math.floor(positiveNumber('wrk-rounds', values['wrk-rounds'], smoke ? 1 : 3, 20))),
    check: values.check === true,
  };
}

// ---------------------------------------------------------------- child processes and cleanup

const sup = new Supervisor();
let currentLoad: AcInstance | null = null;
sup.beforeStop = () => currentLoad?.stop();
const track = (c: ChildProcess): ChildProcess => sup.track(c);

// ---------------------------------------------------------------- load

/** Workers mode needs file paths for every function option: tiny CommonJS shims that load this
 *  suite's compiled scenarios (require of an ES module, supported by Node >= 20.19). */
function workerShims(dir: string, s: Scenario): { setupRequest: string; verifyBody: string } {
  const scenarios = fileURLToPath(new URL('../harness/scenarios.js', import.meta.url));
  const setupRequest = join(dir, `setup-${s.name}.cjs`);
  const verifyBody = join(dir, `verify-${s.name}.cjs`);
  writeFileSync(
    setupRequest,
    `'use strict';\nconst { threadId } = require('node:worker_threads');\nmodule.exports = require(${JSON.stringify(scenarios)}).setupRequestFor(${JSON.stringify(s.name)}, threadId);\n`,
  );
  writeFileSync(verifyBody, `'use strict';\nmodule.exports = require(${JSON.stringify(scenarios)}).verifyBodyFor(${JSON.stringify(s.name)});\n`);
  return { setupRequest, verifyBody };
}

function runLoad(target: Target, s: Scenario, seconds: number, opts: Options, dir: string): Promise<AcResult> {
  const common: AcOptions = { url: target.url, connections: opts.connections, duration: seconds, timeout: 10 };
  let acOpts: AcOptions;
  if (opts.workers > 0) {
    const shims = workerShims(dir, s);
    acOpts = { ...common, workers: opts.workers, verifyBody: shims.verifyBody, requests: [{ setupRequest: shims.setupRequest }] };
  } else {
    acOpts = { ...common, verifyBody: verifyBodyFor(s.name), requests: [{ setupRequest: setupRequestFor(s.name, 0) }] };
  }
  return new Promise((resolve, reject) => {
    currentLoad = autocannon(acOpts, (err, result) => {
      currentLoad = null;
      if (err !== null && err !== undefined) reject(err);
      else resolve(result);
    });
  });
}

async function measure(target: Target, s: Scenario, opts: Options, dir: string): Promise<RunStats> {
  if (opts.warmupSec > 0) await runLoad(target, s, opts.warmupSec, opts, dir);
  const peakIsPerRun = resetPeakRss(target.pid);
  const rssStart = memoryStatus(target.pid).rss;
  const sampler = new RssSampler(target.pid, 500);
  const cpu0 = processCpuMicros(target.pid);
  const client0 = process.cpuUsage();
  const t0 = Date.now();
  const r = await runLoad(target, s, opts.durationSec, opts, dir);
  const wallMs = Date.now() - t0;
  const cpuMicros = processCpuMicros(target.pid) - cpu0;
  const client = clientCpu(client0, wallMs, Math.max(1, opts.workers));
  const samples = sampler.stop();
  const mem = memoryStatus(target.pid);
  // Every answered request, whatever its status: that is what the server spent its CPU on (autocannon's
  // requests.total can miss the responses of the last partial sampling second).
  const statusCodes: Record<string, number> = {};
  let requests = 0;
  for (const [code, v] of Object.entries(r.statusCodeStats)) {
    statusCodes[code] = v.count;
    requests += v.count;
  }
  return {
    requests,
    durationSec: r.duration,
    reqPerSec: r.duration > 0 ? requests / r.duration : 0,
    latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: r.latency.mean },
    throughputBytesPerSec: r.duration > 0 ? r.throughput.total / r.duration : 0,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    mismatches: r.mismatches,
    statusCodes,
    cpuUsPerReq: requests > 0 ? cpuMicros / requests : null,
    cpuCores: wallMs > 0 ? cpuMicros / 1000 / wallMs : 0,
    peakRssBytes: mem.peakRss,
    peakRssIsPerRun: peakIsPerRun,
    rssStartBytes: rssStart,
    rssAt10sBytes: rssAt(samples, 10_000),
    rssEndBytes: mem.rss,
    rssSamples: samples,
    clientCores: client.cores,
    clientBound: client.bound,
  };
}

/** Zero errors, zero timeouts, zero body mismatches, only the statuses the scenario expects. */
function loadProblems(label: string, s: Scenario, r: RunStats): string[] {
  const out: string[] = [];
  if (r.requests === 0) out.push(`${label}: no request completed`);
  if (r.errors > 0) out.push(`${label}: ${r.errors} connection errors (${r.timeouts} timeouts)`);
  if (r.mismatches > 0) out.push(`${label}: ${r.mismatches} responses failed the body check`);
  for (const [code, n] of Object.entries(r.statusCodes)) {
    if (!s.expectedStatuses.includes(Number(code))) out.push(`${label}: ${n} responses with unexpected status ${code}`);
  }
  if (s.expectedStatuses.length > 1) {
    for (const code of s.expectedStatuses) if ((r.statusCodes[String(code)] ?? 0) === 0) out.push(`${label}: no ${code} answer at all`);
  }
  return out;
}

function fmtUs(us: number | null): string {
  return us === null ? 'n/a' : us.toFixed(1);
}

async function runScenario(
  s: Scenario,
  server: Target,
  ceiling: Target,
  setup: { threads: number | null; httpThreads: number | null },
  opts: Options,
  dir: string,
): Promise<ScenarioResult> {
  const { threads, httpThreads } = setup;
  let key = opts.threads.length > 1 ? `${s.name}@${threads ?? 'default'}t` : s.name;
  if (opts.httpThreads.length > 1) key += `/${httpThreads ?? 'default'}l`;
  process.stdout.write(`${key}: probing... `);
  const pr = await probe(s, opts.target === 'server' ? server : null);
  await ceiling.configure(pr.config);
  if (opts.target !== 'server') await server.configure(pr.config);
  const serverLabel = TARGET_LABEL[opts.target];
  process.stdout.write(`autocannon ${opts.durationSec}s each: `);
  const c = await measure(ceiling, s, opts, dir);
  process.stdout.write(`ceiling ${fmtInt(c.reqPerSec)} req/s (${fmtUs(c.cpuUsPerReq)} µs CPU/req), `);
  const sv = await measure(server, s, opts, dir);
  process.stdout.write(`${serverLabel} ${fmtInt(sv.reqPerSec)} req/s (${fmtUs(sv.cpuUsPerReq)} µs CPU/req)${sv.clientBound || c.clientBound ? ', client BOUND' : ''}\n`);
  const problems = [...pr.problems, ...loadProblems('server', s, sv), ...loadProblems('ceiling', s, c)];
  let wrk: ScenarioResult['wrk'] = null;
  if (opts.wrk && s.expectedStatuses.every((code) => code < 300) && !sup.stopping) {
    process.stdout.write(`${key}: wrk ${opts.wrkRounds} round(s) x 2 x ${opts.durationSec}s: `);
    const script = writeWrkScript(dir, s.name, s.pool(BASE_SEED));
    const pass = await runWrkPass(server.url, ceiling.url, script, opts.connections, opts.durationSec, opts.wrkRounds, track, () => sup.stopping);
    for (const [label, w] of [['server', pass.server], ['ceiling', pass.ceiling]] as const) {
      if (w.non2xx > 0 || w.socketErrors > 0) problems.push(`${label} (wrk): ${w.non2xx} non-2xx answers, ${w.socketErrors} socket errors`);
    }
    wrk = pass;
    process.stdout.write(
      `ceiling ${fmtInt(pass.ceiling.reqPerSec)} req/s, ${serverLabel} ${fmtInt(pass.server.reqPerSec)} req/s, ratio ${(pass.server.reqPerSec / Math.max(1, pass.ceiling.reqPerSec)).toFixed(2)}; ` +
        `p50 ${pass.server.latencyMs.p50.toFixed(2)} ms, p99 ${pass.server.latencyMs.p99.toFixed(2)} ms (ceiling ${pass.ceiling.latencyMs.p50.toFixed(2)} / ${pass.ceiling.latencyMs.p99.toFixed(2)} ms)\n`,
    );
  }
  if (problems.length > 0) process.stdout.write(`${key}: ${problems.length} PROBLEM(S)\n`);
  return {
    key,
    name: s.name,
    number: s.number,
    title: s.title,
    threads,
    httpThreads,
    connections: opts.connections,
    server: sv,
    ceiling: c,
    ratio: c.reqPerSec > 0 ? sv.reqPerSec / c.reqPerSec : null,
    cpuEfficiency: sv.cpuUsPerReq !== null && c.cpuUsPerReq !== null && sv.cpuUsPerReq > 0 ? c.cpuUsPerReq / sv.cpuUsPerReq : null,
    bodyBytes: pr.bodyBytes,
    wrk,
    problems,
  };
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (!isLinuxProcAvailable()) {
    process.stderr.write('bench: server CPU and memory are read from /proc; this suite runs on Linux only\n');
    return 2;
  }
  sup.installCleanup('the load, the server and the ceiling');
  const dir = sup.tempDir('rcd-bench-');
  const bundle = join(dir, 'bundle.json');
  writeBundle(bundle);
  const started = new Date();
  const load = loadavg();
  const scenarios: ScenarioResult[] = [];
  for (const httpThreads of opts.httpThreads) {
    for (const threads of opts.threads) {
      // The ceiling runs as many loops as the server: the server's default when none is given.
      const loops = httpThreads ?? Math.min(threads ?? defaultThreads(), httpThreadsFor(availableParallelism()));
      const ceiling = await startCeiling(sup, null, loops);
      const server =
        opts.target === 'server'
          ? await startServer(sup, { root: repoRoot(), store: `sqlite:${join(dir, `bench-${threads ?? 'default'}-${httpThreads ?? 'default'}.db`)}`, bundle, threads, httpThreads, label: 'server' })
          : await startCeiling(sup, null, loops, opts.target === 'floor');
      process.stdout.write(
        `${TARGET_LABEL[opts.target]} ${server.url} (pid ${server.pid}, threads ${threads ?? 'default'}, loops ${loops}), ` +
          `ceiling ${ceiling.url} (pid ${ceiling.pid}, loops ${loops})\n`,
      );
      try {
        for (const s of opts.scenarios) {
          if (sup.stopping) break;
          scenarios.push(await runScenario(s, server, ceiling, { threads, httpThreads }, opts, dir));
        }
      } finally {
        await sup.stopChild(server.child);
        await sup.stopChild(ceiling.child);
      }
    }
  }
  const cpuList = cpus();
  const results: BenchResults = {
    version: 1,
    date: started.toISOString(),
    host: hostname(),
    node: process.versions.node,
    cpus: { model: cpuList[0]?.model ?? 'unknown', count: cpuList.length },
    loadavgAtStart: load,
    target: opts.target,
    options: {
      durationSec: opts.durationSec,
      warmupSec: opts.warmupSec,
      connections: opts.connections,
      threads: opts.threads,
      httpThreads: opts.httpThreads,
      workers: opts.workers,
      smoke: opts.smoke,
    },
    scenarios,
    ok: scenarios.every((s) => s.problems.length === 0),
  };
  process.stdout.write('\n' + renderTable(results) + '\n');
  const files = writeResults(results, opts.outDir);
  process.stdout.write(`\nresults: ${files.json}\nsummary: ${files.md}\ncharts: ${files.charts.join(', ')}\n`);
  if (!results.ok) {
    process.stderr.write('\nPROBLEMS:\n');
    for (const s of scenarios) for (const p of s.problems) process.stderr.write(`  ${s.key}: ${p}\n`);
  }
  const checks = evaluateTargets(results);
  if (opts.target === 'floor') process.stdout.write('\nFLOOR RUN: "server" below is the floor; a target it FAILs is out of reach for any server on this uWS build.\n');
  process.stdout.write(`\n${renderVerdicts(checks)}\n`);
  await sup.stopAll();
  if (!results.ok) return 1;
  return opts.check && anyFailed(checks) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    // After Ctrl-C the signal handler stops everything and exits; a load it killed is not a failure.
    if (sup.stopping) return;
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    void sup.stopAll().finally(() => process.exit(1));
  },
);
