/**
 * The suite's targets (bench/README.md, "Targets"), evaluated on one run's results, and the verdict
 * table the terminal, the `.md` summary and `--check` share.
 *
 * Throughput targets are judged on the wrk pass's ratio (server / ceiling, both saturated, median of
 * the rounds): on a small box autocannon saturates before either server, so its ratio says the server
 * kept up with the client, not how close to the ceiling it runs. A run without `--wrk` reports those
 * targets n/a with autocannon's figure beside it.
 */
import type { BenchResults, ScenarioResult } from './results.js';

export type Verdict = 'pass' | 'FAIL' | 'n/a';

export interface TargetCheck {
  readonly what: string;
  readonly verdict: Verdict;
  readonly measured: string;
}

/** Minimum wrk saturation ratio per scenario (server req/s / bare-ceiling req/s). */
export const RATIO_TARGETS: Readonly<Record<string, number>> = {
  mapped: 0.7,
  'mapped-serialized': 0.7,
  combine: 0.6,
  wrapped: 0.85,
  plain: 0.85,
  catalog: 0.9,
  'large-hit': 0.5,
};

/** Scenarios whose p99 at 100 connections must stay under P99_TARGET_MS at those rates. */
const P99_SCENARIOS: ReadonlySet<string> = new Set(['mapped', 'mapped-serialized', 'combine', 'wrapped', 'plain', 'catalog']);
export const P99_TARGET_MS = 5;
const MAPPED_CPU_EFF = 0.5;
const MISS_OVER_HIT = 10;

function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/**
 * A measured figure as a verdict line shows it beside its bound: rounded to `digits`, except where the
 * rounding would contradict the verdict (a ratio of 0.8996 against ">= 0.90" read "0.900 FAIL"); it is
 * then shown one step further from the bound. The verdict itself is decided on the figure unrounded.
 * `atLeast`: the bound is a minimum (>=), else a maximum (<=).
 */
export function figureAgainst(value: number, digits: number, bound: number, atLeast: boolean): string {
  let shown = Number(value.toFixed(digits));
  const passes = atLeast ? value >= bound : value <= bound;
  if ((atLeast ? shown >= bound : shown <= bound) !== passes) shown += (atLeast ? -1 : 1) * 10 ** -digits;
  return shown.toFixed(digits);
}

/** The headline figure of a scenario: wrk's saturation ratio, or null when the run had no wrk pass. */
export function saturationRatio(s: ScenarioResult): number | null {
  const w = s.wrk ?? null;
  return w === null || w.ceiling.reqPerSec <= 0 ? null : w.server.reqPerSec / w.ceiling.reqPerSec;
}

function ratioCheck(s: ScenarioResult, min: number): TargetCheck {
  const what = `${s.key}: saturation ratio (wrk) >= ${min.toFixed(2)}`;
  const ratio = saturationRatio(s);
  if (ratio === null) {
    const ac = s.ratio === null ? 'n/a' : s.ratio.toFixed(2);
    return { what, verdict: 'n/a', measured: `no wrk pass (autocannon ratio ${ac}, not a saturation figure): run with --wrk` };
  }
  const w = s.wrk!;
  return {
    what,
    verdict: ratio >= min ? 'pass' : 'FAIL',
    measured: `${figureAgainst(ratio, 2, min, true)} (server ${fmtInt(w.server.reqPerSec)} req/s, ceiling ${fmtInt(w.ceiling.reqPerSec)} req/s)`,
  };
}

