/**
 * Result model, the stdout table, the JSON file (input of bench:compare) and the Markdown summary.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { RssSample } from './measure.js';
import { STALL_MS, type StallStats, type WrkPass } from './wrk.js';

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

export interface BenchResults {
  readonly version: 1;
  readonly date: string;
  readonly host: string;
  readonly node: string;
  readonly cpus: { readonly model: string; readonly count: number };
  readonly loadavgAtStart: readonly number[];
  /** 'server' normally; 'ceiling' for calibration runs (ceiling against ceiling: ratios show the noise floor). */
  readonly target: 'server' | 'ceiling';
  readonly options: RunOptions;
  readonly scenarios: ScenarioResult[];
  readonly ok: boolean;
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

function fmt(n: number | null, digits: number): string {
  return n === null || !Number.isFinite(n) ? 'n/a' : n.toFixed(digits);
}

function mb(bytes: number): string {
  return (bytes / 1048576).toFixed(1);
}

const COLUMNS = [
  'scenario',
  'srv req/s',
  'ceil req/s',
  'ratio',
  'p50 ms',
  'p90 ms',
  'p99 ms',
  'max ms',
  'MB/s',
  'non2xx',
  'err',
  'srv µs/req',
  'ceil µs/req',
  'cpu eff',
  'peak RSS MB',
  'client',
];

function row(s: ScenarioResult): string[] {
  const client = s.server.clientBound || s.ceiling.clientBound ? `BOUND ${fmt(Math.max(s.server.clientCores, s.ceiling.clientCores), 2)}` : fmt(s.server.clientCores, 2);
  return [
    s.key,
    fmtInt(s.server.reqPerSec),
    fmtInt(s.ceiling.reqPerSec),
    fmt(s.ratio, 2),
    fmt(s.server.latencyMs.p50, 2),
    fmt(s.server.latencyMs.p90, 2),
    fmt(s.server.latencyMs.p99, 2),
    fmt(s.server.latencyMs.max, 1),
    mb(s.server.throughputBytesPerSec),
    String(s.server.non2xx),
    String(s.server.errors + s.server.mismatches),
    fmt(s.server.cpuUsPerReq, 1),
    fmt(s.ceiling.cpuUsPerReq, 1),
    fmt(s.cpuEfficiency, 2),
    mb(s.server.peakRssBytes),
    client,
  ];
}

const WRK_COLUMNS = [
  'scenario (wrk)',
  'srv req/s',
  'ceil req/s',
  'ratio',
  'p50 ms',
  'p90 ms',
  'p99 ms',
  'p99.9 ms',
  'ceil p50 ms',
  'ceil p99 ms',
  'p99 by round',
  `stalls >=${STALL_MS}ms srv/ceil`,
];

/** "n (max X)" over some rounds' stall probes (bench/stall-probe.ts), in ms. */
function stallText(probes: readonly StallStats[]): string {
  const n = probes.reduce((a, p) => a + p.stalls, 0);
  const max = probes.reduce((a, p) => Math.max(a, p.maxStallMs), 0);
  return n === 0 ? '0' : `${n} (max ${max.toFixed(0)})`;
}

function wrkRow(s: ScenarioResult): string[] {
  const w = s.wrk!;
  const rounds = w.rounds;
  return [
    s.key,
    fmtInt(w.server.reqPerSec),
    fmtInt(w.ceiling.reqPerSec),
    fmt(w.ceiling.reqPerSec > 0 ? w.server.reqPerSec / w.ceiling.reqPerSec : null, 2),
    fmt(w.server.latencyMs.p50, 2),
    fmt(w.server.latencyMs.p90, 2),
    fmt(w.server.latencyMs.p99, 2),
    fmt(w.server.latencyMs.p999, 2),
    fmt(w.ceiling.latencyMs.p50, 2),
    fmt(w.ceiling.latencyMs.p99, 2),
    rounds.map((r) => r.server.latencyMs.p99.toFixed(1)).join(' / '),
    rounds.length === 0 ? '' : `${stallText(rounds.map((r) => r.serverStalls))} / ${stallText(rounds.map((r) => r.ceilingStalls))}${rounds[0]!.serverStalls.realtime ? '' : ' (not rt)'}`,
  ];
}

