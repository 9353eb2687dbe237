/**
 * What paused the delivery loop of a server run with RCD_LOOP_DELAY_LOG_MS (src/runtime/loop-delay.ts):
 * its log lines read back, and each interval whose longest pause was over the limit put down to one
 * cause: a garbage collection, a CPU the host did not run (stall probes pinned one to each CPU saw it
 * stopped for all of the pause but the limit, bench/harness/stall-probe.ts), the loop waiting for a core the
 * guest gave to another thread, the loop off every CPU (a blocking call, or the VM not run where no
 * probe could tell), or the loop's own work. bench:edits judges "no pause caused by a write" on these.
 */
import { GC_ATTRIBUTION_SLACK_MS, PAUSE_LIMIT_MS, type LoopDelaySummary, type PauseRecord } from './edits-report.js';
import type { StallEvent, StallStats } from '../harness/wrk.js';

export interface LoopDelayLine {
  /** performance.now() of the bench when the line was read (the end of the interval it covers). */
  readonly at: number;
  readonly p99: number;
  readonly max: number;
  /** The longest routing update the loop applied in the interval, and how many it applied. */
  readonly applyMax: number;
  readonly applies: number;
  /** The longest garbage-collection pause of the delivery thread in the interval. */
  readonly gcMax: number;
  /** How long in all the delivery thread was runnable without a CPU in the interval (null: not logged). */
  readonly wait: number | null;
  /** The interval's longest gap of the log's 1 ms timer, split by what the thread did (null: not logged). */
  readonly split: {
    readonly longest: number;
    readonly ran: number;
    readonly queued: number;
    readonly off: number;
    readonly endedAt: number | null;
    /** The CPU the loop was on when the gap ended (null: an older server's line). */
    readonly cpu: number | null;
    /** Requests the loop answered within the gap (null: an older server's line). */
    readonly answered: number | null;
  } | null;
}

/** `gc=n/a` where the collection counter does not load (then no pause is put down to GC); `at=`, `cpu=`, `answered=` on newer servers. */
const LOOP_DELAY_LINE =
  /^rcd: loop delay p50=([\d.]+)ms p99=([\d.]+)ms max=([\d.]+)ms apply=([\d.]+)ms\/(\d+) gc=(?:([\d.]+)ms\/(\d+)|n\/a)(?: wait=([\d.]+)ms)?(?: longest=([\d.]+)ms ran=([\d.]+)ms queued=([\d.]+)ms off=(-?[\d.]+)ms(?: at=([\d.]+))?(?: cpu=(\d+))?(?: answered=(\d+))?)?$/;

/** One loop-delay line read at `at` (the bench's performance.now()); null for any other line. */
export function parseLoopDelayLine(line: string, at: number): LoopDelayLine | null {
  const d = LOOP_DELAY_LINE.exec(line);
  if (d === null) return null;
  const split = d[9] === undefined ? null : { longest: Number(d[9]), ran: Number(d[10]), queued: Number(d[11]), off: Number(d[12]), endedAt: d[13] === undefined ? null : Number(d[13]), cpu: d[14] === undefined ? null : Number(d[14]), answered: d[15] === undefined ? null : Number(d[15]) };
  return { at, p99: Number(d[2]), max: Number(d[3]), applyMax: Number(d[4]), applies: Number(d[5]), gcMax: d[6] === undefined ? 0 : Number(d[6]), wait: d[8] === undefined ? null : Number(d[8]), split };
}

/**
 * The loop-delay lines of a window, summed up. A line covers the time since the line before it (longer than the
 * interval when the loop was blocked). For a phase: the lines whose interval lies mostly inside
 * [from, to]; with `overlapping`, every line whose interval overlaps [from, to] at all.
 */