function p99Check(s: ScenarioResult): TargetCheck {
  const what = `${s.key}: p99 < ${P99_TARGET_MS} ms at 100 connections`;
  const w = s.wrk ?? null;
  if (w !== null) {
    const rounds = w.rounds;
    const byRound = rounds.length > 1 ? `median of ${rounds.length} rounds (${rounds.map((r) => r.server.latencyMs.p99.toFixed(2)).join(', ')})` : 'one round';
    const stalls = rounds.reduce((n, r) => n + r.serverStalls.stalls, 0);
    return {
      what,
      verdict: s.connections !== 100 ? 'n/a' : w.server.latencyMs.p99 < P99_TARGET_MS ? 'pass' : 'FAIL',
      measured:
        `${w.server.latencyMs.p99.toFixed(2)} ms, ${byRound}, at ${s.connections} connections, ${fmtInt(w.server.reqPerSec)} req/s ` +
        `(wrk; ceiling ${w.ceiling.latencyMs.p99.toFixed(2)} ms); machine stalls during the server's rounds: ${stalls}; ` +
        `autocannon: ${s.server.latencyMs.p99.toFixed(2)} ms (ceiling ${s.ceiling.latencyMs.p99.toFixed(2)} ms)`,
    };
  }
  // Without wrk, autocannon's figure decides unless the bare ceiling is at or over the target under
  // the same client: then autocannon's own queueing sets both figures and the verdict is n/a.
  const p99 = s.server.latencyMs.p99;
  const clientFloor = s.ceiling.latencyMs.p99 >= P99_TARGET_MS;
  return {
    what,
    verdict: s.connections !== 100 || clientFloor ? 'n/a' : p99 < P99_TARGET_MS ? 'pass' : 'FAIL',
    measured:
      `${p99.toFixed(2)} ms at ${s.connections} connections (autocannon; ceiling ${s.ceiling.latencyMs.p99.toFixed(2)} ms${s.server.clientBound ? ', client-bound' : ''})` +
      (clientFloor ? `; the client's own floor is above the target (the bare ceiling's p99): measure with --wrk` : ''),
  };
}

function mb(bytes: number): string {
  return (bytes / 1048576).toFixed(1);
}

/** The suite's targets, evaluated on whatever this run measured, scenario by scenario in run order. */
export function evaluateTargets(results: BenchResults): TargetCheck[] {
  const out: TargetCheck[] = [];
  for (const s of results.scenarios) {
    const min = RATIO_TARGETS[s.name];
    if (min !== undefined) out.push(ratioCheck(s, min));
    if (P99_SCENARIOS.has(s.name)) out.push(p99Check(s));
    if (s.name === 'mapped') {
      const eff = s.cpuEfficiency;
      out.push({
        what: `${s.key}: CPU efficiency (autocannon) >= ${MAPPED_CPU_EFF.toFixed(2)}`,
        verdict: eff === null ? 'n/a' : eff >= MAPPED_CPU_EFF ? 'pass' : 'FAIL',
        measured: eff === null ? 'not measured' : figureAgainst(eff, 2, MAPPED_CPU_EFF, true),
      });
      const at10 = s.server.rssAt10sBytes;
      const grew = at10 === null ? null : s.server.rssEndBytes / at10 - 1;
      out.push({
        what: `${s.key}: RSS at end within 10% of RSS at 10 s (60 s run)`,
        verdict: grew === null || s.server.rssSamples.length === 0 || results.options.durationSec < 60 ? 'n/a' : grew <= 0.1 ? 'pass' : 'FAIL',
        measured: grew === null ? `run shorter than 10 s` : `${mb(at10 as number)} MB -> ${mb(s.server.rssEndBytes)} MB (${(grew * 100).toFixed(1)}%) over ${results.options.durationSec} s`,
      });
    }
    // OpenFeature (OFREP) beside the native endpoint it is made from, measured in the same run.
    const native = OFREP_NATIVE[s.name];
    if (native !== undefined) {
      const base = results.scenarios.find((n) => n.name === native.scenario && n.threads === s.threads && n.httpThreads === s.httpThreads);
      out.push(relativeThroughput(s, base, native.min));
      if (native.cpu !== null) out.push(relativeCpu(s, base, native.cpu));
    }
    if (s.name === 'large-miss') {
      const hit = results.scenarios.find((h) => h.name === 'large-hit' && h.threads === s.threads && h.httpThreads === s.httpThreads);
      const factor = hit?.server.cpuUsPerReq != null && s.server.cpuUsPerReq !== null ? s.server.cpuUsPerReq / hit.server.cpuUsPerReq : null;
      out.push({
        what: `${s.key}: a miss costs < ${MISS_OVER_HIT}x a hit (server CPU per request)`,
        verdict: factor === null ? 'n/a' : factor < MISS_OVER_HIT ? 'pass' : 'FAIL',
        measured: factor === null ? 'needs large-hit and large-miss' : `${factor.toFixed(2)}x`,
      });
    }
  }
  return out;
}

