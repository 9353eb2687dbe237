/**
 * An opt-in diagnostic: how long the delivery event loop was kept from running, and by what. With
 * `RCD_LOOP_DELAY_LOG_MS=N` the server samples its loop with `perf_hooks.monitorEventLoopDelay` and
 * logs one line every N ms, then starts the next window afresh:
 *
 *   loop delay p50=…ms p99=…ms max=…ms apply=…ms/N gc=…ms/N wait=…ms longest=…ms ran=…ms queued=…ms off=…ms at=… cpu=… answered=…
 *
 * `apply` is the longest routing update (a delta slice or a snapshot) the loop applied in the window
 * and how many it applied; `gc` the longest garbage-collection pause of this thread and how many
 * collections paused it; `wait` how long in all the thread was ready to run but had no CPU (the
 * kernel's run-queue time, /proc/thread-self/schedstat; absent where /proc has no such file). A
 * long loop delay with an equally long `gc` was the collector, one with an equally long `apply` was
 * an edit, and one in a window whose `wait` is at least as long is consistent with the scheduler
 * (more runnable threads than cores); the benchmark of edits under load tells them apart this way.
 * `longest` is the window's longest gap between two ticks of a 1 ms timer of this log's own, split
 * by the thread's schedstat read at both ends: `ran` (its own work: JavaScript, GC, an update),
 * `queued` (runnable without a CPU) and `off` (neither: the machine did not run the VM, or the
 * thread slept in a system call), and `at` when that gap ended (ms since the epoch, to 0.1 ms: the
 * clock of `performance.timeOrigin`), so that the pause can be laid beside what else happened then
 * (bench:edits sets it beside the moments a probe pinned to each CPU saw that CPU not run), `cpu`
 * the CPU the thread was on when that gap ended, and `answered` how many requests the loop answered
 * within it (one long task answers none or one; a long turn of libuv's poll phase answers many). A
 * pause of the host that the hypervisor does not report as steal (on the 2-core Firecracker VM,
 * both CPUs stopped together for ~10 ms) counts as `ran`: only a stall of the loop's own CPU tells
 * such a pause from the loop's own work. The kernel brings a running thread's figures up to date at
 * scheduler events, so each part is good to ~2 ms and `off` can read slightly negative. Both `wait`
 * and the split need /proc/thread-self/schedstat (Linux) and are absent without it.
 * The collections are counted by @datadog/native-metrics (a prebuilt addon, loaded only when this log
 * is on): per thread, a fixed-size record of each window's pauses that its `stats()` hands over and
 * resets, so nothing grows with the number of collections or of windows. Where it does not load,
 * the line says `gc=n/a`. The addon also times every turn of the loop and reads the heap's space
 * statistics on each `stats()`; with the log's own 1 ms timer that is work the log adds, so
 * bench:edits still reads latency from a server without this log and pauses from one with it.
 * Unset, nothing is observed and nothing runs (the feed's `recordApply` costs two field writes per
 * update).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { StartupError } from './config.js';
import { logInfo } from './log.js';

const VARIABLE = 'RCD_LOOP_DELAY_LOG_MS';
const MIN_INTERVAL_MS = 100;
const MAX_INTERVAL_MS = 3_600_000;
/** The sampling timer's period: a pause is measured to this precision (one wake-up per ms costs a few µs). */
const RESOLUTION_MS = 1;

/** The longest piece of one kind of work in the current window, and how many pieces there were. */
interface WindowMax {
  maxMs: number;
  count: number;
}

const applied: WindowMax = { maxMs: 0, count: 0 };
const collected: WindowMax = { maxMs: 0, count: 0 };

/** Called by the loop's feed after applying one routing update that took `ms`. */
export function recordApply(ms: number): void {
  if (ms > applied.maxMs) applied.maxMs = ms;
  applied.count++;
}

/** The part of @datadog/native-metrics this log reads; `stats()` also resets the window. */
interface NativeMetrics {
  start(): void;
  stop(): void;
  stats(): { readonly gc: { readonly all?: { readonly max: number; readonly count: number } } };
}

/**
 * The addon counting this thread's collections, started; null where it does not load. Not node:v8's
 * GCProfiler: on Node 20 a stopped profiler keeps its callbacks (it writes a JSON record of every
 * later collection) until its wrapper is collected, which only a mark-compact does. A loop under
 * load scavenges ~60 times a second and may never mark-compact, so a profiler a window grew the
 * process without bound, faster with every window, and collections took longer the more profilers
 * each one fed. A `gc` PerformanceObserver is no better: its JS entry per collection survives long
 * enough to be promoted, so the old generation grows and the loop pays mark-compacts it would not.
 */
