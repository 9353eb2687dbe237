/**
 * Where the benchmarks write their results and where the kept baselines are.
 *
 * A run writes into `$RCD_BENCH_RESULTS` when set, else `bench/results/local/` (ignored by git), so
 * that measuring never dirties the checkout. `bench/results/` itself holds what git keeps: one
 * baseline per benchmark and HISTORY.md, the record of every run.
 */
import { join } from 'node:path';
import { repoRoot } from '../fixtures/generate.js';

/** The directory a run writes its results into when no `--out` is given. */
export function localResultsDir(): string {
  const fromEnv = process.env.RCD_BENCH_RESULTS;
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : join(repoRoot(), 'bench', 'results', 'local');
}

/** The directory of the baselines git keeps (one per benchmark). */
export function baselineDir(): string {
  return join(repoRoot(), 'bench', 'results');
}
