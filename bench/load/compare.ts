/**
 * `npm run bench:compare A.json B.json`: judge a change (B) against a baseline (A), scenario by scenario.
 * `npm run bench:compare -- --history SCENARIO [--dir DIR] [--out FILE.svg]`: the scenario's figures
 * over every suite run recorded in DIR (default: the kept baselines in bench/results and the local runs in
 * $RCD_BENCH_RESULTS or bench/results/local), printed and drawn as an SVG chart.
 *
 * Prints, per scenario present in both files, B/A for server req/s and for server CPU per request, and the
 * two ceiling-relative ratios side by side. The ceiling-relative figures are the ones to trust across runs:
 * absolute req/s drift with whatever else the (shared) machine is doing, while each run's ceiling drifts
 * with it.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { historyChart, type RecordedRun } from './charts.js';
import { textTable } from './report.js';
import type { BenchResults, ScenarioResult } from './results.js';
import { baselineDir, localResultsDir } from '../harness/results-dir.js';
import { saturationRatio } from './targets.js';

/** A results file of the load suite (`npm run bench`), not of bench:edits, bench:tls or another rig. */
function isSuiteResults(parsed: unknown): parsed is BenchResults {
  const r = parsed as Partial<BenchResults> & { kind?: unknown };
  return typeof r === 'object' && r !== null && r.version === 1 && r.kind === undefined && Array.isArray(r.scenarios) && typeof r.date === 'string';
}

function load(path: string): BenchResults {
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  if (!isSuiteResults(parsed)) throw new Error(`${path} is not a bench results file (version 1)`);
  return parsed;
}

/** Every suite run recorded in the directories that has the scenario, oldest first (a missing directory has none). */
export function loadHistory(dirs: readonly string[], scenario: string): RecordedRun[] {
  const runs: RecordedRun[] = [];
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.json'))) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(readFileSync(join(dir, f), 'utf8'));
      } catch {
        continue;
      }
      if (isSuiteResults(parsed) && parsed.scenarios.some((s) => s.key === scenario)) runs.push({ label: basename(f, '.json'), results: parsed });
    }
  }
  return runs.sort((a, b) => a.results.date.localeCompare(b.results.date) || a.label.localeCompare(b.label));
}

/** The history as a text table: one row per run. */
export function historyTable(runs: readonly RecordedRun[], scenario: string): string {
  const body = runs.map((r) => {
    const s = r.results.scenarios.find((x) => x.key === scenario)!;
    return [
      r.label,
      r.results.date.slice(0, 16).replace('T', ' '),
      num(saturationRatio(s), 2),
      s.wrk == null ? 'n/a' : num(s.wrk.server.reqPerSec, 0),
      s.wrk == null ? 'n/a' : num(s.wrk.server.latencyMs.p99, 2),
      num(s.ratio, 2),
      num(s.server.cpuUsPerReq, 1),
      num(s.cpuEfficiency, 2),
    ];
  });
  return textTable(['run', 'date (UTC)', 'wrk ratio', 'wrk srv req/s', 'wrk p99 ms', 'autocannon ratio', 'srv µs/req', 'cpu eff'], body);
}

function num(n: number | null | undefined, digits: number): string {
  return n === null || n === undefined || !Number.isFinite(n) ? 'n/a' : n.toFixed(digits);
}

function div(b: number | null | undefined, a: number | null | undefined): number | null {
  return a === null || a === undefined || b === null || b === undefined || a === 0 ? null : b / a;
}

export function compareResults(a: BenchResults, b: BenchResults): string {
  const header = ['scenario', 'A req/s', 'B req/s', 'B/A req/s', 'A ratio', 'B ratio', 'B/A ratio', 'A µs/req', 'B µs/req', 'B/A CPU', 'A cpu eff', 'B cpu eff'];
  const rows: string[][] = [];
  const byKey = new Map<string, ScenarioResult>(a.scenarios.map((s) => [s.key, s]));
  const missing: string[] = [];
  for (const sb of b.scenarios) {
    const sa = byKey.get(sb.key);
    if (sa === undefined) {
      missing.push(`${sb.key} (only in B)`);
      continue;
    }
    byKey.delete(sb.key);
    rows.push([
      sb.key,
      num(sa.server.reqPerSec, 0),
      num(sb.server.reqPerSec, 0),
      num(div(sb.server.reqPerSec, sa.server.reqPerSec), 2),
      num(sa.ratio, 2),
      num(sb.ratio, 2),
      num(div(sb.ratio, sa.ratio), 2),
      num(sa.server.cpuUsPerReq, 1),
      num(sb.server.cpuUsPerReq, 1),
      num(div(sb.server.cpuUsPerReq, sa.server.cpuUsPerReq), 2),
      num(sa.cpuEfficiency, 2),
      num(sb.cpuEfficiency, 2),
    ]);
  }
  for (const key of byKey.keys()) missing.push(`${key} (only in A)`);
  const lines = textTable(header, rows).split('\n');
  lines.push('');
  lines.push('B/A req/s and B/A ratio > 1: B is faster. B/A CPU < 1: B spends less server CPU per request.');
  lines.push('Prefer the ratio and CPU columns when A and B ran at different times: both are relative to their own run.');
  if (missing.length > 0) lines.push(`not compared: ${missing.join(', ')}`);
  return lines.join('\n');
}

const USAGE =
  'usage: npm run bench:compare A.json B.json   (A = baseline, e.g. main; B = the change)\n' +
  '       npm run bench:compare -- --history SCENARIO [--dir DIR] [--out FILE.svg]   (default dirs bench/results and the local results, out LOCAL/history-SCENARIO.svg)\n';

function history(argv: string[]): number {
  let values: { history?: string; dir?: string; out?: string };
  try {
    ({ values } = parseArgs({ args: argv, options: { history: { type: 'string' }, dir: { type: 'string' }, out: { type: 'string' } }, strict: true }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const scenario = values.history ?? '';
  const dirs = values.dir !== undefined ? [values.dir] : [baselineDir(), localResultsDir()];
  let runs: RecordedRun[];
  try {
    runs = loadHistory(dirs, scenario);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  if (runs.length === 0) {
    process.stderr.write(`no suite run in ${dirs.join(' or ')} has the scenario "${scenario}"\n`);
    return 2;
  }
  const outDir = values.dir ?? localResultsDir();
  mkdirSync(outDir, { recursive: true });
  const out = values.out ?? join(outDir, `history-${scenario.replace(/[^A-Za-z0-9._-]/g, '_')}.svg`);
  writeFileSync(out, historyChart(runs, scenario));
  process.stdout.write(`${historyTable(runs, scenario)}\n\nchart: ${out}\n`);
  return 0;
}

function main(argv: string[]): number {
  if (argv.some((a) => a === '--history' || a.startsWith('--history='))) return history(argv);
  if (argv.length !== 2) {
    process.stderr.write(USAGE);
    return 2;
  }
  const [pa, pb] = argv as [string, string];
  let a: BenchResults;
  let b: BenchResults;
  try {
    a = load(pa);
    b = load(pb);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  process.stdout.write(`A: ${pa} (${a.date}, ${a.host})\nB: ${pb} (${b.date}, ${b.host})\n\n`);
  process.stdout.write(compareResults(a, b) + '\n');
  return 0;
}

process.exitCode = main(process.argv.slice(2));
