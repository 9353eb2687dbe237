/**
 * The experiments of an environment from its mappings (src/exposures/experiments.ts) and their
 * readout from the hour counts (src/exposures/readout.ts): names, shares, merged rules, disabled
 * rules, players per variant, day and hour, moved players, first and last exposure, the SRM check.
 */
import { describe, expect, it } from 'vitest';
import type { HourCount } from '../../../src/exposures/db.js';
import { experimentsOf, type ItemMapping } from '../../../src/exposures/experiments.js';
import { experimentName } from '../../../src/exposures/naming.js';
import { byExperiment, detailOf, readoutOf } from '../../../src/exposures/readout.js';

const ab = (segment: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  segment,
  variants: [
    { name: 'A', mod: [0, 499], patch: { a: 1 } },
    { name: 'B', mod: [500, 999], patch: { a: 2 } },
  ],
  ...extra,
});

const H = 3_600_000;
const T0 = Date.UTC(2026, 10, 28, 22, 0, 0);

function hour(experiment: string, variant: string, hourMs: number, players: number, firstMs = hourMs + 1000, lastMs = hourMs + 2000): HourCount {
  return { environment: 'live', experiment, variant, hourMs, players, firstMs, lastMs };
}

describe('experiments of the mappings', () => {
  it('names a rule with variants ITEM:SEGMENT, or by its experiment field; patch rules are not experiments', () => {
    expect(experimentName('Shop', 'price', undefined)).toBe('Shop:price');
    expect(experimentName('Shop', 'price', 'price-test-2')).toBe('price-test-2');
    const mappings: ItemMapping[] = [
      { item: 'Shop', mapping: { rules: [{ segment: 'vip', when: { vip: true }, patch: { a: 0 } }, ab('price'), ab('layout', { experiment: 'layout-nov' })] } },
      { item: 'Plain', mapping: null },
    ];
    expect(experimentsOf(mappings)).toEqual([
      { name: 'Shop:price', item: 'Shop', items: ['Shop'], segment: 'price', disabled: false, variants: [{ name: 'A', share: 0.5 }, { name: 'B', share: 0.5 }] },
      { name: 'layout-nov', item: 'Shop', items: ['Shop'], segment: 'layout', disabled: false, variants: [{ name: 'A', share: 0.5 }, { name: 'B', share: 0.5 }] },
    ]);
  });

  it('shares are the mod range sizes / 1000, a split need not cover every player', () => {
    const [e] = experimentsOf([{ item: 'X', mapping: { rules: [{ segment: 's', variants: [{ name: 'ctl', mod: [0, 99], patch: {} }, { name: 'new', mod: [100, 132], patch: {} }] }] } }]);
    expect(e!.variants).toEqual([{ name: 'ctl', share: 0.1 }, { name: 'new', share: 0.033 }]);
  });

  it('one name on rules of several items is one experiment named by the first item; disabled only when every rule is', () => {
    const exps = experimentsOf([
      { item: 'Alpha', mapping: { rules: [ab('s', { experiment: 'shared', disabled: true })] } },
      { item: 'Beta', mapping: { rules: [{ segment: 't', experiment: 'shared', variants: [{ name: 'A', mod: [0, 499], patch: {} }, { name: 'C', mod: [500, 599], patch: {} }] }] } },
      { item: 'Gamma', mapping: { rules: [ab('off', { disabled: true })] } },
    ]);
    expect(exps).toEqual([
      { name: 'Gamma:off', item: 'Gamma', items: ['Gamma'], segment: 'off', disabled: true, variants: [{ name: 'A', share: 0.5 }, { name: 'B', share: 0.5 }] },
      { name: 'shared', item: 'Alpha', items: ['Alpha', 'Beta'], segment: 's', disabled: false, variants: [{ name: 'A', share: 0.5 }, { name: 'B', share: 0.5 }, { name: 'C', share: 0.1 }] },
    ]);
  });
});

