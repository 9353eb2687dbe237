/**
 * `npm run bench:pair -- --scenario NAME --against NAME [--rounds N --duration S --connections N]`
 *
 * Two scenarios on one server, judged side by side: round after round, wrk loads the server with one
 * scenario's requests, then the other's (the order flips each round), and each run's req/s and
 * server CPU per request are read. The suite (run.ts) measures scenarios minutes apart, each against
 * its own ceiling; on a shared machine the speed drifts more than a few percent in that time, so a
 * question such as "does an OpenFeature evaluation cost what endpoint 1 costs" (ofrep-flag against
 * mapped, ofrep-bulk against combine: bench/README.md, "OpenFeature (OFREP)") is answered here, each
 * round's ratio taken between runs seconds apart on the same process.
 *
 * Every answer must be 2xx. Needs wrk on PATH and Linux /proc for CPU accounting.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { UsageError, cpuBenchOptions, intOption } from '../harness/cli-options.js';
import { BASE_SEED, selectScenarios, type Scenario } from '../harness/scenarios.js';
import { repoRoot, writeBundle } from '../fixtures/generate.js';
import { Supervisor, startServer, type Target } from '../harness/processes.js';
import { loadWithCpu, median, wrkAvailable, writeWrkScript, type WrkLoad } from '../harness/wrk.js';

const USAGE = `usage: npm run bench:pair -- --scenario NAME --against NAME [options]
  --scenario NAME      the scenario judged (e.g. ofrep-flag)
  --against NAME       the scenario it is judged against, on the same server (e.g. mapped)
  --rounds N           rounds, each one run of both (order flipping each round; default 8, max 100)
  --duration S         seconds per run (default 6, 1..120)
  --warmup S           seconds of load with each before the first round, not counted (default 2, max 60)
  --connections N      connections (default 100)
  --threads N          worker threads of the server (default: the server's default)
  --out FILE           also write the rounds and the summary as JSON`;

interface PairOptions {
  readonly scenario: Scenario;
  readonly against: Scenario;
  readonly rounds: number;
  readonly durationSec: number;
  readonly warmupSec: number;
  readonly connections: number;
  readonly threads: number | null;
  readonly out: string | null;
}

function oneScenario(flag: string, raw: string | undefined): Scenario {
  if (raw === undefined) throw new UsageError(`--${flag} NAME is required`);
  let found: Scenario[];
  try {
    found = selectScenarios(raw);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const s = found[0];
  if (found.length !== 1 || s === undefined) throw new UsageError(`--${flag} takes exactly one scenario`);
  if (!s.expectedStatuses.every((code) => code < 300)) throw new UsageError(`--${flag} ${s.name} answers errors on purpose; wrk would count them as failures`);
  return s;
}

function parseOptions(argv: string[]): PairOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      scenario: { type: 'string' },
      against: { type: 'string' },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      threads: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const scenario = oneScenario('scenario', values.scenario);
  const against = oneScenario('against', values.against);
  if (!wrkAvailable()) throw new UsageError('bench:pair needs wrk on PATH (Debian: apt-get install wrk)');
  return {
    scenario,
    against,
    rounds: intOption('rounds', values.rounds, 8, 1, 100),
    durationSec: intOption('duration', values.duration, 6, 1, 120),
    warmupSec: intOption('warmup', values.warmup, 2, 0, 60),
    connections: intOption('connections', values.connections, 100, 1, 10000),
    threads: values.threads === undefined ? null : intOption('threads', values.threads, 1, 1, 64),
    out: values.out ?? null,
  };
}

interface Round {
  readonly scenario: WrkLoad;
  readonly against: WrkLoad;
}

const sup = new Supervisor();

function checked(label: string, load: WrkLoad): WrkLoad {
  if (load.wrk.non2xx > 0 || load.wrk.socketErrors > 0) throw new Error(`${label}: ${load.wrk.non2xx} non-2xx answers and ${load.wrk.socketErrors} socket errors under wrk`);
  return load;
}

async function round(server: Target, scripts: [string, string], opts: PairOptions, i: number, seconds: number): Promise<Round> {
  const run = async (which: 0 | 1): Promise<WrkLoad> =>
    checked(which === 0 ? opts.scenario.name : opts.against.name, await loadWithCpu(server, scripts[which], opts.connections, seconds, (c) => sup.track(c)));
  if (i % 2 === 0) {
    const a = await run(0);
    return { scenario: a, against: await run(1) };
  }
  const b = await run(1);
  return { scenario: await run(0), against: b };
}

function fixed(n: number, digits: number): string {
  return n.toFixed(digits);
}

async function main(): Promise<number> {
  const opts = cpuBenchOptions('bench:pair', process.argv.slice(2), parseOptions, USAGE);
  if (opts === null) return 2;
  sup.installCleanup('the server and the load');
  const dir = sup.tempDir('rcd-pair-');
  const bundle = join(dir, 'bundle.json');
  writeBundle(bundle);
  const scripts: [string, string] = [writeWrkScript(dir, opts.scenario.name, opts.scenario.pool(BASE_SEED)), writeWrkScript(dir, opts.against.name, opts.against.pool(BASE_SEED))];
  try {
    const server = await startServer(sup, { root: repoRoot(), store: `sqlite:${join(dir, 'pair.db')}`, bundle, threads: opts.threads, label: 'server' });
    process.stdout.write(`${opts.scenario.name} against ${opts.against.name} on one server (pid ${server.pid}): ${opts.rounds} rounds of ${opts.durationSec} s each, ${opts.connections} connections\n`);
    if (opts.warmupSec > 0) await round(server, scripts, opts, 0, opts.warmupSec);
    const rounds: Round[] = [];
    for (let i = 0; i < opts.rounds && !sup.stopping; i++) {
      const r = await round(server, scripts, opts, i, opts.durationSec);
      rounds.push(r);
      process.stdout.write(
        `round ${String(i + 1).padStart(3)}  ${opts.scenario.name} ${fixed(r.scenario.wrk.reqPerSec, 0).padStart(7)} req/s ${fixed(r.scenario.cpuUsPerReq, 2).padStart(6)} µs/req` +
          `  ${opts.against.name} ${fixed(r.against.wrk.reqPerSec, 0).padStart(7)} req/s ${fixed(r.against.cpuUsPerReq, 2).padStart(6)} µs/req` +
          `  req/s ratio ${fixed(r.scenario.wrk.reqPerSec / r.against.wrk.reqPerSec, 3)}  CPU ratio ${fixed(r.scenario.cpuUsPerReq / r.against.cpuUsPerReq, 3)}\n`,
      );
    }
    if (rounds.length === 0) return 0;
    const rps = rounds.map((r) => r.scenario.wrk.reqPerSec / r.against.wrk.reqPerSec);
    const cpu = rounds.map((r) => r.scenario.cpuUsPerReq / r.against.cpuUsPerReq);
    const summary = {
      scenario: opts.scenario.name,
      against: opts.against.name,
      rounds: rounds.length,
      durationSec: opts.durationSec,
      connections: opts.connections,
      reqPerSecRatio: { median: median(rps), min: Math.min(...rps), max: Math.max(...rps) },
      cpuPerRequestRatio: { median: median(cpu), min: Math.min(...cpu), max: Math.max(...cpu) },
      medianReqPerSec: { scenario: median(rounds.map((r) => r.scenario.wrk.reqPerSec)), against: median(rounds.map((r) => r.against.wrk.reqPerSec)) },
      medianCpuUsPerReq: { scenario: median(rounds.map((r) => r.scenario.cpuUsPerReq)), against: median(rounds.map((r) => r.against.cpuUsPerReq)) },
    };
    process.stdout.write(
      `\n${opts.scenario.name}/${opts.against.name} req/s: median ${fixed(summary.reqPerSecRatio.median, 3)} (min ${fixed(summary.reqPerSecRatio.min, 3)}, max ${fixed(summary.reqPerSecRatio.max, 3)})\n` +
        `${opts.scenario.name}/${opts.against.name} server CPU per request: median ${fixed(summary.cpuPerRequestRatio.median, 3)} (min ${fixed(summary.cpuPerRequestRatio.min, 3)}, max ${fixed(summary.cpuPerRequestRatio.max, 3)})\n` +
        `medians: ${opts.scenario.name} ${fixed(summary.medianReqPerSec.scenario, 0)} req/s ${fixed(summary.medianCpuUsPerReq.scenario, 2)} µs/req, ` +
        `${opts.against.name} ${fixed(summary.medianReqPerSec.against, 0)} req/s ${fixed(summary.medianCpuUsPerReq.against, 2)} µs/req\n`,
    );
    if (opts.out !== null) writeFileSync(opts.out, JSON.stringify({ summary, rounds }, null, 2) + '\n');
    return 0;
  } finally {
    await sup.stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (sup.stopping) return;
    process.stderr.write(`bench:pair failed: ${err instanceof Error ? err.message : String(err)}\n`);
    void sup.stopAll().finally(() => process.exit(1));
  },
);