/** Columns padded to their widest cell (first column left-aligned), a dashed rule under the header. */
export function textTable(columns: readonly string[], body: string[][]): string {
  const rows = [columns as string[], ...body];
  const widths = columns.map((_, i) => Math.max(...rows.map((r) => (r[i] as string).length)));
  const line = (r: string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

export function renderTable(results: BenchResults): string {
  const main = textTable(COLUMNS, results.scenarios.map(row));
  const withWrk = results.scenarios.filter((s) => s.wrk != null);
  return withWrk.length === 0 ? main : `${main}\n\n${textTable(WRK_COLUMNS, withWrk.map(wrkRow))}`;
}

interface TargetCheck {
  readonly what: string;
  readonly verdict: 'pass' | 'FAIL' | 'n/a';
  readonly measured: string;
}

function find(results: BenchResults, name: string): ScenarioResult[] {
  return results.scenarios.filter((s) => s.name === name);
}

function atLeast(what: string, value: number | null, min: number, digits = 2): TargetCheck {
  if (value === null) return { what, verdict: 'n/a', measured: 'not measured' };
  return { what, verdict: value >= min ? 'pass' : 'FAIL', measured: value.toFixed(digits) };
}

function wrkLatencyText(s: ScenarioResult, w: WrkPass, autocannonP99: number): string {
  const rounds = w.rounds;
  const byRound = rounds.length > 1 ? `median of ${rounds.length} rounds (${rounds.map((r) => r.server.latencyMs.p99.toFixed(2)).join(', ')})` : 'one round';
  const stalls = rounds.length > 0 ? `; machine stalls >= ${STALL_MS} ms during the server's rounds: ${stallText(rounds.map((r) => r.serverStalls))}` : '';
  return (
    `${w.server.latencyMs.p99.toFixed(2)} ms, ${byRound}, at ${s.connections} connections, ${fmtInt(w.server.reqPerSec)} req/s ` +
    `(wrk; ceiling ${w.ceiling.latencyMs.p99.toFixed(2)} ms)${stalls}; autocannon: ${autocannonP99.toFixed(2)} ms (ceiling ${s.ceiling.latencyMs.p99.toFixed(2)} ms)`
  );
}

/** The suite's targets (bench/README.md, "Targets"), evaluated on whatever this run measured. */
export function evaluateTargets(results: BenchResults): TargetCheck[] {
  const out: TargetCheck[] = [];
  for (const s of find(results, 'mapped')) {
    const tag = (s.threads === null ? '' : ` @${s.threads}t`) + (s.httpThreads === null || s.httpThreads === undefined ? '' : ` ${s.httpThreads} loops`);
    out.push(atLeast(`mapped${tag}: throughput ratio >= 0.80`, s.ratio, 0.8));
    out.push(atLeast(`mapped${tag}: CPU efficiency >= 0.50`, s.cpuEfficiency, 0.5));
    const p99 = s.server.latencyMs.p99;
    // wrk (--wrk) does not saturate first, so its figure decides when there is one. Without it the
    // ceiling's p99 under autocannon tells whether the target is measurable at all: autocannon
    // saturates first on a small box, and its own queueing then sets the latency floor for both
    // servers. A bare uWS server at or above 5 ms under the same client means the figure says
    // nothing about rcd: n/a, with the way to measure it, rather than a FAIL of the client.
    const w = s.wrk ?? null;
    const judged = w === null ? p99 : w.server.latencyMs.p99;
    const clientFloor = w === null && s.ceiling.latencyMs.p99 >= 5;
    out.push({
      what: `mapped${tag}: p99 < 5 ms at 100 connections`,
      verdict: s.connections !== 100 || clientFloor ? 'n/a' : judged < 5 ? 'pass' : 'FAIL',
      measured:
        w === null
          ? `${p99.toFixed(2)} ms at ${s.connections} connections (autocannon; ceiling ${s.ceiling.latencyMs.p99.toFixed(2)} ms${s.server.clientBound ? ', client-bound' : ''})` +
            (clientFloor ? `; the client's own floor is above the target (the bare ceiling's p99): measure with --wrk` : '')
          : wrkLatencyText(s, w, p99),
    });
    const at10 = s.server.rssAt10sBytes;
    const grew = at10 === null ? null : s.server.rssEndBytes / at10 - 1;
    out.push({
      what: `mapped${tag}: RSS at end within 10% of RSS at 10 s (60 s run)`,
      verdict: grew === null || s.server.rssSamples.length === 0 || results.options.durationSec < 60 ? 'n/a' : grew <= 0.1 ? 'pass' : 'FAIL',
      measured: grew === null ? `run shorter than 10 s` : `${mb(at10 as number)} MB -> ${mb(s.server.rssEndBytes)} MB (${(grew * 100).toFixed(1)}%) over ${results.options.durationSec} s`,
    });
  }
  for (const name of ['plain', 'wrapped', 'mapped-serialized']) {
    for (const s of find(results, name)) out.push(atLeast(`${s.key}: throughput ratio >= 0.85`, s.ratio, 0.85));
  }
  for (const s of find(results, 'combine')) out.push(atLeast(`${s.key}: throughput ratio >= 0.5`, s.ratio, 0.5));
  for (const s of find(results, 'large-hit')) out.push(atLeast(`${s.key}: throughput ratio >= 0.5`, s.ratio, 0.5));
  for (const miss of find(results, 'large-miss')) {
    const hit = results.scenarios.find((s) => s.name === 'large-hit' && s.threads === miss.threads);
    const factor = hit?.server.cpuUsPerReq != null && miss.server.cpuUsPerReq !== null ? miss.server.cpuUsPerReq / hit.server.cpuUsPerReq : null;
    out.push({
      what: `${miss.key}: a miss costs < 10x a hit (server CPU per request)`,
      verdict: factor === null ? 'n/a' : factor < 10 ? 'pass' : 'FAIL',
      measured: factor === null ? 'needs large-hit and large-miss' : `${factor.toFixed(2)}x`,
    });
  }
  return out;
}

export function renderMarkdown(results: BenchResults): string {
  const lines: string[] = [];
  lines.push(`# Benchmark ${results.date} on ${results.host}`);
  lines.push('');
  lines.push(
    `${results.cpus.count} x ${results.cpus.model}, Node ${results.node}, load average at start ${results.loadavgAtStart.map((n) => n.toFixed(2)).join(' ')}. ` +
      `${results.options.durationSec} s per run after ${results.options.warmupSec} s warm-up, ${results.options.connections} connections, ` +
      `autocannon workers: ${results.options.workers || 'none'}, server threads: ${results.options.threads.map((t) => t ?? 'default').join(', ')}` +
      `, delivery loops (server and ceiling): ${(results.options.httpThreads ?? [null]).map((t) => t ?? 'default').join(', ')}` +
      `${results.target === 'ceiling' ? ', CALIBRATION RUN (ceiling against ceiling)' : ''}${results.options.smoke ? ', SMOKE RUN (speed figures meaningless)' : ''}.`,
  );
  lines.push('');
  lines.push(`| ${COLUMNS.join(' | ')} |`);
  lines.push(`|${COLUMNS.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`);
  for (const s of results.scenarios) lines.push(`| ${row(s).join(' | ')} |`);
  lines.push('');
  lines.push('ratio = server req/s / ceiling req/s; cpu eff = ceiling CPU per request / server CPU per request; client BOUND = the load generator used >= 90% of its cores, so read cpu eff rather than ratio.');
  lines.push('');
  const withWrk = results.scenarios.filter((s) => s.wrk != null);
  if (withWrk.length > 0) {
    lines.push('## Latency with wrk (`--wrk`: same requests and connections, a C client that does not saturate first)');
    lines.push('');
    lines.push(
      `Each round runs the ceiling, then the server, for the full duration; figures are the median round's. ` +
        `Stalls: wake-ups of a probe sleeping 1 ms at a time (real-time priority unless marked "not rt") that came ${STALL_MS} ms or more late, ` +
        `so the machine itself was not running: every request in flight then waited too. ` +
        `wrk saturates both servers (it keeps up where autocannon does not), so its ratio compares the two at their limits.`,
    );
    lines.push('');
    lines.push(`| ${WRK_COLUMNS.join(' | ')} |`);
    lines.push(`|${WRK_COLUMNS.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`);
    for (const s of withWrk) lines.push(`| ${wrkRow(s).join(' | ')} |`);
    lines.push('');
  }
  const targets = evaluateTargets(results);
  if (targets.length > 0) {
    lines.push('## Targets');
    lines.push('');
    lines.push('| target | measured | verdict |');
    lines.push('|---|---|---|');
    for (const t of targets) lines.push(`| ${t.what} | ${t.measured} | ${t.verdict} |`);
    lines.push('');
  }
  const problems = results.scenarios.filter((s) => s.problems.length > 0);
  if (problems.length > 0) {
    lines.push('## Problems');
    lines.push('');
    for (const s of problems) for (const p of s.problems) lines.push(`- ${s.key}: ${p}`);
    lines.push('');
  }
  lines.push('## Scenarios');
  lines.push('');
  for (const s of results.scenarios) lines.push(`- **${s.key}** (scenario ${s.number}): ${s.title}; response body ${fmtInt(s.bodyBytes)} bytes.`);
  lines.push('');
  return lines.join('\n');
}

export function hostTag(): string {
  return hostname().replace(/[^A-Za-z0-9._-]/g, '_');
}

/** bench/results/<date>-<host>.json (+ .md); a second run the same day gets -2, -3, ... rather than overwriting. */
export function writeResults(results: BenchResults, dir: string): { json: string; md: string } {
  const stem = freeResultStem(dir, `${results.date.slice(0, 10)}-${hostTag()}`);
  const json = `${stem}.json`;
  const md = `${stem}.md`;
  writeFileSync(json, JSON.stringify(results, null, 2) + '\n');
  writeFileSync(md, renderMarkdown(results));
  return { json, md };
}

/** `dir/base`, or `dir/base-2`, `-3`, ... when a result of that name exists: runs never overwrite each other. */
export function freeResultStem(dir: string, base: string): string {
  mkdirSync(dir, { recursive: true });
  let stem = join(dir, base);
  for (let i = 2; existsSync(`${stem}.json`); i++) stem = join(dir, `${base}-${i}`);
  return stem;
}
