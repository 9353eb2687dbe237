/**
 * The result model of the edits-under-load benchmark (bench/edits/edits.ts), its targets, the stdout table
 * and the files <date>-<host>-edits.json and .md in the results directory.
 */
import { writeFileSync } from 'node:fs';
import { freeResultStem, hostTag, textTable } from '../load/report.js';
import type { StallStats, WrkStats } from '../harness/wrk.js';

/** A pause of the delivery loop longer than this is what the targets forbid. */
export const PAUSE_LIMIT_MS = 10;

export interface Percentiles {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** What process A's `loop delay` lines (src/runtime/loop-delay.ts) said over a window. */
export interface LoopDelaySummary {
  /** Log lines (one per logging interval) that fell in the window. */
  readonly intervals: number;
  /** Longest pause of the delivery loop, ms (null when no line fell in the window). */
  readonly maxMs: number | null;
  /** The highest per-interval p99, ms. */
  readonly worstP99Ms: number | null;
  /** Intervals whose longest pause exceeded PAUSE_LIMIT_MS. */
  readonly intervalsOverLimit: number;
  /** The longest routing update (an edit's delta slice) the loop applied, ms, and how many it applied. */
  readonly applyMaxMs: number | null;
  readonly applies: number;
  /** The longest garbage-collection pause of the delivery thread, ms. */
  readonly gcMaxMs: number | null;
  /** Of the intervals over the limit, those whose longest pause was a GC pause (not an applied update). */
  readonly overLimitByGc: number;
  /**
   * How long in all the delivery thread was runnable without a CPU in the window (the kernel's
   * run-queue time; null when the lines carry no wait field, i.e. off Linux).
   */
  readonly waitMs: number | null;
  /**
   * Of the intervals over the limit not explained by GC, those whose longest pause was within the
   * limit once the time the host did not run the CPU is taken off it (stall probes pinned one to each
   * CPU woke late for it; bench/harness/stall-probe.ts, bench/edits/loop-pauses.ts). Null when that cannot be seen
   * (the probes not at real-time priority or not one per CPU, or lines without the pause's moment);
   * absent in results from before it was measured.
   */
  readonly overLimitByHost?: number | null;
  /**
   * Of the intervals over the limit not explained by GC or the host, those in which the loop waited for a core:
   * by the longest pause's split when the lines carry one (most of it queued), otherwise when the
   * interval's run-queue wait was at least as long as the pause.
   */
  readonly overLimitByWait: number;
  /**
   * Of the intervals over the limit not explained by GC or the host, by the longest pause's split (null: the
   * lines carry none): most of it neither running nor runnable (the VM not run by the host, or a
   * blocking call), and most of it running the loop's own work. Absent in results from before the split was logged.
   */
  readonly overLimitOffCpu?: number | null;
  readonly overLimitOwnWork?: number | null;
  /**
   * Each interval over the limit as the log gave it, with the cause it was put down to, so a reader
   * can check the attribution (absent in results from before they were kept).
   */
  readonly overLimit?: readonly PauseRecord[];
}

/** One interval over the limit: its longest pause and the figures its cause was judged on. */
export interface PauseRecord {
  readonly cause: 'gc' | 'host' | 'queued' | 'off' | 'own';
  readonly maxMs: number;
  readonly gcMaxMs: number;
  readonly applyMaxMs: number;
  /** The log's longest gap and its split (null where the lines carry none). */
  readonly longestMs: number | null;
  readonly ranMs: number | null;
  readonly queuedMs: number | null;
  readonly offMs: number | null;
  /** When that gap ended, ms since the epoch (null where the line does not say). */
  readonly endedAt: number | null;
  /** Requests the loop answered within that gap: many for one long poll turn, 0-1 for one long task. */
  readonly answered: number | null;
  /**
   * How long within that gap the host did not run the loop's CPU, and whichever CPU it stopped the
   * longest, by the probes' late wake-ups (ms; null where the line gives no moment; absent in older
   * results). The pause less the first (running) or the second (queued, off) is what the guest took.
   */
  readonly hostMs?: number | null;
  readonly hostAnyCpuMs?: number | null;
  /** The longest CPU stall a probe saw end within a second of it, ms, and on which CPU. */
  readonly nearestStallMs: number | null;
  readonly nearestStallCpu: number | null;
}

/** A loop pause measures up to this much more than the GC pause behind it (1 ms sampling, wake-up). */
export const GC_ATTRIBUTION_SLACK_MS = 3;

export interface PhaseResult {
  readonly durationSec: number;
  readonly wrk: WrkStats;
  readonly loopDelay: LoopDelaySummary;
  /** bench/harness/stall-probe.ts beside the load: moments the whole machine did not run. */
  readonly machineStalls: StallStats;
}

/**
 * Phase 1 or 2: the runs of one condition of the alternated rounds, taken together. `wrk` is the
 * median of the runs' figures (`rounds`, in order), `durationSec` their sum.
 */
export type LatencyPhase = PhaseResult & { readonly rounds: readonly WrkStats[] };

export interface WriteStats {
  /** Writes the schedule asked for (duration / interval) and writes sent (fewer when writes are slower than the interval). */
  readonly scheduled: number;
  readonly sent: number;
  /** Writes answered with a status other than 200 (or not answered). */
  readonly failed: number;
  /** Admin PUT latency on process A, from sending to the answer, ms. */
  readonly adminMs: Percentiles | null;
  /** Writes process B served within the wait, and writes it never served within it. */
  readonly visible: number;
  readonly notVisible: number;
  /** Writes B already served on the first look after A answered. */
  readonly visibleAtAnswer: number;
  /** How long each poll waits after A's answer before calling a write not visible, ms. */
  readonly visibleWaitMs: number;
  /**
   * Edit-to-visible on B, from sending the PUT, over every answered write; a not-visible write counts
   * as longer than any visible one, so a percentile that lands on one is null ("not visible").
   */
  readonly visibleMs: { readonly p50: number | null; readonly p99: number | null; readonly max: number | null };
}

export interface ImportStats {
  readonly bytes: number;
  readonly items: number;
  readonly status: number;
  /** From sending the POST to its answer, ms. */
  readonly adminMs: number;
  /** Seconds after the load started that the import was sent. */
  readonly sentAtSec: number;
  /** True when the import answered before the load run ended (the figures then cover all of it). */
  readonly withinLoad: boolean;
  /** Loop-delay lines whose interval overlapped the import. */
  readonly loopDelay: LoopDelaySummary;
}

export interface ProcessStart {
  /** From spawn to the "listening on" line, ms. */
  readonly startupMs: number;
  /** VmRSS when "listening on" was printed, bytes. */
  readonly rssAfterStartBytes: number;
  /** VmRSS at the end of the run, bytes. */
  readonly rssEndBytes: number;
  /**
   * Process A only (null for B): VmRSS once start-up garbage was collected, i.e. once RSS stopped
   * falling (V8's memory reducer runs some seconds after the start-up burst of allocation), and
   * VmHWM, the peak RSS of start-up, at that moment.
   */
  readonly rssSettledBytes: number | null;
  readonly rssPeakBytes: number | null;
  /** Seconds waited for RSS to settle (bounded by SETTLE_MAX_SEC). */
  readonly settleSec: number | null;
  /** The process's start-up line on the CPU priority of bulk edits (absent in results before it was logged). */
  readonly bulkPriority?: string | null;
  /** ... and on its delivery loops' (absent in results before it was logged). */
  readonly deliveryPriority?: string | null;
}

export interface EditsOptions {
  readonly items: number;
  readonly durationSec: number;
  /** Phases 1-2 alternate in this many rounds of durationSec / rounds each way. */
  readonly rounds: number;
  readonly writeEveryMs: number;
  readonly connections: number;
  readonly smoke: boolean;
  readonly importBytes: number;
  readonly visibleWaitMs: number;
  readonly loopDelayLogMs: number;
}

export interface EditsResults {
  readonly version: 1;
  readonly kind: 'edits';
  readonly date: string;
  readonly host: string;
  readonly node: string;
  readonly cpus: { readonly model: string; readonly count: number };
  readonly loadavgAtStart: readonly number[];
  readonly loadavgAtEnd: readonly number[];
  readonly options: EditsOptions;
  /** The generated store: bundle size and how long `rcd import` took to write it. */
  readonly store: { readonly bundleBytes: number; readonly importMs: number };
  /** A: load, writes and imports go to it; B: a second `rcd serve` on the same SQLite file. */
  readonly processA: ProcessStart;
  readonly processB: ProcessStart;
  /** Phases 1 and 2, on A without the loop-delay log: the latency, write and visibility figures. */
  readonly withoutWrites: LatencyPhase;
  readonly withWrites: LatencyPhase & { readonly writes: WriteStats };
  /**
   * Phases 3-5, on A restarted with the loop-delay log (the log's own work can cost time):
   * the pauses of the load alone, then which pauses the writes and the import caused.
   */
  readonly diagnosedQuiet: PhaseResult;
  readonly diagnosedWrites: PhaseResult & { readonly writes: WriteStats };
  readonly underImport: PhaseResult & { readonly import: ImportStats };
  readonly targets: readonly TargetCheck[];
  readonly problems: readonly string[];
  readonly ok: boolean;
}

export interface TargetCheck {
  readonly what: string;
  readonly verdict: 'pass' | 'FAIL' | 'n/a';
  readonly measured: string;
}

/** The nearest-rank percentile of sorted values. */
export function percentileOf(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new Error('percentileOf needs values');
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}

export function percentiles(values: readonly number[]): Percentiles | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentileOf(sorted, 50), p99: percentileOf(sorted, 99), max: sorted[sorted.length - 1] as number };
}