/** OFREP scenarios and the native scenario each is judged against (bench/README.md, "Targets"). */
const OFREP_NATIVE: Readonly<Record<string, { scenario: string; min: number; cpu: number | null }>> = {
  'ofrep-flag': { scenario: 'mapped', min: 0.9, cpu: 1.15 },
  'ofrep-bulk': { scenario: 'combine', min: 0.9, cpu: null },
};

/**
 * The saturation ratio of `s` over that of `base` (the native scenario of the same run): each
 * scenario's wrk rounds run back to back with a ceiling serving that scenario's own answer, so the
 * ratio cancels the drift of a shared machine between the two scenarios' passes (run minutes apart),
 * which absolute req/s do not (they are shown beside it).
 */
function relativeThroughput(s: ScenarioResult, base: ScenarioResult | undefined, min: number): TargetCheck {
  const what = `${s.key}: saturation ratio (wrk) >= ${min.toFixed(2)}x ${base?.key ?? 'its native scenario'}'s`;
  if (base === undefined) return { what, verdict: 'n/a', measured: 'run the native scenario in the same run' };
  const mine = saturationRatio(s);
  const theirs = saturationRatio(base);
  if (mine === null || theirs === null) return { what, verdict: 'n/a', measured: 'no wrk pass: run with --wrk' };
  const r = mine / theirs;
  return {
    what,
    verdict: r >= min ? 'pass' : 'FAIL',
    measured: `${figureAgainst(r, 2, min, true)}x (${mine.toFixed(2)} vs ${theirs.toFixed(2)}; ${fmtInt(s.wrk!.server.reqPerSec)} vs ${fmtInt(base.wrk!.server.reqPerSec)} req/s)`,
  };
}

/** Server CPU per request of `s` over that of `base` (autocannon's runs). */
function relativeCpu(s: ScenarioResult, base: ScenarioResult | undefined, max: number): TargetCheck {
  const what = `${s.key}: server CPU per request <= ${max.toFixed(2)}x ${base?.key ?? 'its native scenario'}`;
  const mine = s.server.cpuUsPerReq;
  const theirs = base?.server.cpuUsPerReq ?? null;
  if (mine === null || theirs === null) return { what, verdict: 'n/a', measured: 'run the native scenario in the same run' };
  const r = mine / theirs;
  return { what, verdict: r <= max ? 'pass' : 'FAIL', measured: `${figureAgainst(r, 2, max, false)}x (${mine.toFixed(1)} vs ${theirs.toFixed(1)} µs)` };
}

/** True when some target FAILed (n/a is not a failure: the run could not judge it). */
export function anyFailed(checks: readonly TargetCheck[]): boolean {
  return checks.some((c) => c.verdict === 'FAIL');
}

/** The verdict table for the terminal: target, measured figure, verdict; a closing count line. */
export function renderVerdicts(checks: readonly TargetCheck[]): string {
  if (checks.length === 0) return 'targets: none of the selected scenarios has one';
  const rows = [['target', 'measured', 'verdict'], ...checks.map((c) => [c.what, c.measured, c.verdict])];
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => (r[i] as string).length)));
  const line = (r: string[]): string => r.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd();
  const count = (v: Verdict): number => checks.filter((c) => c.verdict === v).length;
  return [
    line(rows[0]!),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...rows.slice(1).map(line),
    '',
    `targets: ${count('pass')} pass, ${count('FAIL')} FAIL, ${count('n/a')} n/a`,
  ].join('\n');
}