export function loopDelayIn(lines: readonly LoopDelayLine[], intervalMs: number, stalls: StallStats, from: number, to: number, overlapping = false): LoopDelaySummary {
  const half = intervalMs / 2;
  const inside = lines.filter((l, i) => {
    const coveredFrom = i > 0 ? (lines[i - 1] as LoopDelayLine).at : l.at - intervalMs;
    return overlapping ? l.at > from && coveredFrom < to : l.at > from + half && l.at <= to + half;
  });
  if (inside.length === 0) {
    return { intervals: 0, maxMs: null, worstP99Ms: null, intervalsOverLimit: 0, applyMaxMs: null, applies: 0, gcMaxMs: null, overLimitByGc: 0, waitMs: null, overLimitByHost: null, overLimitByWait: 0, overLimitOffCpu: null, overLimitOwnWork: null, overLimit: [] };
  }
  const over = inside.filter((l) => l.max > PAUSE_LIMIT_MS);
  const split = inside.every((l) => l.split !== null);
  // Only probes at real-time priority, one on each CPU, see every CPU the host did not run (and
  // nothing in the guest delaying them); the pause's moment is needed to lay it beside them.
  const seesHost = split && stalls.realtime && stalls.perCpu && inside.every((l) => l.split?.endedAt !== null);
  // Every late wake-up where the probes listed them, else their stalls only: a host taking a CPU in
  // 1-4 ms slices is seen only in the former.
  const lates = stalls.lates ?? stalls.events;
  const records = over.map((l) => pauseRecord(l, causeOf(l, split, seesHost, lates), lates, stalls.events));
  const counted = (cause: PauseRecord['cause']): number => records.filter((r) => r.cause === cause).length;
  const waits = inside.map((l) => l.wait);
  return {
    intervals: inside.length,
    maxMs: Math.max(...inside.map((l) => l.max)),
    worstP99Ms: Math.max(...inside.map((l) => l.p99)),
    intervalsOverLimit: over.length,
    applyMaxMs: Math.max(...inside.map((l) => l.applyMax)),
    applies: inside.reduce((n, l) => n + l.applies, 0),
    gcMaxMs: Math.max(...inside.map((l) => l.gcMax)),
    overLimitByGc: counted('gc'),
    overLimitByHost: seesHost ? counted('host') : null,
    waitMs: waits.some((w) => w === null) ? null : waits.reduce<number>((sum, w) => sum + (w ?? 0), 0),
    overLimitByWait: counted('queued'),
    overLimitOffCpu: split ? counted('off') : null,
    overLimitOwnWork: split ? counted('own') : null,
    overLimit: records,
  };
}

/**
 * The one cause an interval over the limit is put down to, in this order: the collector, a CPU the
 * host stopped (only where the probes can see it), then by the longest pause's split; lines without
 * a split count as waiting for a core when the interval's run-queue wait was as long as the pause.
 */
function causeOf(l: LoopDelayLine, split: boolean, seesHost: boolean, lates: readonly StallEvent[]): PauseRecord['cause'] {
  if (pausedByGc(l)) return 'gc';
  if (!split) return l.wait !== null && l.wait >= l.max ? 'queued' : 'own';
  const kind = pauseKind(l);
  // Only where the split is the pause the histogram measured (pauseKind's own condition for queued
  // and off). The loop ran through it by the kernel's count: only stops of its own CPU explain that
  // (a host pause not reported as steal counts as run time); queued or off, those of any CPU do.
  if (seesHost && splitIsTheMax(l) && guestShareMs(l, hostMsIn(l, kind === 'own' ? (l.split?.cpu ?? NO_CPU) : null, lates)) <= PAUSE_LIMIT_MS) return 'host';
  return kind;
}

