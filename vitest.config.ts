import { configDefaults, defineConfig } from 'vitest/config';

// The suite in two parts. A file runs in `npm run test:slow` (`vitest run --mode slow`) when what it
// proves takes time by its nature: benchmark-harness runs and the npm install of the checkout, the
// Chromium run of a feature whose Node run is in `npm test`, fleets of nodes on one store and store
// outages, behaviour on the wall clock (changes falling due, heartbeats lapsing, timeouts at their
// production length), and repetitions that hunt a rare race; every other file (unit, conformance, and
// at least one end-to-end file per feature) runs in `npm test` (`vitest run`). The fast part includes every test file and excludes SLOW_FILES;
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
  // OpenFeature (openfeature-node), the console's schedule pages (console stays in npm test), the
  // API reference page (openapi), the change stream's EventSource (events).
  'test/e2e/client-sdk-chromium.test.ts',
  'test/e2e/events-chromium.test.ts',
  'test/e2e/openapi-page.test.ts',
  'test/e2e/browser.test.ts',
  'test/e2e/openfeature-web.test.ts',
  'test/e2e/console-schedule.test.ts',
  // The console's rollouts and calendar: a rollout paused past its step's time on the wall clock.
  'test/e2e/console-rollouts.test.ts',
  // The console's live screens and confirmations (the event stream's Node run: admin-events).
  'test/e2e/console-live.test.ts',
  // The console's scheduled changes read, edited and in the way of a save (schedule-changes in npm test).
  'test/e2e/console-changes.test.ts',
  // Fleets of nodes and store outages (test/unit/control covers the node protocol in npm test).
  'test/e2e/nodes.test.ts',
  'test/e2e/fleet-postgres.test.ts',
  'test/e2e/schedule-fleet.test.ts',
  'test/e2e/postgres-outage.test.ts',
  // The exposure database stopped and started again under the writer: rows held, dropped past the
  // bound and written again once it answers, on the wall clock of its reconnections.
  'test/unit/exposures/writer-outage.test.ts',
  // Exposures on a fleet of three server processes and through a database outage (exposures.test.ts and
  // exposures-counts.test.ts keep every endpoint, first-wins and exact counts in npm test).
  'test/e2e/exposures-fleet.test.ts',
  // The exposure benchmark's smoke run: every part of bench:exposures at its smallest size.
  'test/e2e/bench-exposures-smoke.test.ts',
  // The webhook outbox across process deaths: a delivery leased by a killed process is sent only once
  // its lease ends on the wall clock, and retries run out on it (admin-webhooks, hostile-webhooks and
  // test/unit/store/outbox keep webhook delivery, signing and the outbox's rows in npm test).
  'test/e2e/webhook-outbox.test.ts',
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
  // Repetitions: eight starts each sent SIGTERM the moment they print "listening on" (startup keeps one in npm test).
  'test/e2e/stop-at-listening.test.ts',
  // Timeouts on the wall clock at their production length: the listener's 10 s idle timeout, direct
  // and behind nginx (http-layer and nginx keep every other input in npm test), and the systemd unit's
  // stop, whose drain runs to the 10 s --shutdown-timeout of deploy/systemd/rcd.env (systemd checks the
  // unit in npm test; failures and readiness keep the graceful stop and the drain).
  'test/e2e/idle-timeout.test.ts',
  'test/e2e/systemd-stop.test.ts',
  // A store outage: readiness past --ready-store-outage while a real PostgreSQL is stopped (readiness
  // keeps starting and draining in npm test).
  'test/e2e/readiness-outage.test.ts',
];