function startedGcCounter(): NativeMetrics | null {
  try {
    const metrics = createRequire(import.meta.url)('@datadog/native-metrics') as NativeMetrics;
    metrics.start();
    return metrics;
  } catch {
    return null;
  }
}

/** The collections since the last call, into `collected` (its `max` is in ns). */
function recordGc(metrics: NativeMetrics): void {
  const all = metrics.stats().gc.all;
  if (all === undefined || all.count === 0) return;
  collected.maxMs = Math.max(collected.maxMs, all.max / 1e6);
  collected.count += all.count;
}

function windowText(w: WindowMax): string {
  const text = `${w.maxMs.toFixed(2)}ms/${w.count}`;
  w.maxMs = 0;
  w.count = 0;
  return text;
}

/** This thread's scheduler figures: run time, run-queue wait, time slices (ns, ns, count). */
const SCHEDSTAT = '/proc/thread-self/schedstat';
/** This thread's status line; its 39th field is the CPU it last ran on. */
const STAT = '/proc/thread-self/stat';
/** Fields after the `(comm)` one up to the CPU's: state is field 3, processor field 39. */
const CPU_FIELD_AFTER_COMM = 37;

/**
 * What this thread did in a window, from schedstat read into one buffer with pread every 1 ms tick
 * (~3 µs; nothing allocated): how long it waited for a CPU in all, and the longest gap between two
 * ticks with its split. The one reader of the file for both.
 */
class SchedStatSampler {
  private readonly fd: number;
  /** /proc/thread-self/stat, read only when a tick ends a new longest gap (a few times a window); -1: not readable. */
  private readonly statFd: number;
  private readonly buf = Buffer.alloc(96);
  private readonly statBuf = Buffer.alloc(1024);
  private lastAt = 0;
  private lastRun = 0;
  private lastWait = 0;
  /** lastWait when the window began. */
  private windowWait = 0;
  private gap = 0;
  /** performance.now() at the end of the window's longest gap. */
  private gapEnd = 0;
  private ran = 0;
  private queued = 0;
  /** The CPU the thread ran on at the end of the window's longest gap; -1: unknown. */
  private gapCpu = -1;
  /** Requests the loop answered in the window's longest gap, and the count at the last tick. */
  private gapAnswered = 0;
  private lastAnswered: number;
  /** Null: the caller has no request count (the field is left out of the line). */
  private readonly answered: (() => number) | null;
  private readonly timer: NodeJS.Timeout;

  private constructor(fd: number, answered: (() => number) | null) {
    this.fd = fd;
    this.answered = answered;
    this.lastAnswered = answered?.() ?? 0;
    this.statFd = openOrMinusOne(STAT);
    this.read();
    this.windowWait = this.lastWait;
    this.lastAt = performance.now();
    this.timer = setInterval(() => this.tick(), RESOLUTION_MS);
    this.timer.unref();
  }

  /** Null where schedstat cannot be read. */
  static start(answered: (() => number) | null): SchedStatSampler | null {
    try {
      return new SchedStatSampler(openSync(SCHEDSTAT, 'r'), answered);
    } catch {
      return null;
    }
  }

  /**
   * ` wait=…ms longest=…ms ran=…ms queued=…ms off=…ms at=… cpu=… answered=…` of the window, which
   * starts afresh. The wait is counted up to the last tick (at most 1 ms before), so that windows
   * neither overlap nor leave a gap. `cpu` is left out where the thread's stat cannot be read,
   * `answered` where the caller gave no request count.
   */
  take(): string {
    const wait = (this.lastWait - this.windowWait) / 1e6;
    this.windowWait = this.lastWait;
    const text = ` wait=${wait.toFixed(2)}ms longest=${this.gap.toFixed(2)}ms ran=${this.ran.toFixed(2)}ms queued=${this.queued.toFixed(2)}ms off=${(this.gap - this.ran - this.queued).toFixed(2)}ms at=${(performance.timeOrigin + this.gapEnd).toFixed(1)}${this.gapCpu >= 0 ? ` cpu=${this.gapCpu}` : ''}${this.answered === null ? '' : ` answered=${this.gapAnswered}`}`;
    this.gap = 0;
    this.ran = 0;
    this.queued = 0;
    return text;
  }

