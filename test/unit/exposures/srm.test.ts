/**
 * The sample ratio check (src/exposures/srm.ts): the chi-square p-value against published table
 * values and against the closed forms the distribution has (even degrees of freedom: a finite sum;
 * one degree: erfc), in both branches of the incomplete gamma function, and worked examples.
 */
import { describe, expect, it } from 'vitest';
import { chiSquareUpperTail, logGamma, MISMATCH_P, sampleRatio, upperGammaQ } from '../../../src/exposures/srm.js';

/** Q(k, y) for an integer k: e^-y Σ_{i<k} y^i / i!, i.e. the upper tail of chi-square with 2k degrees of freedom at 2y. */
function evenTail(df: number, x: number): number {
  const y = x / 2;
  let term = Math.exp(-y);
  let sum = term;
  for (let i = 1; i < df / 2; i++) {
    term *= y / i;
    sum += term;
  }
  return sum;
}

function expectRelative(actual: number, expected: number, tolerance: number): void {
  expect(Math.abs(actual - expected) / expected, `${actual} vs ${expected}`).toBeLessThan(tolerance);
}

describe('chi-square p-value', () => {
  it('matches the published critical values (upper tail 0.05, 0.01, 0.001)', () => {
    const table: [df: number, x: number, p: number][] = [
      [1, 3.841, 0.05], [1, 6.635, 0.01], [1, 10.828, 0.001],
      [2, 5.991, 0.05], [2, 9.21, 0.01], [2, 13.816, 0.001],
      [3, 7.815, 0.05], [3, 11.345, 0.01], [3, 16.266, 0.001],
      [4, 9.488, 0.05], [5, 11.07, 0.05], [5, 20.515, 0.001],
      [10, 18.307, 0.05], [10, 29.588, 0.001], [20, 31.41, 0.05], [30, 43.773, 0.05],
    ];
    for (const [df, x, p] of table) {
      // The table's three decimals move p by at most a few parts in 10^4 of itself.
      expectRelative(chiSquareUpperTail(x, df), p, 5e-4);
    }
  });

  it('equals the closed form of even degrees of freedom, small and large values, both branches', () => {
    for (const df of [2, 4, 6, 10, 20, 40, 100]) {
      for (const x of [0.01, 0.5, 1, 3, 5, 10, 30, 60, 100, 300, 1000]) {
        expectRelative(chiSquareUpperTail(x, df), evenTail(df, x), 1e-10);
      }
    }
  });

  it('equals erfc(sqrt(x/2)) with one degree of freedom, far into the tail', () => {
    // erfc(5) and erfc(10), as the nearest doubles.
    expectRelative(chiSquareUpperTail(50, 1), 1.5374597944280347e-12, 1e-10);
    expectRelative(chiSquareUpperTail(200, 1), 2.0884875837625446e-45, 1e-10);
    expect(chiSquareUpperTail(5000, 1)).toBe(0);
  });

  it('is 1 at 0 and decreases', () => {
    expect(chiSquareUpperTail(0, 3)).toBe(1);
    let previous = 1;
    for (let x = 0.1; x < 50; x += 0.7) {
      const p = chiSquareUpperTail(x, 3);
      expect(p).toBeLessThan(previous);
      expect(p).toBeGreaterThan(0);
      previous = p;
    }
  });

  it('computes ln Γ and refuses what has no value', () => {
    expectRelative(logGamma(5), Math.log(24), 1e-14);
    expectRelative(logGamma(0.5), Math.log(Math.sqrt(Math.PI)), 1e-13);
    expectRelative(logGamma(101), 363.73937555556347, 1e-12);
    expect(upperGammaQ(2, 0)).toBe(1);
    expect(() => upperGammaQ(0, 1)).toThrow(RangeError);
    expect(() => chiSquareUpperTail(1, 0)).toThrow(RangeError);
  });
});

describe('sample ratio mismatch', () => {
  it('a 50/50 test: 50,000 against 51,000 passes, 50,000 against 51,500 is a mismatch', () => {
    const near = sampleRatio([50_000, 51_000], [0.5, 0.5])!;
    expect(near.chiSquare).toBeCloseTo((2 * 500 * 500) / 50_500, 10);
    // Between the table's 0.01 (6.635) and 0.001 (10.828).
    expect(near.pValue).toBeGreaterThan(0.001);
    expect(near.pValue).toBeLessThan(0.01);
    expect(near.mismatch).toBe(false);
    const far = sampleRatio([50_000, 51_500], [0.5, 0.5])!;
    expect(far.chiSquare).toBeCloseTo((2 * 750 * 750) / 50_750, 10);
    expect(far.pValue).toBeLessThan(MISMATCH_P);
    expect(far.mismatch).toBe(true);
  });

  it('three variants 25/25/50: expected from the shares, p from two degrees of freedom', () => {
    const fine = sampleRatio([2600, 2400, 5000], [0.25, 0.25, 0.5])!;
    expect(fine.chiSquare).toBeCloseTo(8, 12);
    expectRelative(fine.pValue, Math.exp(-4), 1e-12);
    expect(fine.mismatch).toBe(false);
    const skewed = sampleRatio([2800, 2200, 5000], [0.25, 0.25, 0.5])!;
    expect(skewed.chiSquare).toBeCloseTo(72, 12);
    expectRelative(skewed.pValue, Math.exp(-36), 1e-10);
    expect(skewed.mismatch).toBe(true);
  });

  it('shares that do not cover every player are scaled to the players exposed', () => {
    // 10% and 30% of the mod: players split 1:3 among those exposed.
    const r = sampleRatio([250, 750], [0.1, 0.3])!;
    expect(r.chiSquare).toBeCloseTo(0, 12);
    expect(r.pValue).toBe(1);
  });

  it('is null below two variants with a share or without players; variants without a share are left out', () => {
    expect(sampleRatio([100], [1])).toBeNull();
    expect(sampleRatio([0, 0], [0.5, 0.5])).toBeNull();
    expect(sampleRatio([100, 7], [1, 0])).toBeNull();
    const r = sampleRatio([100, 100, 7], [0.5, 0.5, 0])!;
    expect(r.chiSquare).toBe(0);
    expect(r.mismatch).toBe(false);
  });
});
