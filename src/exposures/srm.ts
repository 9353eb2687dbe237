/**
 * The sample ratio check of an experiment (docs/experiments.md, "Sample ratio mismatch"): Pearson's
 * chi-square of the players exposed to each variant against the split the mapping configures, and
 * its p-value from the chi-square distribution with (variants - 1) degrees of freedom. A p-value
 * below 0.001 is a mismatch: the assignment or the exposure path is broken somewhere (a client that
 * sends one group to the wrong variant, a variant that crashes before it is seen), the threshold the
 * experimentation tools use for the same warning.
 *
 * The p-value is the regularized upper incomplete gamma function Q(k/2, x/2), computed here by its
 * power series below a + 1 and by its continued fraction above (Numerical Recipes, "Incomplete
 * gamma function"), both to double precision.
 */

export interface SampleRatio {
  readonly chiSquare: number;
  readonly pValue: number;
  /** pValue below MISMATCH_P. */
  readonly mismatch: boolean;
}

export const MISMATCH_P = 0.001;

/**
 * The check of `players[i]` exposed against `shares[i]` configured (any scale: expected is
 * total x share / sum of shares). Null when fewer than two variants have a share above 0 or no
 * player was exposed to them; variants with no share are left out (nothing is expected of them).
 */
export function sampleRatio(players: readonly number[], shares: readonly number[]): SampleRatio | null {
  let total = 0;
  let shareSum = 0;
  let counted = 0;
  for (let i = 0; i < shares.length; i++) {
    const share = shares[i]!;
    if (!(share > 0)) continue;
    counted++;
    shareSum += share;
    total += players[i] ?? 0;
  }
  if (counted < 2 || total === 0) return null;
  let chiSquare = 0;
  for (let i = 0; i < shares.length; i++) {
    const share = shares[i]!;
    if (!(share > 0)) continue;
    const expected = (total * share) / shareSum;
    const diff = (players[i] ?? 0) - expected;
    chiSquare += (diff * diff) / expected;
  }
  const pValue = chiSquareUpperTail(chiSquare, counted - 1);
  return { chiSquare, pValue, mismatch: pValue < MISMATCH_P };
}

/** P(X >= x) for X chi-square distributed with `df` degrees of freedom (df >= 1). */
export function chiSquareUpperTail(x: number, df: number): number {
  if (!(df >= 1)) throw new RangeError(`degrees of freedom must be at least 1, got ${df}`);
  if (!(x > 0)) return 1;
  return upperGammaQ(df / 2, x / 2);
}

const EPSILON = 1e-16;
const MAX_TERMS = 10_000;
/** Keeps the continued fraction's denominators away from zero (modified Lentz). */
const TINY = 1e-300;

/** The regularized upper incomplete gamma function Q(a, x) = Γ(a, x) / Γ(a), for a > 0 and x >= 0. */
export function upperGammaQ(a: number, x: number): number {
  if (!(a > 0) || !(x >= 0)) throw new RangeError(`Q(a, x) needs a > 0 and x >= 0, got a=${a}, x=${x}`);
  if (x === 0) return 1;
  if (x < a + 1) return Math.max(0, 1 - lowerSeries(a, x));
  return upperContinuedFraction(a, x);
}

/** ln(x^a e^-x / Γ(a)): the factor both expansions share. */
function logPrefactor(a: number, x: number): number {
  return a * Math.log(x) - x - logGamma(a);
}

/** P(a, x) by its series x^a e^-x / Γ(a) · Σ x^n / (a (a+1) ... (a+n)), converging fast for x < a + 1. */
function lowerSeries(a: number, x: number): number {
  let term = 1 / a;
  let sum = term;
  let ap = a;
  for (let n = 0; n < MAX_TERMS; n++) {
    ap += 1;
    term *= x / ap;
    sum += term;
    if (Math.abs(term) < Math.abs(sum) * EPSILON) break;
  }
  return sum * Math.exp(logPrefactor(a, x));
}

/** Q(a, x) by its continued fraction (modified Lentz), converging fast for x >= a + 1. */
function upperContinuedFraction(a: number, x: number): number {
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < MAX_TERMS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const step = d * c;
    h *= step;
    if (Math.abs(step - 1) < EPSILON) break;
  }
  return Math.exp(logPrefactor(a, x)) * h;
}

/** Lanczos coefficients (g = 7, n = 9): ln Γ to about 15 significant digits. */
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
  -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(x) for x > 0 (reflection below 0.5). */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  const z = x - 1;
  let sum = LANCZOS[0]!;
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i]! / (z + i);
  const t = z + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}
