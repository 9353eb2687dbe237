import { configDefaults, defineConfig } from 'vitest/config';

// The suite in two parts. A file runs in `npm run test:slow` (`vitest run --mode slow`) when what it
// proves takes time by its nature: benchmark-harness runs and the npm install of the checkout, the
// Chromium run of a feature whose Node run is in `npm test`, fleets of nodes on one store and store
// outages, behaviour on the wall clock (changes falling due, heartbeats lapsing), and repetitions that
// hunt a rare race; every other file (unit, conformance, and at least one end-to-end file per feature)
// runs in `npm test` (`vitest run`). The fast part includes every test file and excludes SLOW_FILES;
// the slow part includes exactly SLOW_FILES, so each file runs in one part and a new file in `npm test`
// unless it is listed here; test/unit/suite-parts.test.ts checks both through vitest itself. CI
// (.ci/run) runs both parts.
export const SLOW_FILES: readonly string[] = [
  // Benchmark harnesses: bench:ab, bench:pair, bench:cost (callgrind), bench:schedule and the load
  // suite run for real, each loading two servers to saturation; npm installs and packs the checkout.
  'test/e2e/bench-smoke.test.ts',
  'test/e2e/bench-floor.test.ts',
  'test/e2e/bench-edits-smoke.test.ts',
  'test/e2e/command.test.ts',
  // Chromium runs of features tested in Node in npm test: the client SDK (client-sdk), CORS (cors),
  // OpenFeature (openfeature-node), the console's schedule pages (console stays in npm test).
  'test/e2e/client-sdk-chromium.test.ts',
  'test/e2e/browser.test.ts',
  'test/e2e/openfeature-web.test.ts',
  'test/e2e/console-schedule.test.ts',
  // Fleets of nodes and store outages (test/unit/control covers the node protocol in npm test).
  'test/e2e/nodes.test.ts',
  'test/e2e/fleet-postgres.test.ts',
  'test/e2e/schedule-fleet.test.ts',
  'test/e2e/postgres-outage.test.ts',
  'test/unit/exposures/writer-outage.test.ts',
  // The wall clock: a staged rollout step by step and changes due across a restart (schedule-cli and
  // schedule-hardening apply changes at their time in npm test), thousands of pending changes and a
  // held snapshot (schedule-preview; admin-preview and schedule previews stay in npm test).
  'test/e2e/schedule.test.ts',
  'test/e2e/schedule-preview.test.ts',
  // Repetitions: 4,000 fuzz cases through nginx and direct (hostile-depth, request-safety, nginx and
  // http-layer keep the hostile inputs in npm test), twelve starts each stopped at once (failures keeps
  // the graceful stop in npm test).
  'test/e2e/hostile.test.ts',
  'test/e2e/quick-restarts.test.ts',
];

export default defineConfig(({ mode }) => {
  const slow = mode === 'slow';
  return {
    test: {
      include: slow ? [...SLOW_FILES] : ['test/**/*.test.ts'],
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