function pauseRecord(l: LoopDelayLine, cause: PauseRecord['cause'], lates: readonly StallEvent[], events: readonly StallEvent[]): PauseRecord {
  const s = l.split;
  const endedAt = s?.endedAt ?? null;
  let near: StallEvent | null = null;
  if (endedAt !== null) {
    for (const e of events) if (Math.abs(e.endedAt - endedAt) <= 1000 && (near === null || e.lateMs > near.lateMs)) near = e;
  }
  return {
    cause,
    maxMs: l.max,
    gcMaxMs: l.gcMax,
    applyMaxMs: l.applyMax,
    longestMs: s?.longest ?? null,
    ranMs: s?.ran ?? null,
    queuedMs: s?.queued ?? null,
    offMs: s?.off ?? null,
    endedAt,
    answered: s?.answered ?? null,
    hostMs: endedAt === null ? null : round1(hostMsIn(l, s?.cpu ?? NO_CPU, lates)),
    hostAnyCpuMs: endedAt === null ? null : round1(hostMsIn(l, null, lates)),
    nearestStallMs: near?.lateMs ?? null,
    nearestStallCpu: near?.cpu ?? null,
  };
}

function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

/**
 * What the interval's longest pause was mostly made of, by its split: the larger of running,
 * queued and off-CPU. The split is the log's own timer's longest gap, which is the same pause as the
 * histogram's max when both are within the GC slack of each other; otherwise the larger of the
 * two parts it cannot see is unknown, and the pause counts as the loop's own work.
 */
function pauseKind(l: LoopDelayLine): 'queued' | 'off' | 'own' {
  const s = l.split;
  if (s === null || !splitIsTheMax(l)) return 'own';
  if (s.queued >= s.ran && s.queued >= s.off) return 'queued';
  if (s.off >= s.ran) return 'off';
  return 'own';
}

/** True when the split's gap is the interval's longest pause (within the sampling slack). */
function splitIsTheMax(l: LoopDelayLine): boolean {
  return l.split !== null && l.split.longest >= l.max - GC_ATTRIBUTION_SLACK_MS;
}

/**
 * How long the host did not run a CPU within the interval's longest gap, by the late wake-ups of the
 * probe pinned to it: those of `onCpu`, or of whichever CPU lost the most (`null`). A probe at
 * real-time priority is late only when its CPU did not run at all. A loop queued on a CPU the host
 * is not running waits as long as that CPU does (a guest does not move a woken thread off it), and a
 * running loop stops with its own CPU only (then `onCpu` names it: a stall elsewhere does not stop it).
 */
function hostMsIn(l: LoopDelayLine, onCpu: number | null, lates: readonly StallEvent[]): number {
  const s = l.split;
  if (s === null || s.endedAt === null) return 0;
  const [from, to] = [s.endedAt - s.longest, s.endedAt];
  const byCpu = new Map<number | null, number>();
  for (const e of lates) {
    if (onCpu !== null && e.cpu !== onCpu) continue;
    const overlap = Math.min(to, e.endedAt) - Math.max(from, e.endedAt - e.lateMs);
    if (overlap > 0) byCpu.set(e.cpu, (byCpu.get(e.cpu) ?? 0) + overlap);
  }
  return Math.max(0, ...byCpu.values());
}

/**
 * The most of the interval's longest pause anything in the guest can have taken (a write among it):
 * the pause less the time the host did not run the CPU. Of the histogram's pause and the log's gap,
 * the longer, so that host time counted in the gap but outside the pause is not taken off it. At or
 * under the limit, the guest, a write included, did not make a pause over it: without the host's
 * stops it would have been that long at most.
 */
function guestShareMs(l: LoopDelayLine, hostMs: number): number {
  return Math.max(l.max, l.split?.longest ?? 0) - hostMs;
}

/** Matches no probe's CPU: a running loop whose CPU the line does not name is never put down to the host. */
const NO_CPU = -1;

/**
 * True when the interval's longest pause is the collector's: a GC pause over the limit, at least as
 * long as any update applied in the interval, and close to the pause the loop measured. The loop
 * delay is sampled every millisecond, so a pause measures up to ~1 ms more than its cause.
 */
function pausedByGc(l: LoopDelayLine): boolean {
  return l.gcMax > PAUSE_LIMIT_MS && l.gcMax >= l.applyMax && l.gcMax >= l.max - GC_ATTRIBUTION_SLACK_MS;
}
