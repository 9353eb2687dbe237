/**
 * `rcd_experiment_players{environment,experiment,variant}` (docs/metrics.md): the players first
 * exposed to each variant, summed over the exposure database's per-hour counts at each scrape (the
 * counts every node's writer keeps, so every node of a fleet reports the fleet's players). Label
 * cardinality is bounded: at most MAX_SERIES series, whole experiments in (environment,
 * experiment) order; the players of the experiments past the bound are summed per environment and
 * variant under experiment="_other". A database that cannot be read leaves the metric without
 * series for that scrape (the other metrics are still served).
 */
import type { ExposureTotals, VariantPlayers } from '../exposures/count-rows.js';
import { compareText } from '../exposures/experiments.js';

export const MAX_SERIES = 500;
export const OTHER_EXPERIMENTS = '_other';

export interface PlayerSample {
  readonly labels: { readonly environment: string; readonly experiment: string; readonly variant: string };
  readonly value: number;
}

interface ExperimentSeries {
  readonly environment: string;
  readonly experiment: string;
  /** Players by variant. */
  readonly variants: Map<string, number>;
}

/** The samples of these players per variant (summed where a variant comes twice), bounded to `max` series (see the module comment). */
export function experimentPlayerSamples(hours: readonly VariantPlayers[], max = MAX_SERIES): PlayerSample[] {
  const byExperiment = new Map<string, ExperimentSeries>();
  for (const h of hours) {
    const key = `${h.environment}\0${h.experiment}`;
    let series = byExperiment.get(key);
    if (series === undefined) byExperiment.set(key, (series = { environment: h.environment, experiment: h.experiment, variants: new Map() }));
    series.variants.set(h.variant, (series.variants.get(h.variant) ?? 0) + h.players);
  }
  const experiments = [...byExperiment.values()].sort((a, b) => compareText(a.environment, b.environment) || compareText(a.experiment, b.experiment));
  // otherFrom[i]: the "_other" series the experiments from i on would make (one per environment and variant).
  const otherFrom = new Array<number>(experiments.length + 1).fill(0);
  const pairs = new Set<string>();
  for (let i = experiments.length - 1; i >= 0; i--) {
    const e = experiments[i]!;
    for (const variant of e.variants.keys()) pairs.add(`${e.environment}\0${variant}`);
    otherFrom[i] = pairs.size;
  }
  const out: PlayerSample[] = [];
  let kept = 0;
  while (kept < experiments.length) {
    const e = experiments[kept]!;
    const left = kept + 1 < experiments.length ? otherFrom[kept + 1]! : 0;
    if (out.length + e.variants.size + left > max) break;
    for (const [variant, value] of sortedEntries(e.variants)) out.push({ labels: { environment: e.environment, experiment: e.experiment, variant }, value });
    kept++;
  }
  const other = new Map<string, { environment: string; variant: string; value: number }>();
  for (const e of experiments.slice(kept)) {
    for (const [variant, value] of e.variants) {
      const key = `${e.environment}\0${variant}`;
      const sum = other.get(key);
      if (sum === undefined) other.set(key, { environment: e.environment, variant, value });
      else sum.value += value;
    }
  }
  const rest = [...other.values()].sort((a, b) => compareText(a.environment, b.environment) || compareText(a.variant, b.variant));
  for (const r of rest) out.push({ labels: { environment: r.environment, experiment: OTHER_EXPERIMENTS, variant: r.variant }, value: r.value });
  return out;
}

function sortedEntries(map: Map<string, number>): [string, number][] {
  return [...map].sort((a, b) => compareText(a[0], b[0]));
}

/** The gauge, for prom-client's registry (any object with an asynchronous get()). */
export function experimentPlayersMetric(reader: ExposureTotals): { readonly name: string; get(): Promise<unknown> } {
  const name = 'rcd_experiment_players';
  const help = 'Players first exposed to each variant of each experiment, from the exposure database (every node\'s writes); at most 500 series, the rest summed as experiment="_other".';
  return {
    name,
    async get() {
      let values: PlayerSample[] = [];
      try {
        values = experimentPlayerSamples(await reader.totals());
      } catch {
        // Unreadable now (down, or locked past the busy timeout): no series this scrape.
      }
      return { name, help, type: 'gauge', values, aggregator: 'sum' };
    },
  };
}
