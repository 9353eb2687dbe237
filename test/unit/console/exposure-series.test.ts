/**
 * The numbers behind the console's Experiments chart (src/console/parts/exposure-series.ts): the
 * readout's hours as one value per variant and hour (gaps filled with 0), cumulative sums, and
 * round axis ticks.
 */
import { describe, expect, it } from 'vitest';
import { exposureTimeline, hourLabel, HOUR_MS, labelledHours, niceTicks } from '../../../src/console/parts/exposure-series.js';

const H0 = Date.parse('2026-11-29T03:00:00.000Z');

describe('exposureTimeline', () => {
  it('fills the hours without players with 0 and sums each variant over time', () => {
    const t = exposureTimeline(
      [
        { hour: '2026-11-29T06:00:00.000Z', variants: { B: 4 } },
        { hour: '2026-11-29T03:00:00.000Z', variants: { A: 2, B: 3 } },
      ],
      ['A', 'B'],
    );
    expect(t.hours).toEqual([H0, H0 + HOUR_MS, H0 + 2 * HOUR_MS, H0 + 3 * HOUR_MS]);
    expect(t.series).toEqual([
      { name: 'A', perHour: [2, 0, 0, 0], cumulative: [2, 2, 2, 2] },
      { name: 'B', perHour: [3, 0, 0, 4], cumulative: [3, 3, 3, 7] },
    ]);
  });

  it('keeps the variants in the experiment\'s order and adds ones the mapping no longer has, by name', () => {
    const t = exposureTimeline([{ hour: '2026-11-29T03:00:00Z', variants: { old2: 1, B: 1, old1: 2 } }], ['B', 'A']);
    expect(t.series.map((s) => s.name)).toEqual(['B', 'A', 'old1', 'old2']);
    expect(t.series.map((s) => s.perHour[0])).toEqual([1, 0, 2, 1]);
  });

  it('has no hours before the first exposure, and a series per variant even then', () => {
    expect(exposureTimeline([], ['A', 'B'])).toEqual({
      hours: [],
      series: [
        { name: 'A', perHour: [], cumulative: [] },
        { name: 'B', perHour: [], cumulative: [] },
      ],
    });
  });

  it('charts a span too long to fill by the hours that saw players', () => {
    const far = new Date(H0 + 24 * 500 * HOUR_MS).toISOString();
    const t = exposureTimeline(
      [
        { hour: new Date(H0).toISOString(), variants: { A: 1 } },
        { hour: far, variants: { A: 1 } },
      ],
      ['A'],
    );
    expect(t.hours).toHaveLength(2);
    expect(t.series[0]!.cumulative).toEqual([1, 2]);
  });
});

describe('axis', () => {
  it('ticks from 0 past the largest value in round whole steps', () => {
    expect(niceTicks(0)).toEqual([0, 1]);
    expect(niceTicks(1)).toEqual([0, 1]);
    expect(niceTicks(3)).toEqual([0, 1, 2, 3]);
    expect(niceTicks(40)).toEqual([0, 10, 20, 30, 40]);
    expect(niceTicks(48)).toEqual([0, 10, 20, 30, 40, 50]);
    expect(niceTicks(7)).toEqual([0, 2, 4, 6, 8]);
    expect(niceTicks(1_000_000)).toEqual([0, 200_000, 400_000, 600_000, 800_000, 1_000_000]);
    expect(niceTicks(1234)).toEqual([0, 500, 1000, 1500]);
  });

  it('labels hours in UTC, at most six of them', () => {
    expect(hourLabel(H0)).toBe('11-29 03:00');
    expect(labelledHours(0)).toEqual([]);
    expect(labelledHours(1)).toEqual([0]);
    expect(labelledHours(6)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(labelledHours(24)).toEqual([0, 4, 8, 12, 16, 20]);
    expect(labelledHours(25)).toEqual([0, 5, 10, 15, 20]);
  });
});