  stop(): void {
    clearInterval(this.timer);
    closeSync(this.fd);
    if (this.statFd >= 0) closeSync(this.statFd);
  }

  private tick(): void {
    const at = performance.now();
    const run = this.lastRun;
    const wait = this.lastWait;
    this.read();
    const gap = at - this.lastAt;
    this.lastAt = at;
    const answered = this.answered?.() ?? 0;
    const answeredInGap = answered - this.lastAnswered;
    this.lastAnswered = answered;
    if (gap <= this.gap) return;
    this.gapAnswered = answeredInGap;
    this.gap = gap;
    this.gapEnd = at;
    this.ran = (this.lastRun - run) / 1e6;
    this.queued = (this.lastWait - wait) / 1e6;
    this.gapCpu = this.readCpu();
  }

  /**
   * The CPU this thread is on now, right after the gap: the one it ran on through it when it ran
   * (the one whose stall a host pause of a running loop shows on). -1 when it cannot be read.
   */
  private readCpu(): number {
    if (this.statFd < 0) return -1;
    let n: number;
    try {
      n = readSync(this.statFd, this.statBuf, 0, this.statBuf.length, 0);
    } catch {
      return -1;
    }
    let i = this.statBuf.lastIndexOf(41, n - 1); // ')' ends the command name, which may hold spaces
    if (i < 0) return -1;
    for (let spaces = 0; i < n && spaces < CPU_FIELD_AFTER_COMM; i++) if (this.statBuf[i] === 32) spaces++;
    let cpu = 0;
    let digits = 0;
    for (; i < n && this.statBuf[i]! >= 48 && this.statBuf[i]! <= 57; i++, digits++) cpu = cpu * 10 + this.statBuf[i]! - 48;
    return digits > 0 ? cpu : -1;
  }

  /** The first two fields of schedstat (run ns, wait ns), digits parsed in place. */
  private read(): void {
    const n = readSync(this.fd, this.buf, 0, this.buf.length, 0);
    let i = 0;
    let run = 0;
    let wait = 0;
    for (; i < n && this.buf[i] !== 32; i++) run = run * 10 + this.buf[i]! - 48;
    for (i++; i < n && this.buf[i] !== 32; i++) wait = wait * 10 + this.buf[i]! - 48;
    this.lastRun = run;
    this.lastWait = wait;
  }
}

function openOrMinusOne(path: string): number {
  try {
    return openSync(path, 'r');
  } catch {
    return -1;
  }
}

/** The log interval named by the variable, or null when it is unset or empty; a bad value stops the start. */
export function loopDelayInterval(raw: string | undefined): number | null {
  if (raw === undefined || raw.trim() === '') return null;
  const text = raw.trim();
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < MIN_INTERVAL_MS || n > MAX_INTERVAL_MS) {
    throw new StartupError(`${VARIABLE} must be an integer number of milliseconds between ${MIN_INTERVAL_MS} and ${MAX_INTERVAL_MS}, got "${raw}"`);
  }
  return n;
}

/**
 * Starts the log when `intervalMs` is not null; returns the function that stops it. The histogram
 * records the time between two wake-ups of a timer that asks for one every RESOLUTION_MS: the figures
 * logged are that time minus the period asked for, i.e. how late the loop came back.
 */
/** `answered`: the delivery loop's count of requests answered so far (null: none to read; the line then has no `answered`). */
export function startLoopDelayLog(intervalMs: number | null, answered: (() => number) | null = null): () => void {
  if (intervalMs === null) return () => undefined;
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  const gc = startedGcCounter();
  windowText(applied);
  windowText(collected);
  const sampler = SchedStatSampler.start(answered);
  const late = (ns: number): string => Math.max(0, ns / 1e6 - RESOLUTION_MS).toFixed(2);
  const timer = setInterval(() => {
    if (gc !== null) recordGc(gc);
    const schedText = sampler === null ? '' : sampler.take();
    if (histogram.count > 0) {
      logInfo(
        `loop delay p50=${late(histogram.percentile(50))}ms p99=${late(histogram.percentile(99))}ms max=${late(histogram.max)}ms` +
          ` apply=${windowText(applied)} gc=${gc === null ? 'n/a' : windowText(collected)}${schedText}`,
      );
    }
    histogram.reset();
  }, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    sampler?.stop();
    gc?.stop();
    histogram.disable();
  };
}
