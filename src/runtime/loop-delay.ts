/**
 * An opt-in diagnostic: how long the delivery event loop was kept from running, and by what. With
 * `RCD_LOOP_DELAY_LOG_MS=N` the server samples its loop with `perf_hooks.monitorEventLoopDelay` and
 * logs one line every N ms, then starts the next window afresh:
 *
 *   loop delay p50=…ms p99=…ms max=…ms apply=…ms/N gc=…ms/N wait=…ms longest=…ms ran=…ms queued=…ms off=…ms
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
 * thread slept in a system call). The kernel brings a running thread's figures up to date at
 * scheduler events, so each part is good to ~2 ms and `off` can read slightly negative. Both `wait`
 * and the split need /proc/thread-self/schedstat (Linux) and are absent without it.
 * The GC profiler's callbacks around each collection can add time of their own (26 ms in one
 * collection during an import, bench/README.md): bench:edits reads latency from a server without
 * this log and pauses from one with it.
 * Unset, nothing is observed and nothing runs (the feed's `recordApply` costs two field writes per
 * update).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { GCProfiler } from 'node:v8';
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

/**
 * The collections of the window `profiler` covered, into `collected`. V8's GC profiler records each
 * collection natively and hands them over once, when stopped; a `gc` PerformanceObserver instead
 * makes a JS entry per collection, and at ~60 scavenges a second under load those entries survived
 * long enough to be promoted: the loop's old generation grew ~0.6 MB/s and the diagnostic itself
 * caused a mark-compact every ~13 s (one of them a 10 ms pause) that the loop had none of without it.
 */
function recordGc(profiler: GCProfiler): void {
  const stats = profiler.stop()?.statistics ?? [];
  for (const s of stats) {
    const ms = s.cost / 1000;
    if (ms > collected.maxMs) collected.maxMs = ms;
    collected.count++;
  }
}

/** A GC profiler recording from now on (one per window: stop() ends it). */
function startedGcProfiler(): GCProfiler {
  const profiler = new GCProfiler();
  profiler.start();
  return profiler;
}

function windowText(w: WindowMax): string {
  const text = `${w.maxMs.toFixed(2)}ms/${w.count}`;
  w.maxMs = 0;
  w.count = 0;
  return text;
}

/** This thread's scheduler figures: run time, run-queue wait, time slices (ns, ns, count). */
const SCHEDSTAT = '/proc/thread-self/schedstat';

/**
 * What this thread did in a window, from schedstat read into one buffer with pread every 1 ms tick
 * (~3 µs; nothing allocated): how long it waited for a CPU in all, and the longest gap between two
 * ticks with its split. The one reader of the file for both.
 */
class SchedStatSampler {
  private readonly fd: number;
  private readonly buf = Buffer.alloc(96);
  private lastAt = 0;
  private lastRun = 0;
  private lastWait = 0;
  /** lastWait when the window began. */
  private windowWait = 0;
  private gap = 0;
  private ran = 0;
  private queued = 0;
  private readonly timer: NodeJS.Timeout;

  private constructor(fd: number) {
    this.fd = fd;
    this.read();
    this.windowWait = this.lastWait;
    this.lastAt = performance.now();
    this.timer = setInterval(() => this.tick(), RESOLUTION_MS);
    this.timer.unref();
  }

  /** Null where schedstat cannot be read. */
  static start(): SchedStatSampler | null {
    try {
      return new SchedStatSampler(openSync(SCHEDSTAT, 'r'));
    } catch {
      return null;
    }
  }

  /**
   * ` wait=…ms longest=…ms ran=…ms queued=…ms off=…ms` of the window, which starts afresh. The wait
   * is counted up to the last tick (at most 1 ms before), so that windows neither overlap nor leave
   * a gap.
   */
  take(): string {
    const wait = (this.lastWait - this.windowWait) / 1e6;
    this.windowWait = this.lastWait;
    const text = ` wait=${wait.toFixed(2)}ms longest=${this.gap.toFixed(2)}ms ran=${this.ran.toFixed(2)}ms queued=${this.queued.toFixed(2)}ms off=${(this.gap - this.ran - this.queued).toFixed(2)}ms`;
    this.gap = 0;
    this.ran = 0;
    this.queued = 0;
    return text;
  }

  stop(): void {
    clearInterval(this.timer);
    closeSync(this.fd);
  }

  private tick(): void {
    const at = performance.now();
    const run = this.lastRun;
    const wait = this.lastWait;
    this.read();
    const gap = at - this.lastAt;
    this.lastAt = at;
    if (gap <= this.gap) return;
    this.gap = gap;
    this.ran = (this.lastRun - run) / 1e6;
    this.queued = (this.lastWait - wait) / 1e6;
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
export function startLoopDelayLog(intervalMs: number | null): () => void {
  if (intervalMs === null) return () => undefined;
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let gc = startedGcProfiler();
  windowText(applied);
  windowText(collected);
  const sampler = SchedStatSampler.start();
  const late = (ns: number): string => Math.max(0, ns / 1e6 - RESOLUTION_MS).toFixed(2);
  const timer = setInterval(() => {
    recordGc(gc);
    gc = startedGcProfiler();
    const schedText = sampler === null ? '' : sampler.take();
    if (histogram.count > 0) {
      logInfo(
        `loop delay p50=${late(histogram.percentile(50))}ms p99=${late(histogram.percentile(99))}ms max=${late(histogram.max)}ms` +
          ` apply=${windowText(applied)} gc=${windowText(collected)}${schedText}`,
      );
    }
    histogram.reset();
  }, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    sampler?.stop();
    gc.stop();
    histogram.disable();
  };
}
