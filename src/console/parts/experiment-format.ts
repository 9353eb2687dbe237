/**
 * How the Experiments page words its numbers: shares as percentages, times relative to now, the
 * sample ratio check's p-value, and the sentence of the mismatch warning. Pure functions, without
 * the DOM (unit-tested in Node).
 */
import type { Experiment, ExperimentVariant, Srm } from '../experiment-types.js';

/** A fraction as a percentage with at most `digits` decimals and no trailing zeros: 0.5 "50%", 0.125 "12.5%". */
export function percent(fraction: number, digits = 1): string {
  if (!Number.isFinite(fraction)) return '–';
  let s = (fraction * 100).toFixed(digits);
  if (s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '');
  return `${s === '-0' ? '0' : s}%`;
}

/** A count with thousands separators, the same in every browser locale: 1234567 "1,234,567". */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** The share of `part` in `total`, or null when there is nothing to share. */
export function shareOf(part: number, total: number): number | null {
  return total > 0 ? part / total : null;
}

/** The p-value as the tools that flag a mismatch word it: "p < 0.001", else two significant places. */
export function pValueText(p: number): string {
  if (p < 0.001) return 'p < 0.001';
  return `p = ${p < 0.01 ? p.toFixed(3) : p.toFixed(2)}`;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * How long ago `ms` was at `nowMs` ("just now", "42 s ago", "5 min ago", "3 h ago", "2 days ago"),
 * or how far ahead ("in 5 min": the server's clock may run ahead of the browser's).
 */
export function relativeTime(ms: number, nowMs: number): string {
  const diff = nowMs - ms;
  const abs = Math.abs(diff);
  if (abs < 5 * SECOND) return 'just now';
  let text: string;
  if (abs < MINUTE) text = `${Math.floor(abs / SECOND)} s`;
  else if (abs < HOUR) text = `${Math.floor(abs / MINUTE)} min`;
  else if (abs < DAY) text = `${Math.floor(abs / HOUR)} h`;
  else {
    const days = Math.floor(abs / DAY);
    text = `${days} ${days === 1 ? 'day' : 'days'}`;
  }
  return diff >= 0 ? `${text} ago` : `in ${text}`;
}

/** A variant's share of the exposed players against the share the configured ranges give it. */
export interface Skew {
  variant: string;
  players: number;
  total: number;
  observed: number;
  expected: number;
}

/**
 * The variant that got more of the players than its ranges say, by the widest margin: the one a
 * mismatch warning names. The expected share is the variant's share over the sum of the
 * variants' shares (players outside every range are never exposed). Null without players.
 */
export function mostOverExposed(variants: readonly ExperimentVariant[]): Skew | null {
  let total = 0;
  let shares = 0;
  for (const v of variants) {
    total += v.players;
    shares += v.share;
  }
  if (total === 0 || shares <= 0) return null;
  let best: Skew | null = null;
  for (const v of variants) {
    const observed = v.players / total;
    const expected = v.share / shares;
    if (best === null || observed - expected > best.observed - best.expected) best = { variant: v.name, players: v.players, total, observed, expected };
  }
  return best;
}

/** The check in a few words: its statistic, its p-value and what it means. */
export function srmText(srm: Srm | null): string {
  if (srm === null) return 'not computed (it needs two variants and players)';
  const verdict = srm.mismatch ? 'mismatch' : 'the split matches the configured shares';
  return `χ² = ${srm.chiSquare.toFixed(2)}, ${pValueText(srm.pValue)}: ${verdict}`;
}

/**
 * The warning an experiment with a sample ratio mismatch carries, naming the variant that got too
 * many players; null when the check passed or was not made.
 */
export function srmWarning(e: Pick<Experiment, 'srm' | 'variants'>): string | null {
  if (e.srm === null || !e.srm.mismatch) return null;
  const skew = mostOverExposed(e.variants);
  const what = skew === null ? '' : ` ${skew.variant} got ${percent(skew.observed)} of players (${count(skew.players)} of ${count(skew.total)}), configured ${percent(skew.expected)}`;
  return `Sample ratio mismatch:${what} (${pValueText(e.srm.pValue)}). Check the client or the ranges before reading results.`;
}
