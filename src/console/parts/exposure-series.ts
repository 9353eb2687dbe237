/**
 * The numbers behind the Experiments chart: the readout's hours (only the hours that saw a first
 * exposure) as one value per variant and hour, the gaps filled with 0, per hour and cumulative; and
 * the axis ticks. Pure functions, without the DOM (unit-tested in Node).
 */
import type { ExperimentHour } from '../experiment-types.js';

export const HOUR_MS = 3_600_000;
/** Hours filled in at most; a longer span is charted as the readout gives it (hours that saw players). */
const MAX_FILLED_HOURS = 24 * 400;

export interface VariantSeries {
  name: string;
  /** Players first exposed in each hour of `ExposureTimeline.hours`. */
  perHour: number[];
  /** Players first exposed up to the end of each hour. */
  cumulative: number[];
}

export interface ExposureTimeline {
  /** Each hour's start, ms since the epoch, ascending. */
  hours: number[];
  series: VariantSeries[];
}

/**
 * One series per variant: the experiment's variants in their order, then any other variant the
 * hours name (one the mapping no longer has), by name.
 */
export function exposureTimeline(rows: readonly ExperimentHour[], variantNames: readonly string[]): ExposureTimeline {
  const byHour = new Map<number, Record<string, number>>();
  const names = [...variantNames];
  const extra = new Set<string>();
  for (const r of rows) {
    const ms = Date.parse(r.hour);
    if (Number.isNaN(ms)) continue;
    const at = byHour.get(ms) ?? {};
    for (const [name, n] of Object.entries(r.variants)) {
      at[name] = (at[name] ?? 0) + n;
      if (!variantNames.includes(name)) extra.add(name);
    }
    byHour.set(ms, at);
  }
  names.push(...[...extra].sort());
  const seen = [...byHour.keys()].sort((a, b) => a - b);
  const first = seen[0];
  const last = seen[seen.length - 1];
  let hours = seen;
  if (first !== undefined && last !== undefined && (last - first) / HOUR_MS < MAX_FILLED_HOURS) {
    hours = [];
    for (let h = first; h <= last; h += HOUR_MS) hours.push(h);
  }
  const series = names.map((name) => {
    const perHour = hours.map((h) => byHour.get(h)?.[name] ?? 0);
    let sum = 0;
    const cumulative = perHour.map((n) => (sum += n));
    return { name, perHour, cumulative };
  });
  return { hours, series };
}

/** Round steps for a value axis from 0 to at least `max`: 1, 2 or 5 times a power of ten (at least 1: the values are players), about `count` of them. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power);
  const ticks: number[] = [];
  for (let t = 0; ; t += step) {
    ticks.push(t);
    if (t >= max) break;
  }
  return ticks;
}

/** An hour's start as the chart labels it, in UTC: "11-29 03:00". */
export function hourLabel(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
}

/** Indexes of the hours that get a label on the time axis: the first, then every k-th, at most `most` of them. */
export function labelledHours(n: number, most = 6): number[] {
  if (n <= 0) return [];
  const every = Math.max(1, Math.ceil(n / most));
  const out: number[] = [];
  for (let i = 0; i < n; i += every) out.push(i);
  return out;
}