describe('readout', () => {
  const [exp] = experimentsOf([{ item: 'Shop', mapping: { rules: [ab('price')] } }]);

  it('without counts: no players, no check, no exposure times', () => {
    expect(readoutOf(exp!, [], [])).toEqual({
      name: 'Shop:price', item: 'Shop', items: ['Shop'], segment: 'price', disabled: false,
      variants: [{ name: 'A', share: 0.5, players: 0, days: [] }, { name: 'B', share: 0.5, players: 0, days: [] }],
      players: 0, moved: 0, srm: null, firstExposure: null, lastExposure: null,
    });
  });

  it('sums hours into variants and UTC days, names the first and newest first exposure, counts moved players', () => {
    const hours = [
      hour('Shop:price', 'A', T0, 10, T0 + 5, T0 + 50),
      hour('Shop:price', 'A', T0 + H, 15),
      hour('Shop:price', 'A', T0 + 2 * H, 20),
      hour('Shop:price', 'B', T0 + 2 * H, 44, T0 + 2 * H + 7, T0 + 2 * H + 3_599_999),
      hour('Shop:price', 'B', T0, 1, T0 + 1, T0 + 1),
    ];
    const r = readoutOf(exp!, hours, [{ environment: 'live', experiment: 'Shop:price', variant: 'A', players: 3 }, { environment: 'live', experiment: 'Shop:price', variant: 'B', players: 1 }]);
    expect(r.variants).toEqual([
      { name: 'A', share: 0.5, players: 45, days: [{ day: '2026-11-28', players: 25 }, { day: '2026-11-29', players: 20 }] },
      { name: 'B', share: 0.5, players: 45, days: [{ day: '2026-11-28', players: 1 }, { day: '2026-11-29', players: 44 }] },
    ]);
    expect(r.players).toBe(90);
    expect(r.moved).toBe(4);
    expect(r.srm).toEqual({ chiSquare: 0, pValue: 1, mismatch: false });
    expect(r.firstExposure).toBe(new Date(T0 + 1).toISOString());
    expect(r.lastExposure).toBe(new Date(T0 + 2 * H + 3_599_999).toISOString());
  });

  it('a variant no longer in the mapping is listed with share 0 and left out of the check', () => {
    const r = readoutOf(exp!, [hour('Shop:price', 'A', T0, 500), hour('Shop:price', 'B', T0, 500), hour('Shop:price', 'Old', T0, 9000)], []);
    expect(r.variants.map((v) => [v.name, v.share, v.players])).toEqual([['A', 0.5, 500], ['B', 0.5, 500], ['Old', 0, 9000]]);
    expect(r.srm).toEqual({ chiSquare: 0, pValue: 1, mismatch: false });
  });

  it('flags a skewed split', () => {
    const r = readoutOf(exp!, [hour('Shop:price', 'A', T0, 5000), hour('Shop:price', 'B', T0, 5400)], []);
    expect(r.srm!.mismatch).toBe(true);
    expect(r.srm!.pValue).toBeLessThan(0.001);
  });

  it('the detail lists every hour oldest first with every variant', () => {
    const d = detailOf(exp!, [hour('Shop:price', 'B', T0 + H, 2), hour('Shop:price', 'A', T0, 3), hour('Shop:price', 'A', T0 + H, 4)], []);
    expect(d.hours).toEqual([
      { hour: '2026-11-28T22:00:00.000Z', variants: { A: 3, B: 0 } },
      { hour: '2026-11-28T23:00:00.000Z', variants: { A: 4, B: 2 } },
    ]);
    expect(d.players).toBe(9);
  });

  it('groups rows by experiment', () => {
    const rows = [hour('x', 'A', T0, 1), hour('y', 'A', T0, 1), hour('x', 'B', T0, 1)];
    expect([...byExperiment(rows)].map(([name, list]) => [name, list.length])).toEqual([['x', 2], ['y', 1]]);
  });
});
