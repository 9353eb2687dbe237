/**
 * The readout of an experiment (docs/experiments.md, "The readout"): its definition from the
 * current mappings (experiments.ts) joined with the per-hour counts of first exposures the writer
 * keeps (db.ts HourCount) and the players who moved to another variant. Players per variant in
 * total, per UTC day and per hour, the sample ratio check (srm.ts), the first and the newest first
 * exposure. A variant that has players but is no longer in the mapping (renamed, removed) is listed
 * after the configured ones with share 0 and left out of the check.
 */
import type { HourCount, MovedCount } from './db.js';
import { compareText, type Experiment } from './experiments.js';
import { sampleRatio, type SampleRatio } from './srm.js';

export interface DayPlayers {
  /** The UTC day, YYYY-MM-DD. */
  readonly day: string;
  readonly players: number;
}

export interface VariantReadout {
  readonly name: string;
  readonly share: number;
  readonly players: number;
  readonly days: readonly DayPlayers[];
}

export interface ExperimentReadout {
  readonly name: string;
  readonly item: string;
  readonly items: readonly string[];
  readonly segment: string;
  readonly disabled: boolean;
  readonly variants: readonly VariantReadout[];
  readonly players: number;
  readonly moved: number;
  readonly srm: SampleRatio | null;
  readonly firstExposure: string | null;
  /** The newest first exposure: when the last new player entered the experiment. */
  readonly lastExposure: string | null;
}

export interface HourPlayers {
  /** The hour's start, ISO-8601 UTC. */
  readonly hour: string;
  /** Players first exposed in that hour, by variant (every variant of the readout, 0 included). */
  readonly variants: Record<string, number>;
}

export interface ExperimentDetail extends ExperimentReadout {
  readonly hours: readonly HourPlayers[];
}

/** The rows of each experiment, by name. */
export function byExperiment<T extends { readonly experiment: string }>(rows: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) {
    const list = out.get(r.experiment);
    if (list === undefined) out.set(r.experiment, [r]);
    else list.push(r);
  }
  return out;
}

/** The readout of one experiment from its own hour counts and moved counts (empty when nothing is recorded). */
export function readoutOf(exp: Experiment, hours: readonly HourCount[], moved: readonly MovedCount[]): ExperimentReadout {
  const perVariant = new Map<string, Map<string, number>>();
  let first = Infinity;
  let last = -Infinity;
  for (const h of hours) {
    let days = perVariant.get(h.variant);
    if (days === undefined) perVariant.set(h.variant, (days = new Map<string, number>()));
    const day = dayOf(h.hourMs);
    days.set(day, (days.get(day) ?? 0) + h.players);
    if (h.firstMs < first) first = h.firstMs;
    if (h.lastMs > last) last = h.lastMs;
  }
  const configured = new Set(exp.variants.map((v) => v.name));
  const extra = [...perVariant.keys()].filter((name) => !configured.has(name)).sort(compareText);
  const variants = [...exp.variants, ...extra.map((name) => ({ name, share: 0 }))].map((v): VariantReadout => {
    const days = [...(perVariant.get(v.name) ?? new Map<string, number>())]
      .sort((a, b) => compareText(a[0], b[0]))
      .map(([day, players]) => ({ day, players }));
    return { name: v.name, share: v.share, players: days.reduce((n, d) => n + d.players, 0), days };
  });
  return {
    name: exp.name,
    item: exp.item,
    items: exp.items,
    segment: exp.segment,
    disabled: exp.disabled,
    variants,
    players: variants.reduce((n, v) => n + v.players, 0),
    moved: moved.reduce((n, m) => n + m.players, 0),
    srm: sampleRatio(
      variants.map((v) => v.players),
      variants.map((v) => v.share),
    ),
    firstExposure: first === Infinity ? null : new Date(first).toISOString(),
    lastExposure: last === -Infinity ? null : new Date(last).toISOString(),
  };
}

/** The readout with its players per hour, oldest first (hours without a first exposure left out). */
export function detailOf(exp: Experiment, hours: readonly HourCount[], moved: readonly MovedCount[]): ExperimentDetail {
  const summary = readoutOf(exp, hours, moved);
  const byHour = new Map<number, Record<string, number>>();
  for (const h of hours) {
    let row = byHour.get(h.hourMs);
    if (row === undefined) {
      row = Object.fromEntries(summary.variants.map((v) => [v.name, 0]));
      byHour.set(h.hourMs, row);
    }
    row[h.variant] = (row[h.variant] ?? 0) + h.players;
  }
  const hourList = [...byHour]
    .sort((a, b) => a[0] - b[0])
    .map(([ms, variants]) => ({ hour: new Date(ms).toISOString(), variants }));
  return { ...summary, hours: hourList };
}

function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