// `npm test` runs its files two at a time, except the files below, which run one at a time after the
// others. A file runs alone when a second file beside it on a 2-core machine could fail it or be failed
// by it: it bounds how long something takes (a reply within N ms, a busy timeout and not much longer, a
// regex within its budget), counts events in a window of time (wake-ups, stalls, context switches), or
// loads every core on purpose. test/unit/suite-parts.test.ts fails for a file of the paired group whose
// source measures elapsed time, so a new file that does is put here (or in SLOW_FILES) by its author.
export const ALONE_FILES: readonly string[] = [
  // Replies and closes within a bound: the HTTP layer direct and behind nginx, request limits.
  'test/e2e/http-layer.test.ts',
  'test/e2e/nginx.test.ts',
  'test/e2e/request-safety.test.ts',
  'test/e2e/access-log.test.ts',
  // A busy store: the write waits the busy timeout and not much longer, delivery answers within 250 ms.
  'test/e2e/store-faults.test.ts',
  'test/unit/store/faults.test.ts',
  // A silent database: calls given up on within STALL_MS, a given-up transaction answering at once.
  'test/unit/store/postgres/silence.test.ts',
  // Regex conditions within their time budget.
  'test/e2e/regex-conditions.test.ts',
  'test/unit/mapping/condition/regex.test.ts',
  // Retries and refusals timed against Retry-After and the retry schedule, a node's catch-up wait, and
  // readiness polled every few ms while starting and draining.
  'test/e2e/client-retry.test.ts',
  'test/e2e/openfeature-node.test.ts',
  'test/e2e/admin-webhooks.test.ts',
  'test/e2e/readiness.test.ts',
  'test/unit/admin/server/server.test.ts',
  'test/unit/admin/server/webhooks.test.ts',
  'test/unit/control/nodes.test.ts',
  // A graceful stop that open admin event streams do not hold up.
  'test/e2e/admin-events.test.ts',
  // Loop-delay lines under CPU hogs on every core; clocks, stalls, wake-ups and context switches.
  'test/e2e/loop-delay-log.test.ts',
  'test/unit/metrics/clock.test.ts',
  'test/unit/bench/wrk.test.ts',
  'test/unit/bench/measure.test.ts',
  'test/unit/store/sqlite/wal-watch.test.ts',
];

const GLOBAL_SETUP = ['test/helpers/global-setup.ts'];

/**
 * What every file of both parts runs with: e2e tests spawn the compiled server (dist/). A test
 * process starts with SQLite's URI filenames on, as the server does before its first connection
 * (src/store/url.ts enableUriFilenames): better-sqlite3 reads SQLITE_USE_URI once, at the process's
 * first connection, and the `alone` group runs its files in one process, so a file that opens
 * better-sqlite3 itself must not turn them off for the memory stores of the files after it.
 */
const EACH_FILE = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: 'forks',
  env: { SQLITE_USE_URI: '1' },
} as const;

export default defineConfig(({ mode }) => {
  if (mode === 'slow') {
    return {
      // One file at a time: what these files prove (saturation, fleets, due times) needs the machine.
      test: { ...EACH_FILE, include: [...SLOW_FILES], globalSetup: GLOBAL_SETUP, maxWorkers: 1, minWorkers: 1 },
    };
  }
  return {
    test: {
      // The global setup builds dist/ unless told it is built, and starts the tests' PostgreSQL; it
      // runs once, for the root, so the two groups below do not repeat it.
      globalSetup: GLOBAL_SETUP,
      maxWorkers: 2,
      minWorkers: 1,
      // A test process runs file after file (the pool's forks are reused, and each group below keeps
      // the modules its files imported): a fresh process and module graph per file cost more CPU than
      // most files' own tests. No test file changes the process's environment, working directory,
      // timers or listeners for the files after it (test/unit/suite-parts.test.ts checks).
      poolOptions: { forks: { isolate: false } },
      projects: [
        {
          test: {
            ...EACH_FILE,
            name: 'paired',
            include: ['test/**/*.test.ts'],
            exclude: [...configDefaults.exclude, ...SLOW_FILES, ...ALONE_FILES],
            isolate: false,
            sequence: { groupOrder: 0 },
          },
        },
        {
          test: {
            ...EACH_FILE,
            name: 'alone',
            include: [...ALONE_FILES],
            // After the paired group, in one process, one file after another.
            sequence: { groupOrder: 1 },
            poolOptions: { forks: { singleFork: true } },
            isolate: false,
          },
        },
      ],
    },
  };
});
