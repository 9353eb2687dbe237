/**
 * Result model, the stdout table, the JSON file (input of bench:compare) and the Markdown summary.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, join } from 'node:path';
import { charts, type ChartFile } from './charts.js';
import { evaluateTargets, RATIO_TARGETS, saturationRatio } from './targets.js';
import { STALL_MS, type StallStats } from '../harness/wrk.js';
import type { BenchResults, BenchTarget, ScenarioResult } from './results.js';

/** How progress lines name the "server" column's process. */
export const TARGET_LABEL: Readonly<Record<BenchTarget, string>> = { server: 'server', ceiling: 'ceiling #2', floor: 'floor' };

const TARGET_NOTE: Readonly<Record<BenchTarget, string>> = {
  server: '',
  ceiling: ', CALIBRATION RUN (ceiling against ceiling)',
  floor: ', FLOOR RUN (the "server" figures are the floor\'s: a bare uWS app paying only for the uWS calls and body parse every request needs; a target it FAILs is out of reach for any server on this uWS build)',
};

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
  'ratio',
  'target',
  'srv req/s',
  'ceil req/s',
  'p50 ms',
  'p90 ms',
  'p99 ms',
  'p99.9 ms',
  'ceil p50 ms',
  'ceil p99 ms',
  'p99 by round',
  `stalls >=${STALL_MS}ms srv/ceil`,
];

/** "n (max X)" over some rounds' stall probes (bench/harness/stall-probe.ts), in ms. */
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
    fmt(saturationRatio(s), 2),
    RATIO_TARGETS[s.name] === undefined ? '' : `>= ${(RATIO_TARGETS[s.name] as number).toFixed(2)}`,
    fmtInt(w.server.reqPerSec),
    fmtInt(w.ceiling.reqPerSec),
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
export function textTable(columns: readonly string[], body: readonly (readonly string[])[]): string {
  const rows = [columns, ...body];
  const widths = columns.map((_, i) => Math.max(...rows.map((r) => (r[i] as string).length)));
  const line = (r: readonly string[]): string => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/**
 * The terminal's tables: the wrk saturation pass first (its ratio is the headline figure the targets
 * are judged on), then autocannon's body-checked load with its CPU efficiency.
 */
export function renderTable(results: BenchResults): string {
  const main = textTable(COLUMNS, results.scenarios.map(row));
  const withWrk = results.scenarios.filter((s) => s.wrk != null);
  if (withWrk.length === 0) return `autocannon (every body checked; no --wrk pass, so no saturation ratio):\n${main}`;
  return `saturation with wrk (headline: ratio = server / bare ceiling, both saturated, median round):\n${textTable(WRK_COLUMNS, withWrk.map(wrkRow))}\n\nautocannon (every body checked; read cpu eff):\n${main}`;
}

export function renderMarkdown(results: BenchResults, chartFiles: readonly ChartFile[] = []): string {
  const lines: string[] = [];
  lines.push(`# Benchmark ${results.date} on ${results.host}`);
  lines.push('');
  lines.push(
    `${results.cpus.count} x ${results.cpus.model}, Node ${results.node}, load average at start ${results.loadavgAtStart.map((n) => n.toFixed(2)).join(' ')}. ` +
      `${results.options.durationSec} s per run after ${results.options.warmupSec} s warm-up, ${results.options.connections} connections, ` +
      `autocannon workers: ${results.options.workers || 'none'}, server threads: ${results.options.threads.map((t) => t ?? 'default').join(', ')}` +
      `, delivery loops (server and ceiling): ${(results.options.httpThreads ?? [null]).map((t) => t ?? 'default').join(', ')}` +
      `${TARGET_NOTE[results.target]}${results.options.smoke ? ', SMOKE RUN (speed figures meaningless)' : ''}.`,
  );
  lines.push('');
  for (const c of chartFiles) lines.push(`![${c.title}](${c.file})`, '');
  const withWrk = results.scenarios.filter((s) => s.wrk != null);
  if (withWrk.length > 0) {
    lines.push('## Saturation with wrk (the headline: targets are judged on this ratio)');
    lines.push('');
    lines.push(
      `wrk (a C client that does not saturate first) sends the same requests over the same connections to the bare ceiling, then to the server, ` +
        `each for the full duration, in rounds; figures are the median round's, latencies at microsecond resolution. ` +
        `ratio = server req/s / ceiling req/s with both saturated. ` +
        `Stalls: wake-ups of a probe sleeping 1 ms at a time (real-time priority unless marked "not rt") that came ${STALL_MS} ms or more late, ` +
        `so the machine itself was not running: every request in flight then waited too.`,
    );
    lines.push('');
    lines.push(`| ${WRK_COLUMNS.join(' | ')} |`);
    lines.push(`|${WRK_COLUMNS.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`);
    for (const s of withWrk) lines.push(`| ${wrkRow(s).join(' | ')} |`);
    lines.push('');
  }
  lines.push('## autocannon (every response body checked; CPU efficiency)');
  lines.push('');
  lines.push(`| ${COLUMNS.join(' | ')} |`);
  lines.push(`|${COLUMNS.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`);
  for (const s of results.scenarios) lines.push(`| ${row(s).join(' | ')} |`);
  lines.push('');
  lines.push(
    'ratio = server req/s / ceiling req/s under autocannon, which on a small box saturates before either server (client BOUND), so it is not the saturation figure; ' +
      'cpu eff = ceiling CPU per request / server CPU per request; autocannon latencies have its histogram\'s resolution (whole milliseconds).',
  );
  lines.push('');
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

/**
 * <dir>/<date>-<host>.json, its .md summary and its SVG charts beside it (<stem>-ratio.svg,
 * <stem>-latency.svg); a second run the same day gets -2, -3, ... rather than overwriting.
 */
export function writeResults(results: BenchResults, dir: string): { json: string; md: string; charts: string[] } {
  const stem = freeResultStem(dir, `${results.date.slice(0, 10)}-${hostTag()}`);
  const json = `${stem}.json`;
  const md = `${stem}.md`;
  writeFileSync(json, JSON.stringify(results, null, 2) + '\n');
  const drawn = charts(results, basename(stem));
  for (const c of drawn) writeFileSync(join(dir, c.file), c.svg);
  writeFileSync(md, renderMarkdown(results, drawn));
  return { json, md, charts: drawn.map((c) => join(dir, c.file)) };
}

/** `dir/base`, or `dir/base-2`, `-3`, ... when a result of that name exists: runs never overwrite each other. */
export function freeResultStem(dir: string, base: string): string {
  mkdirSync(dir, { recursive: true });
  let stem = join(dir, base);
  for (let i = 2; existsSync(`${stem}.json`); i++) stem = join(dir, `${base}-${i}`);
  return stem;
}
