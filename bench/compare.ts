/**
 * `npm run bench:compare A.json B.json`: judge a change (B) against a baseline (A), scenario by scenario.
 *
 * Prints, per scenario present in both files, B/A for server req/s and for server CPU per request, and the
 * two ceiling-relative ratios side by side. The ceiling-relative figures are the ones to trust across runs:
 * absolute req/s drift with whatever else the (shared) machine is doing, while each run's ceiling drifts
 * with it.
 */
import { readFileSync } from 'node:fs';
import type { BenchResults, ScenarioResult } from './report.js';

function load(path: string): BenchResults {
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as BenchResults;
  if (parsed.version !== 1 || !Array.isArray(parsed.scenarios)) throw new Error(`${path} is not a bench results file (version 1)`);
  return parsed;
}

function num(n: number | null | undefined, digits: number): string {
  return n === null || n === undefined || !Number.isFinite(n) ? 'n/a' : n.toFixed(digits);
}

function div(b: number | null | undefined, a: number | null | undefined): number | null {
  return a === null || a === undefined || b === null || b === undefined || a === 0 ? null : b / a;
}

export function compareResults(a: BenchResults, b: BenchResults): string {
  const header = ['scenario', 'A req/s', 'B req/s', 'B/A req/s', 'A ratio', 'B ratio', 'B/A ratio', 'A µs/req', 'B µs/req', 'B/A CPU', 'A cpu eff', 'B cpu eff'];
  const rows: string[][] = [header];
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
  const widths = header.map((_, i) => Math.max(...rows.map((r) => (r[i] as string).length)));
  const lines = rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  '));
  lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  lines.push('');
  lines.push('B/A req/s and B/A ratio > 1: B is faster. B/A CPU < 1: B spends less server CPU per request.');
  lines.push('Prefer the ratio and CPU columns when A and B ran at different times: both are relative to their own run.');
  if (missing.length > 0) lines.push(`not compared: ${missing.join(', ')}`);
  return lines.join('\n');
}

function main(argv: string[]): number {
  if (argv.length !== 2) {
    process.stderr.write('usage: npm run bench:compare A.json B.json   (A = baseline, e.g. main; B = the change)\n');
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
