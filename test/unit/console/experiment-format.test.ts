/**
 * How the console's Experiments page words its numbers (src/console/parts/experiment-format.ts):
 * percentages, relative times, the p-value, and the sentence of the sample ratio mismatch warning.
 */
import { describe, expect, it } from 'vitest';
import { count, mostOverExposed, percent, pValueText, relativeTime, shareOf, srmText, srmWarning } from '../../../src/console/parts/experiment-format.js';

describe('percent', () => {
  it('shows at most one decimal and drops trailing zeros', () => {
    expect(percent(0.5)).toBe('50%');
    expect(percent(0.125)).toBe('12.5%');
    expect(percent(1 / 3)).toBe('33.3%');
    expect(percent(2 / 3)).toBe('66.7%');
    expect(percent(1)).toBe('100%');
    expect(percent(0)).toBe('0%');
    expect(percent(0.001)).toBe('0.1%');
    expect(percent(0.0004)).toBe('0%');
    expect(percent(0.71234, 0)).toBe('71%');
    expect(percent(0.71234, 2)).toBe('71.23%');
    expect(percent(0.1, 2)).toBe('10%');
  });

  it('shows a dash for what is not a number', () => {
    expect(percent(Number.NaN)).toBe('–');
    expect(percent(Number.POSITIVE_INFINITY)).toBe('–');
  });

  it('shares of nothing are no share', () => {
    expect(shareOf(3, 4)).toBe(0.75);
    expect(shareOf(0, 0)).toBeNull();
  });
});

describe('count', () => {
  it('groups thousands with commas whatever the locale', () => {
    expect(count(0)).toBe('0');
    expect(count(999)).toBe('999');
    expect(count(1_000_000)).toBe('1,000,000');
  });
});

describe('relativeTime', () => {
  const now = Date.parse('2026-11-29T12:00:00.000Z');
  it('words the past in seconds, minutes, hours and days', () => {
    expect(relativeTime(now, now)).toBe('just now');
    expect(relativeTime(now - 4_999, now)).toBe('just now');
    expect(relativeTime(now - 5_000, now)).toBe('5 s ago');
    expect(relativeTime(now - 59_999, now)).toBe('59 s ago');
    expect(relativeTime(now - 60_000, now)).toBe('1 min ago');
    expect(relativeTime(now - 59 * 60_000, now)).toBe('59 min ago');
    expect(relativeTime(now - 3_600_000, now)).toBe('1 h ago');
    expect(relativeTime(now - 23.9 * 3_600_000, now)).toBe('23 h ago');
    expect(relativeTime(now - 86_400_000, now)).toBe('1 day ago');
    expect(relativeTime(now - 3.5 * 86_400_000, now)).toBe('3 days ago');
  });

  it('words a time ahead of this clock as ahead', () => {
    expect(relativeTime(now + 3_000, now)).toBe('just now');
    expect(relativeTime(now + 90_000, now)).toBe('in 1 min');
    expect(relativeTime(now + 2 * 86_400_000, now)).toBe('in 2 days');
  });
});

describe('the sample ratio check in words', () => {
  it('gives p below 0.001 as a bound, otherwise two or three places', () => {
    expect(pValueText(0)).toBe('p < 0.001');
    expect(pValueText(0.000_999)).toBe('p < 0.001');
    expect(pValueText(0.001)).toBe('p = 0.001');
    expect(pValueText(0.0042)).toBe('p = 0.004');
    expect(pValueText(0.0123)).toBe('p = 0.01');
    expect(pValueText(0.4237)).toBe('p = 0.42');
    expect(pValueText(1)).toBe('p = 1.00');
  });

  it('says the statistic, the p-value and the verdict', () => {
    expect(srmText(null)).toBe('not computed (it needs two variants and players)');
    expect(srmText({ chiSquare: 18, pValue: 0.000_022, mismatch: true })).toBe('χ² = 18.00, p < 0.001: mismatch');
    expect(srmText({ chiSquare: 0, pValue: 1, mismatch: false })).toBe('χ² = 0.00, p = 1.00: the split matches the configured shares');
  });

  it('warns of a mismatch naming the variant that got too many players', () => {
    const variants = [
      { name: 'A', share: 0.5, players: 29 },
      { name: 'B', share: 0.5, players: 71 },
    ];
    expect(srmWarning({ srm: { chiSquare: 17.64, pValue: 0.000_027, mismatch: true }, variants })).toBe(
      'Sample ratio mismatch: B got 71% of players (71 of 100), configured 50% (p < 0.001). Check the client or the ranges before reading results.',
    );
  });

  it('says nothing when the check passed or was not made', () => {
    const variants = [
      { name: 'A', share: 0.5, players: 50 },
      { name: 'B', share: 0.5, players: 50 },
    ];
    expect(srmWarning({ srm: { chiSquare: 0, pValue: 1, mismatch: false }, variants })).toBeNull();
    expect(srmWarning({ srm: null, variants })).toBeNull();
  });

  it('expects the shares of the ranges among the exposed players when the ranges leave mods to nobody', () => {
    // 10% and 30% of the mods: the exposed players are expected 25% / 75%.
    const skew = mostOverExposed([
      { name: 'control', share: 0.1, players: 500 },
      { name: 'offer', share: 0.3, players: 500 },
    ]);
    expect(skew).toMatchObject({ variant: 'control', players: 500, total: 1000, observed: 0.5 });
    expect(skew?.expected).toBeCloseTo(0.25, 12);
    expect(mostOverExposed([{ name: 'A', share: 0.5, players: 0 }])).toBeNull();
  });

  it('names the most over-exposed of three variants', () => {
    const skew = mostOverExposed([
      { name: 'A', share: 0.334, players: 300 },
      { name: 'B', share: 0.333, players: 300 },
      { name: 'C', share: 0.333, players: 400 },
    ]);
    expect(skew?.variant).toBe('C');
    expect(percent(skew!.observed)).toBe('40%');
    expect(percent(skew!.expected)).toBe('33.3%');
  });
});
