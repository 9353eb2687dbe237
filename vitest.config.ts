import { configDefaults, defineConfig } from 'vitest/config';

// The suite in two parts. `npm test` (`vitest run`) runs everything but the files below, several at
// a time; `npm run test:slow` (`vitest run --mode slow`) runs exactly these, one at a time, since each
// drives benchmark harnesses or waits on the wall clock and wants the machine to itself. A new test
// file belongs to `npm test` unless it is added here. CI (.ci/run) runs both.
const SLOW_FILES = [
  // The benchmark harnesses: bench:ab, bench:pair, bench:cost (callgrind), bench:schedule and the
  // load suite run for real, each loading two servers to saturation.
  'test/e2e/bench-smoke.test.ts',
  'test/e2e/bench-floor.test.ts',
  'test/e2e/bench-edits-smoke.test.ts',
  // npm installs and packs the checkout.
  'test/e2e/command.test.ts',
];

export default defineConfig(({ mode }) => {
  const slow = mode === 'slow';
  return {
    test: {
      include: slow ? SLOW_FILES : ['test/**/*.test.ts'],
      exclude: slow ? configDefaults.exclude : [...configDefaults.exclude, ...SLOW_FILES],
      // e2e tests spawn the compiled server (dist/); the global setup builds it once per run.
      globalSetup: ['test/helpers/global-setup.ts'],
      testTimeout: 30_000,
      hookTimeout: 60_000,
      pool: 'forks',
      // One file at a time: many e2e tests hold a server to a deadline (a busy timeout, a catch-up
      // bound) that files running side by side on a 2-core machine make flaky.
      maxWorkers: 1,
      minWorkers: 1,
    },
  };
});