function ms(n: number | null, digits = 1): string {
  return n === null ? 'n/a' : `${n.toFixed(digits)} ms`;
}

function visibleText(n: number | null, w: WriteStats): string {
  return n === null ? (w.notVisible > 0 ? `not visible (> ${w.visibleWaitMs} ms after the answer)` : 'n/a') : `${n.toFixed(1)} ms`;
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MB`;
}

function pauseText(d: LoopDelaySummary): string {
  return d.maxMs === null
    ? 'no loop-delay line'
    : `max pause ${d.maxMs.toFixed(1)} ms; ${d.intervalsOverLimit} of ${d.intervals} intervals with a pause over ${PAUSE_LIMIT_MS} ms` +
        ` (${d.overLimitByGc} of them GC${(d.overLimitByHost ?? null) === null ? '' : `, ${d.overLimitByHost} within the limit less the time the host stopped the CPU`}${d.waitMs === null ? '' : `, ${d.overLimitByWait} waiting for a core`}${(d.overLimitOffCpu ?? null) === null ? '' : `, ${d.overLimitOffCpu} off-CPU, ${d.overLimitOwnWork ?? 0} the loop's own work`}); longest update applied ${(d.applyMaxMs ?? 0).toFixed(1)} ms (${d.applies} updates); longest GC pause ${(d.gcMaxMs ?? 0).toFixed(1)} ms` +
        (d.waitMs === null ? '' : `; the loop waited for a CPU ${d.waitMs.toFixed(0)} ms in all`);
}

/**
 * "No pause over the limit caused by a write": every update the loop applied took at most the limit,
 * and every interval that held a longer pause is explained by a GC pause of the same length (which
 * the without-writes phase shows to be the load's own, and which is reported beside the verdict) or
 * by the host: less the time the host did not run the CPU, the pause was within the limit (nothing
 * in the guest, the write included, runs on a CPU the host has stopped; the count is reported
 * beside the verdict, and each such pause with its host time in the results).
 */
function writePauseVerdict(d: LoopDelaySummary): TargetCheck['verdict'] {
  if (d.maxMs === null || d.applyMaxMs === null) return 'n/a';
  return d.applyMaxMs <= PAUSE_LIMIT_MS && d.intervalsOverLimit === d.overLimitByGc + (d.overLimitByHost ?? 0) ? 'pass' : 'FAIL';
}

function stallsText(s: StallStats): string {
  return `machine stalls: ${s.stalls}${s.stalls > 0 ? ` (max ${s.maxStallMs.toFixed(0)} ms)` : ''}${s.realtime ? '' : ' (probe not real-time)'}${s.perCpu === false ? ' (one unpinned probe)' : ''}`;
}

/** The issue's targets for edits under load, judged on what this run measured. */
export function evaluateEditsTargets(r: Omit<EditsResults, 'targets' | 'ok'>): TargetCheck[] {
  const out: TargetCheck[] = [];
  const items = r.options.items;
  const sized = (n: number, check: () => TargetCheck): TargetCheck => {
    const t = check();
    return items >= n ? t : { what: t.what, verdict: 'n/a', measured: `${t.measured} (run has ${items} items; judged at ${n})` };
  };
  const without = r.withoutWrites.wrk.latencyMs.p99;
  const withW = r.withWrites.wrk.latencyMs.p99;
  out.push(
    sized(50_000, () => ({
      what: '50,000 items: delivery p99 with writes within 1.5x of p99 without',
      verdict: withW <= 1.5 * without ? 'pass' : 'FAIL',
      measured:
        `${withW.toFixed(2)} ms vs ${without.toFixed(2)} ms (${(withW / without).toFixed(2)}x), medians over ${r.withWrites.rounds.length} alternated round(s); ` +
        `per round ${roundsP99Text(r)}`,
    })),
  );
  const ld = r.diagnosedWrites.loopDelay;
  out.push(
    sized(50_000, () => ({
      what: `50,000 items: no delivery pause over ${PAUSE_LIMIT_MS} ms caused by a write`,
      verdict: writePauseVerdict(ld),
      measured: `with writes, loop-delay log on: ${pauseText(ld)}; ${stallsText(r.diagnosedWrites.machineStalls)}; without writes, log on: ${pauseText(r.diagnosedQuiet.loopDelay)}`,
    })),
  );
  const admin = r.withWrites.writes.adminMs;
  out.push(
    sized(50_000, () => ({
      what: '50,000 items: admin write median under 50 ms',
      verdict: admin === null ? 'n/a' : admin.p50 < 50 ? 'pass' : 'FAIL',
      measured: admin === null ? 'no write answered' : `${admin.p50.toFixed(1)} ms over ${r.withWrites.writes.sent} writes`,
    })),
  );
  out.push(
    sized(100_000, () => ({
      what: '100,000 items: start-up from an existing store under 3 s',
      verdict: r.processA.startupMs < 3000 ? 'pass' : 'FAIL',
      measured: `${(r.processA.startupMs / 1000).toFixed(2)} s (second process: ${(r.processB.startupMs / 1000).toFixed(2)} s)`,
    })),
  );
  out.push(
    sized(100_000, () => ({
      what: '100,000 items: RSS under 300 MB',
      verdict: r.processA.rssSettledBytes === null ? 'n/a' : r.processA.rssSettledBytes < 300 * 1048576 ? 'pass' : 'FAIL',
      measured:
        `${r.processA.rssSettledBytes === null ? 'n/a' : mib(r.processA.rssSettledBytes)} once start-up garbage was collected (${r.processA.settleSec ?? 0} s after start); ` +
        `${mib(r.processA.rssAfterStartBytes)} at the "listening" line, peak ${r.processA.rssPeakBytes === null ? 'n/a' : mib(r.processA.rssPeakBytes)}, ${mib(r.processA.rssEndBytes)} at the end`,
    })),
  );
  const w = r.withWrites.writes;
  const answered = w.visible + w.notVisible;
  const p99 = w.visibleMs.p99;
  const visibleVerdict = answered === 0 ? 'n/a' : p99 === null || p99 > 100 ? 'FAIL' : answered >= 200 ? 'pass' : 'n/a';
  out.push({
    what: 'an edit visible on the second process within 100 ms (p99 over 200 edits)',
    verdict: visibleVerdict,
    measured:
      `p99 ${visibleText(p99, w)} over ${answered} edits` +
      `${answered < 200 ? ' (fewer than 200)' : ''}; ${w.notVisible} not visible, ${w.visibleAtAnswer} already visible when the write answered`,
  });
  const imp = r.underImport.import;
  out.push({
    what: `an 8 MiB import causes no delivery pause over ${PAUSE_LIMIT_MS} ms`,
    verdict: imp.bytes < 8 * 1048576 * 0.95 ? 'n/a' : writePauseVerdict(imp.loopDelay),
    measured: `${mib(imp.bytes)} bundle, answered in ${imp.adminMs.toFixed(0)} ms: ${pauseText(imp.loopDelay)}; delivery max ${r.underImport.wrk.latencyMs.max.toFixed(1)} ms`,
  });
  return out;
}

/** Each round's p99 with writes / without, ms: how far apart the rounds were. */
function roundsP99Text(r: Omit<EditsResults, 'targets' | 'ok'>): string {
  return r.withWrites.rounds.map((w, i) => `${w.latencyMs.p99.toFixed(2)}/${r.withoutWrites.rounds[i]?.latencyMs.p99.toFixed(2) ?? 'n/a'}`).join(', ');
}

const PHASE_COLUMNS = [
  'phase', 's', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'non2xx', 'sock err', 'loop max ms',
  `intervals > ${PAUSE_LIMIT_MS} ms (GC, host, queued, off-CPU, own work)`, 'apply max ms (updates)', 'GC max ms', 'run-queue wait ms', 'machine stalls',
];

function phaseRow(name: string, p: PhaseResult): string[] {
  return [
    name,
    p.durationSec.toFixed(1),
    Math.round(p.wrk.reqPerSec).toLocaleString('en-US'),
    p.wrk.latencyMs.p50.toFixed(2),
    p.wrk.latencyMs.p99.toFixed(2),
    p.wrk.latencyMs.max.toFixed(1),
    String(p.wrk.non2xx),
    String(p.wrk.socketErrors),
    p.loopDelay.maxMs === null ? 'n/a' : p.loopDelay.maxMs.toFixed(1),
    `${p.loopDelay.intervalsOverLimit} / ${p.loopDelay.intervals} (${p.loopDelay.overLimitByGc}, ${p.loopDelay.overLimitByHost ?? 'n/a'}, ${p.loopDelay.waitMs === null ? 'n/a' : p.loopDelay.overLimitByWait}, ${p.loopDelay.overLimitOffCpu ?? 'n/a'}, ${p.loopDelay.overLimitOwnWork ?? 'n/a'})`,
    p.loopDelay.applyMaxMs === null ? 'n/a' : `${p.loopDelay.applyMaxMs.toFixed(1)} (${p.loopDelay.applies})`,
    p.loopDelay.gcMaxMs === null ? 'n/a' : p.loopDelay.gcMaxMs.toFixed(1),
    p.loopDelay.waitMs === null ? 'n/a' : p.loopDelay.waitMs.toFixed(0),
    `${p.machineStalls.stalls}${p.machineStalls.stalls > 0 ? ` (max ${p.machineStalls.maxStallMs.toFixed(0)})` : ''}`,
  ];
}

function phaseRows(r: EditsResults): string[][] {
  return [
    phaseRow(`without writes (median of ${r.withoutWrites.rounds.length})`, r.withoutWrites),
    phaseRow(`with writes (median of ${r.withWrites.rounds.length})`, r.withWrites),
    phaseRow('no writes, log on', r.diagnosedQuiet),
    phaseRow('writes, log on', r.diagnosedWrites),
    phaseRow(`${(r.underImport.import.bytes / 1048576).toFixed(1)} MiB import, log on`, r.underImport),
  ];
}

/** The other figures, one "name: value" line each (stdout and the Markdown summary). */
function figureLines(r: EditsResults): string[] {
  const w = r.withWrites.writes;
  const imp = r.underImport.import;
  const adm = w.adminMs;
  return [
    `store: ${r.options.items.toLocaleString('en-US')} items, bundle ${mib(r.store.bundleBytes)}, rcd import ${(r.store.importMs / 1000).toFixed(2)} s`,
    `start-up A: ${(r.processA.startupMs / 1000).toFixed(2)} s, RSS ${mib(r.processA.rssAfterStartBytes)} after start, ` +
      `${r.processA.rssSettledBytes === null ? 'n/a' : mib(r.processA.rssSettledBytes)} settled (${r.processA.settleSec ?? 0} s), peak ${r.processA.rssPeakBytes === null ? 'n/a' : mib(r.processA.rssPeakBytes)}, ${mib(r.processA.rssEndBytes)} at the end`,
    `start-up B: ${(r.processB.startupMs / 1000).toFixed(2)} s, RSS ${mib(r.processB.rssAfterStartBytes)} after start, ${mib(r.processB.rssEndBytes)} at the end`,
    `priority (A): ${r.processA.deliveryPriority ?? 'delivery: not logged'}; ${r.processA.bulkPriority ?? 'bulk edits: not logged'}`,
    `admin writes: ${w.sent} sent of ${w.scheduled} scheduled (one every ${r.options.writeEveryMs} ms, one at a time), ${w.failed} failed; ` +
      `latency median ${ms(adm?.p50 ?? null)}, p99 ${ms(adm?.p99 ?? null)}, max ${ms(adm?.max ?? null)}`,
    `edit-to-visible on B (from the PUT): p50 ${visibleText(w.visibleMs.p50, w)}, p99 ${visibleText(w.visibleMs.p99, w)}, max ${visibleText(w.visibleMs.max, w)}; ` +
      `${w.visible} visible, ${w.notVisible} not visible within ${w.visibleWaitMs} ms of the answer, ${w.visibleAtAnswer} already visible when the write answered`,
    `with the loop-delay log on (A restarted): admin write median ${ms(r.diagnosedWrites.writes.adminMs?.p50 ?? null)}, edit-to-visible p99 ${visibleText(r.diagnosedWrites.writes.visibleMs.p99, r.diagnosedWrites.writes)}, ` +
      `delivery p99 ${r.diagnosedWrites.wrk.latencyMs.p99.toFixed(2)} ms (latency targets read phases 1-2, without the log)`,
    `import: ${mib(imp.bytes)} (${imp.items.toLocaleString('en-US')} items), status ${imp.status}, answered in ${(imp.adminMs / 1000).toFixed(2)} s ` +
      `(sent ${imp.sentAtSec} s into the load${imp.withinLoad ? '' : '; it outlasted the load run'}); during it: ${pauseText(imp.loopDelay)}`,
  ];
}

export function renderEditsText(r: EditsResults): string {
  const targets = r.targets.map((t) => `  ${t.verdict.padEnd(4)}  ${t.what}: ${t.measured}`);
  return [textTable(PHASE_COLUMNS, phaseRows(r)), '', ...figureLines(r), '', 'targets:', ...targets].join('\n');
}

export function renderEditsMarkdown(r: EditsResults): string {
  const o = r.options;
  const lines = [
    `# Edits under load ${r.date} on ${r.host}`,
    '',
    `${r.cpus.count} x ${r.cpus.model}, Node ${r.node}, load average ${r.loadavgAtStart.map((n) => n.toFixed(2)).join(' ')} at start, ` +
      `${r.loadavgAtEnd.map((n) => n.toFixed(2)).join(' ')} at the end. ${o.items.toLocaleString('en-US')} items, ${o.durationSec} s per phase, ` +
      `wrk at ${o.connections} connections on a plain content request of process A, one admin write every ${o.writeEveryMs} ms` +
      `${o.smoke ? ', SMOKE RUN (speed figures meaningless)' : ''}.`,
    '',
    `| ${PHASE_COLUMNS.join(' | ')} |`,
    `|${PHASE_COLUMNS.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
    ...phaseRows(r).map((row) => `| ${row.join(' | ')} |`),
    '',
    `Phases 1-2 run on A without the loop-delay log (latency, writes, visibility), in ${o.rounds} round(s) of ${Math.max(1, Math.floor(o.durationSec / o.rounds))} s without writes and as long with, ` +
      `the order alternating; their rows are the median of the rounds' figures (s: the rounds' sum; machine stalls: all rounds'); A is then restarted with the log for the last three ` +
      `(pauses: the log's collection counter, its 1 ms timer and its schedstat reads are work of their own). ` +
      `loop max = the longest pause of process A's delivery event loop (RCD_LOOP_DELAY_LOG_MS=${o.loopDelayLogMs}); ` +
      `(GC, host, queued, off-CPU, own work) = intervals whose longest pause was a garbage collection of that length, those whose longest pause a stall probe pinned to a CPU saw that CPU not run for (the host stopped it), and of the others, by the longest pause's split (src/runtime/loop-delay.ts), those spent mostly waiting for a CPU, mostly neither running nor runnable (the VM not run, or a blocking call), and mostly running the loop's own work; ` +
      `apply max = the longest routing update the loop applied; run-queue wait = how long in all the loop's thread was ready to run without a CPU (/proc schedstat); ` +
      `machine stalls = wake-ups of real-time probes, one pinned to each CPU, 5 ms or more late (the host did not run that CPU).`,
    '',
    ...figureLines(r).map((l) => `- ${l}`),
    '',
    '## Targets',
    '',
    '| target | measured | verdict |',
    '|---|---|---|',
    ...r.targets.map((t) => `| ${t.what} | ${t.measured} | ${t.verdict} |`),
    '',
  ];
  if (r.problems.length > 0) lines.push('## Problems', '', ...r.problems.map((p) => `- ${p}`), '');
  return lines.join('\n');
}

/** <dir>/<date>-<host>-edits.json (+ .md); a second run the same day gets -2, -3, ... */
export function writeEditsResults(r: EditsResults, dir: string): { json: string; md: string } {
  const stem = freeResultStem(dir, `${r.date.slice(0, 10)}-${hostTag()}-edits`);
  writeFileSync(`${stem}.json`, JSON.stringify(r, null, 2) + '\n');
  writeFileSync(`${stem}.md`, renderEditsMarkdown(r));
  return { json: `${stem}.json`, md: `${stem}.md` };
}
