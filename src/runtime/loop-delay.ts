/**
 * An opt-in diagnostic: how long the delivery event loop was kept from running. With
 * `RCD_LOOP_DELAY_LOG_MS=N` the server samples its loop with `perf_hooks.monitorEventLoopDelay` and
 * logs one line every N ms, `loop delay p50=…ms p99=…ms max=…ms`, then starts the next window afresh.
 * Unset, nothing is created and nothing runs. The benchmark of edits under load reads these lines.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { StartupError } from './config.js';
import { logInfo } from './log.js';

const VARIABLE = 'RCD_LOOP_DELAY_LOG_MS';
const MIN_INTERVAL_MS = 100;
const MAX_INTERVAL_MS = 3_600_000;
/** The sampling timer's period: a pause is measured to this precision (one wake-up per ms costs a few µs). */
const RESOLUTION_MS = 1;

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
  const late = (ns: number): string => Math.max(0, ns / 1e6 - RESOLUTION_MS).toFixed(2);
  const timer = setInterval(() => {
    if (histogram.count > 0) {
      logInfo(`loop delay p50=${late(histogram.percentile(50))}ms p99=${late(histogram.percentile(99))}ms max=${late(histogram.max)}ms`);
    }
    histogram.reset();
  }, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    histogram.disable();
  };
}
