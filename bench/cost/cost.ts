/**
 * `npm run bench:cost [-- --scenario NAME[,NAME] --rounds N --duration S --connections N
 *                        --callgrind-requests N --no-callgrind --cache-sim --dumps DIR --by-function N --smoke --out FILE --check]`
 *
 * What rcd costs per answered request against the floor (bench/harness/ceiling.ts --floor: bare uWS paying
 * only the header reads, framing check and body parse any server of this API must make, then
 * sending the same bytes: rcd's own answers to the requests sent, one buffer per distinct answer,
 * in the requests' order; --floor-answers one sends one answer to all). Two figures per scenario,
 * side by side in one run:
 *
 * - **CPU time per answered request**: rcd and the floor are loaded at once by one wrk each, round
 *   after round; each process's user+sys time over the round (from /proc) divided by the answers it
 *   gave. efficiency = floor CPU/req ÷ rcd CPU/req, the median of the rounds: 1.0 is a server whose
 *   own work costs nothing. The box's noise moves both servers together, so the ratio holds where
 *   req/s alone swings (req/s ratios are printed beside it, not judged).
 * - **Instructions per request** (callgrind.ts): both under valgrind, a fixed sequence of the
 *   scenario's requests on one connection, counted after a warm-up. Deterministic: a 3% change of
 *   the hot path is visible in one run. Also reported as floor ÷ rcd.
 *
 * The verdict (and `--check`, exit 1 on a FAIL) is on the CPU efficiency against COST_TARGETS.
 * Needs wrk on PATH, Linux /proc, and valgrind (unless --no-callgrind).
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuBenchOptions, intOption, nodeFlagsOption, UsageError } from '../harness/cli-options.js';
import { BASE_SEED, POOL_VARIANTS, poolVariant, selectScenarios, type PoolVariant, type RequestEntry, type Scenario } from '../harness/scenarios.js';
import { repoRoot, writeBundle } from '../fixtures/generate.js';
import { poolAnswers, probe } from '../harness/probe.js';
import { Supervisor, startCeiling, startServer, type Target } from '../harness/processes.js';
import { textTable } from '../load/report.js';
import { figureAgainst } from '../load/targets.js';
import { loadWithCpu, median, mediansByStart, onCpu, tasksetAvailable, wrkAvailable, writeWrkScript, type WrkLoad } from '../harness/wrk.js';
import { cpusAllowed } from '../harness/measure.js';
import { CallgrindProcess, callgrindAvailable, callgrindLauncher, countInstructions, machineL2, type InstructionCount, type Spread } from './callgrind.js';
import { codeCosts, functionCostsOfFiles, readPerfMap, renderFunctionTable } from './callgrind-functions.js';
import { inlinedCosts, matchingTrace, renderInlinedTable } from './inlined.js';

/** The least CPU efficiency (floor CPU/req ÷ rcd CPU/req, median of rounds) per scenario; bench/README.md, "Cost against the floor". */
const COST_TARGETS: Readonly<Record<string, number>> = {
  plain: 0.9,
  wrapped: 0.9,
  mapped: 0.9,
  'mapped-serialized': 0.9,
  catalog: 0.9,
  combine: 0.8,
  'combine-50': 0.75,
};

const USAGE = `usage: npm run bench:cost -- [options]
  --scenario LIST          scenarios (default: ${Object.keys(COST_TARGETS).join(',')})
  --rounds N               rounds of both servers loaded at once (default 5, 1..50), per start
  --starts N               start both servers N times for the CPU rounds (default 1, 1..20): each start runs
                           every scenario's warm-up and rounds, and the figures are the median of all rounds
                           of all starts; a table shows each start's median (a process keeps one speed for
                           its whole life, so starts differ more than rounds)
  --pinned                 each round loads rcd and then the floor, each alone on CPU 0 (the whole
                           process) with its wrk on CPU 1 (taskset), instead of both at once on
                           whatever cores the scheduler picks; needs 2 CPUs
  --duration S             seconds per round (default 5, 1..120)
  --warmup S               seconds of load before the first round, not counted (default 2, 0..60)
  --connections N          connections of each server's wrk (default 50)
  --callgrind-requests N   requests in the counted sequence (default 400, 10..100000)
  --callgrind-warmups N    uncounted passes of the sequence first (default 300, 1..2000)
  --callgrind-windows N    counted passes, each on its own; the median is the figure (default 7, 1..50)
  --no-callgrind           CPU time only (no valgrind)
  --cache-sim              callgrind's cache simulator too: L1 misses per request of code (I1) and data (D1), and
                           L2 misses (its second level set to this machine's L2, getconf), slower
  --dumps DIR              keep callgrind's dumps in DIR (one per counted pass: callgrind_annotate shows where they go)
  --by-function N          after each scenario, the N functions of rcd and of the floor with the most L1 data
                           misses (with --cache-sim) or instructions, per request, in the median window; rcd's
                           compiled JavaScript named by function (callgrind per instruction and node's
                           --perf-basic-prof map for rcd under valgrind; its map is kept in --dumps DIR) (1..500)
  --inlined NAME           after each scenario, rcd's optimized function NAME (e.g. startSingle, answeredByPlan)
                           split among the functions TurboFan inlined into it: instructions, and with
                           --cache-sim misses, per request in the median window (V8's --trace-turbo for rcd
                           under valgrind, its JSON kept in --dumps DIR/turbo; bench/cost/inlined.ts)
  --smoke                  1 round of 1 s, one counted pass of 20 requests after 1 pass: checks that it runs
  --pool all|one|attributes  the requests sent (default all, the scenario's pool): one, its first request
                           alone (one user, one answer); attributes, every user with the first request's p
                           and v (few rule combinations): what the variety of users costs each server
  --floor-answers pool|one  what the floor sends (default pool): pool, the answers rcd gives the requests sent,
                           one per distinct answer (the uid taken out of the ETag), headers included, in
                           the order of the requests; one, a single answer of median size (its body under
                           Content-Type alone) to every request, the floor before it carried the pool's answers
  --node-flags=FLAGS       options of node for rcd (its CPU rounds and its callgrind run), space-separated
                           (e.g. --node-flags=--perf-basic-prof, so that perf names its compiled JavaScript)
  --out FILE               also write every figure as JSON
  --check                  exit 1 when a scenario's CPU efficiency is below its target`;

interface CostOptions {
  readonly scenarios: readonly Scenario[];
  readonly rounds: number;
  /** Starts of both servers for the CPU rounds (--starts). */
  readonly starts: number;
  readonly durationSec: number;
  readonly warmupSec: number;
  readonly connections: number;
  readonly callgrind: boolean;
  readonly callgrindRequests: number;
  readonly callgrindWarmups: number;
  readonly callgrindWindows: number;
  readonly cacheSim: boolean;
  readonly out: string | null;
  readonly dumps: string | null;
  /** Functions listed per scenario and server (--by-function), or 0 for none. */
  readonly byFunction: number;
  /** rcd's optimized function split by what it inlined (--inlined), or null. */
  readonly inlined: string | null;
  readonly check: boolean;
  readonly nodeFlags: readonly string[];
  /** CPU rounds with each server alone on CPU 0 and its wrk on CPU 1, in turn (--pinned). */
  readonly pinned: boolean;
  /** Which of each scenario's requests are sent (--pool), in the CPU rounds and the counted sequence. */
  readonly pool: PoolVariant;
  /** What the floor sends (--floor-answers): the requests' own answers, or one answer to all. */
  readonly floorAnswers: FloorAnswers;
}

const FLOOR_ANSWERS = ['pool', 'one'] as const;
type FloorAnswers = (typeof FLOOR_ANSWERS)[number];

function parseOptions(argv: string[]): CostOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      scenario: { type: 'string' },
      rounds: { type: 'string' },
      starts: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'callgrind-requests': { type: 'string' },
      'callgrind-warmups': { type: 'string' },
      'callgrind-windows': { type: 'string' },
      'no-callgrind': { type: 'boolean', default: false },
      'cache-sim': { type: 'boolean', default: false },
      smoke: { type: 'boolean', default: false },
      out: { type: 'string' },
      dumps: { type: 'string' },
      'by-function': { type: 'string' },
      inlined: { type: 'string' },
      check: { type: 'boolean', default: false },
      'node-flags': { type: 'string', default: '' },
      pinned: { type: 'boolean', default: false },
      pool: { type: 'string', default: 'all' },
      'floor-answers': { type: 'string', default: 'pool' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  let scenarios: Scenario[];
  try {
    scenarios = selectScenarios(values.scenario ?? Object.keys(COST_TARGETS).join(','));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  for (const s of scenarios) {
    if (!s.expectedStatuses.every((code) => code < 300)) throw new UsageError(`${s.name} answers errors on purpose; its cost is not compared with the floor's 200s`);
  }
  const pool = values.pool as PoolVariant;
  if (!POOL_VARIANTS.includes(pool)) throw new UsageError(`--pool takes ${POOL_VARIANTS.join(', ')}: ${JSON.stringify(values.pool)}`);
  const floorAnswers = values['floor-answers'] as FloorAnswers;
  if (!FLOOR_ANSWERS.includes(floorAnswers)) throw new UsageError(`--floor-answers takes ${FLOOR_ANSWERS.join(', ')}: ${JSON.stringify(values['floor-answers'])}`);
  const smoke = values.smoke === true;
  const callgrind = values['no-callgrind'] !== true;
  if (!callgrind && values['cache-sim'] === true) throw new UsageError('--cache-sim runs under callgrind: drop --no-callgrind');
  if (!callgrind && values['by-function'] !== undefined) throw new UsageError('--by-function reads callgrind\'s dumps: drop --no-callgrind');
  if (!callgrind && values.inlined !== undefined) throw new UsageError('--inlined reads callgrind\'s dumps: drop --no-callgrind');
  // A function's name as V8's --trace-turbo-filter matches it and as the trace files are named.
  if (values.inlined !== undefined && !/^[A-Za-z_$][\w$]{0,99}$/.test(values.inlined)) throw new UsageError(`--inlined takes a function's name (letters, digits, _ and $): ${JSON.stringify(values.inlined)}`);
  if (!wrkAvailable()) throw new UsageError('bench:cost needs wrk on PATH (Debian: apt-get install wrk)');
  if (values.pinned === true && !tasksetAvailable()) throw new UsageError('--pinned binds processes to CPUs 0 and 1 with taskset: it needs util-linux and 2 CPUs');
  if (callgrind && !callgrindAvailable()) throw new UsageError('bench:cost needs valgrind for the instruction counts (Debian: apt-get install valgrind), or --no-callgrind');
  return {
    scenarios,
    rounds: intOption('rounds', values.rounds, smoke ? 1 : 5, 1, 50),
    starts: intOption('starts', values.starts, 1, 1, 20),
    durationSec: intOption('duration', values.duration, smoke ? 1 : 5, 1, 120),
    warmupSec: intOption('warmup', values.warmup, smoke ? 0 : 2, 0, 60),
    connections: intOption('connections', values.connections, 50, 1, 10000),
    callgrind,
    callgrindRequests: intOption('callgrind-requests', values['callgrind-requests'], smoke ? 20 : 400, 10, 100_000),
    callgrindWarmups: intOption('callgrind-warmups', values['callgrind-warmups'], smoke ? 1 : 300, 1, 2000),
    callgrindWindows: intOption('callgrind-windows', values['callgrind-windows'], smoke ? 1 : 7, 1, 50),
    cacheSim: values['cache-sim'] === true,
    out: values.out ?? null,
    dumps: values.dumps === undefined ? null : resolve(values.dumps),
    byFunction: values['by-function'] === undefined ? 0 : intOption('by-function', values['by-function'], 0, 1, 500),
    inlined: values.inlined ?? null,
    check: values.check === true,
    nodeFlags: nodeFlagsOption(values['node-flags']),
    pinned: values.pinned === true,
    pool,
    floorAnswers,
  };
}

/** What the start of a run says it sends, for each --pool but the default. */
const POOL_DESCRIPTIONS: Readonly<Record<Exclude<PoolVariant, 'all'>, string>> = {
  one: "the first request of each scenario's pool alone",
  attributes: "each scenario's users with the p and v of its first request",
};

const sup = new Supervisor();

/** --pinned: the servers run on this CPU, their wrk on the other. */
const SERVER_CPU = 0;
const WRK_CPU = 1;

interface CpuRound {
  /** Which start of the servers (1-based, --starts) the round ran in. */
  readonly start: number;
  readonly rcd: WrkLoad;
  readonly floor: WrkLoad;
}

interface InstructionFigures {
  readonly rcd: InstructionCount;
  readonly floor: InstructionCount;
}

interface ScenarioCost {
  readonly scenario: string;
  readonly target: number | null;
  readonly bodyBytes: number;
  /** How many distinct answers the floor sent in the CPU rounds (--floor-answers pool), or null for one to all. */
  readonly floorAnswers: number | null;
  readonly rounds: readonly CpuRound[];
  /** floor CPU/req ÷ rcd CPU/req: median, min, max of the rounds (of every start). */
  readonly efficiency: { readonly median: number; readonly min: number; readonly max: number };
  /** The median efficiency of each start's rounds, in start order (one entry without --starts). */
  readonly byStart: readonly number[];
  /** rcd req/s ÷ floor req/s, median of the rounds (reported, not judged). */
  readonly reqPerSecRatio: number;
  readonly cpuUsPerReq: { readonly rcd: number; readonly floor: number };
  /** The same split into user and system time (each the median of its rounds, so the two need not sum to the above). */
  readonly userUsPerReq: { readonly rcd: number; readonly floor: number };
  readonly systemUsPerReq: { readonly rcd: number; readonly floor: number };
  /** Preemptions and waits of each server's main thread (its one delivery loop) per request, medians of the rounds. */
  readonly preemptionsPerReq: { readonly rcd: number; readonly floor: number };
  readonly waitsPerReq: { readonly rcd: number; readonly floor: number };
  readonly instructions: InstructionFigures | null;
  readonly verdict: 'pass' | 'FAIL' | 'n/a';
}

function checked(label: string, load: WrkLoad): WrkLoad {
  if (load.wrk.non2xx > 0 || load.wrk.socketErrors > 0) throw new Error(`${label}: ${load.wrk.non2xx} non-2xx answers and ${load.wrk.socketErrors} socket errors under wrk`);
  return load;
}

/**
 * Both servers loaded at once for `seconds`, each by its own wrk; with --pinned, rcd and then the
 * floor, each with the whole of CPU 0 (where it was started) and its wrk alone on CPU 1.
 */
async function loadBoth(rcd: Target, floor: Target, script: string, opts: CostOptions, seconds: number, start: number): Promise<CpuRound> {
  if (opts.pinned) {
    const a = await loadWithCpu(rcd, script, opts.connections, seconds, (c) => sup.track(c), WRK_CPU);
    const b = await loadWithCpu(floor, script, opts.connections, seconds, (c) => sup.track(c), WRK_CPU);
    return { start, rcd: checked('rcd', a), floor: checked('floor', b) };
  }
  const [a, b] = await Promise.all([
    loadWithCpu(rcd, script, opts.connections, seconds, (c) => sup.track(c)),
    loadWithCpu(floor, script, opts.connections, seconds, (c) => sup.track(c)),
  ]);
  return { start, rcd: checked('rcd', a), floor: checked('floor', b) };
}

function fixed(n: number, digits: number): string {
  return n.toFixed(digits);
}

/** What the floor was given for a scenario: the probe's answer's size, and how many answers it sends (null: one). */
interface FloorSetup {
  readonly bodyBytes: number;
  readonly answers: number | null;
}

/**
 * The floor made to send what rcd sends: with --floor-answers pool, rcd's answers to `requests` (the
 * sequence the floor is then loaded with, in order); else the probe's one answer.
 */
async function configureFloor(s: Scenario, rcd: Target, floors: readonly Target[], requests: readonly RequestEntry[], answers: FloorAnswers): Promise<FloorSetup> {
  const pr = await probe(s, rcd);
  if (pr.problems.length > 0) throw new Error(`${s.name}: rcd's answers failed the scenario's checks:\n  ${pr.problems.join('\n  ')}`);
  const config = answers === 'pool' ? { ...pr.config, pool: await poolAnswers(rcd.url, requests) } : pr.config;
  const count = config.pool?.answers.length ?? null;
  if (count !== null) {
    const plural = (n: number, word: string): string => `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
    process.stdout.write(`  ${s.name}: the floor sends rcd's ${plural(count, 'distinct answer')} to ${plural(requests.length, 'request')}, in order\n`);
  }
  for (const f of floors) await f.configure(config);
  return { bodyBytes: pr.bodyBytes, answers: count };
}

/** One start's rounds of scenario `s` (after its warm-up). */
async function cpuPart(s: Scenario, rcd: Target, floor: Target, dir: string, opts: CostOptions, start: number): Promise<{ rounds: CpuRound[]; setup: FloorSetup }> {
  const requests = poolVariant(s.pool(BASE_SEED), opts.pool);
  const setup = await configureFloor(s, rcd, [floor], requests, opts.floorAnswers);
  const script = writeWrkScript(dir, s.name, requests);
  if (opts.warmupSec > 0) await loadBoth(rcd, floor, script, opts, opts.warmupSec, start);
  const rounds: CpuRound[] = [];
  const of = opts.starts > 1 ? `, start ${start}` : '';
  for (let i = 0; i < opts.rounds && !sup.stopping; i++) {
    const r = await loadBoth(rcd, floor, script, opts, opts.durationSec, start);
    rounds.push(r);
    process.stdout.write(
      `  ${s.name} round ${i + 1}${of}: rcd ${fixed(r.rcd.cpuUsPerReq, 2)} µs/req (user ${fixed(r.rcd.userUsPerReq, 2)}, system ${fixed(r.rcd.systemUsPerReq, 2)}) ${fixed(r.rcd.wrk.reqPerSec, 0)} req/s, ` +
        `floor ${fixed(r.floor.cpuUsPerReq, 2)} µs/req (user ${fixed(r.floor.userUsPerReq, 2)}, system ${fixed(r.floor.systemUsPerReq, 2)}) ${fixed(r.floor.wrk.reqPerSec, 0)} req/s, efficiency ${fixed(r.floor.cpuUsPerReq / r.rcd.cpuUsPerReq, 3)}\n`,
    );
  }
  return { rounds, setup };
}

function roundEfficiency(r: CpuRound): number {
  return r.floor.cpuUsPerReq / r.rcd.cpuUsPerReq;
}

/** A figure of each server's wrk load, the median of the rounds. */
function mediansOf(rounds: readonly CpuRound[], figure: (load: WrkLoad) => number): { rcd: number; floor: number } {
  return { rcd: median(rounds.map((r) => figure(r.rcd))), floor: median(rounds.map((r) => figure(r.floor))) };
}

function summarize(s: Scenario, rounds: readonly CpuRound[], setup: FloorSetup, instructions: InstructionFigures | null, starts: number): ScenarioCost {
  const eff = rounds.map(roundEfficiency);
  const target = COST_TARGETS[s.name] ?? null;
  const efficiency = { median: median(eff), min: Math.min(...eff), max: Math.max(...eff) };
  const byStart = mediansByStart(rounds, starts, roundEfficiency);
  return {
    scenario: s.name,
    target,
    bodyBytes: setup.bodyBytes,
    floorAnswers: setup.answers,
    rounds,
    efficiency,
    byStart,
    reqPerSecRatio: median(rounds.map((r) => r.rcd.wrk.reqPerSec / r.floor.wrk.reqPerSec)),
    cpuUsPerReq: mediansOf(rounds, (l) => l.cpuUsPerReq),
    userUsPerReq: mediansOf(rounds, (l) => l.userUsPerReq),
    systemUsPerReq: mediansOf(rounds, (l) => l.systemUsPerReq),
    preemptionsPerReq: mediansOf(rounds, (l) => l.preemptionsPerReq),
    waitsPerReq: mediansOf(rounds, (l) => l.waitsPerReq),
    instructions,
    verdict: target === null ? 'n/a' : efficiency.median >= target ? 'pass' : 'FAIL',
  };
}

/** `; L1 misses: code N, data N; L2 misses N` when the cache simulator ran, else nothing. */
function misses(c: InstructionCount): string {
  if (c.i1MissesPerRequest === null || c.d1MissesPerRequest === null || c.l2MissesPerRequest === null) return '';
  return `; L1 misses: code ${Math.round(c.i1MissesPerRequest.median).toLocaleString('en-US')}, data ${Math.round(c.d1MissesPerRequest.median).toLocaleString('en-US')}; L2 misses ${Math.round(c.l2MissesPerRequest.median).toLocaleString('en-US')}`;
}

/** A miss count of the table, or n/a. */
function missCell(s: Spread | null | undefined): string {
  return s === null || s === undefined ? 'n/a' : Math.round(s.median).toLocaleString('en-US');
}

/**
 * Each start's median efficiency (--starts): how far the servers' per-process speed moves the figure.
 * The spread is the largest start's median over the least one's.
 */
function renderByStart(results: readonly ScenarioCost[], starts: number): string {
  const head = ['scenario', ...Array.from({ length: starts }, (_, i) => `start ${i + 1}`), 'spread'];
  const rows = results.map((r) => [
    r.scenario,
    ...Array.from({ length: starts }, (_, i) => (r.byStart[i] === undefined ? 'n/a' : fixed(r.byStart[i], 3))),
    r.byStart.length === 0 ? 'n/a' : fixed(Math.max(...r.byStart) / Math.min(...r.byStart), 3),
  ]);
  return textTable(head, rows) + '\n';
}

/** The verdict table: one line per scenario; with the cache simulator, L1 and L2 misses per request too. */
function renderCostTable(results: readonly ScenarioCost[], cacheSim: boolean): string {
  const missHead = cacheSim ? ['rcd I1 miss', 'floor I1 miss', 'rcd D1 miss', 'floor D1 miss', 'rcd L2 miss', 'floor L2 miss'] : [];
  const head = ['scenario', 'target', 'CPU eff', '(min-max)', 'rcd µs/req', 'floor µs/req', 'req/s ratio', 'rcd Ir/req', 'floor Ir/req', 'Ir eff', ...missHead, 'verdict'];
  const rows = results.map((r) => [
    r.scenario,
    r.target === null ? '-' : fixed(r.target, 2),
    // As judged: a median just under its target does not read as the target (targets.ts figureAgainst).
    r.target === null ? fixed(r.efficiency.median, 3) : figureAgainst(r.efficiency.median, 3, r.target, true),
    `${fixed(r.efficiency.min, 2)}-${fixed(r.efficiency.max, 2)}`,
    fixed(r.cpuUsPerReq.rcd, 2),
    fixed(r.cpuUsPerReq.floor, 2),
    fixed(r.reqPerSecRatio, 3),
    r.instructions === null ? 'n/a' : Math.round(r.instructions.rcd.perRequest.median).toLocaleString('en-US'),
    r.instructions === null ? 'n/a' : Math.round(r.instructions.floor.perRequest.median).toLocaleString('en-US'),
    r.instructions === null ? 'n/a' : fixed(r.instructions.floor.perRequest.median / r.instructions.rcd.perRequest.median, 3),
    ...(cacheSim
      ? [
          missCell(r.instructions?.rcd.i1MissesPerRequest),
          missCell(r.instructions?.floor.i1MissesPerRequest),
          missCell(r.instructions?.rcd.d1MissesPerRequest),
          missCell(r.instructions?.floor.d1MissesPerRequest),
          missCell(r.instructions?.rcd.l2MissesPerRequest),
          missCell(r.instructions?.floor.l2MissesPerRequest),
        ]
      : []),
    r.verdict,
  ]);
  return textTable(head, rows) + '\n';
}

/**
 * CPU per request split into user time (the process's own code: JavaScript, V8, uWS) and system time
 * (the kernel on its behalf: the TCP stack behind each send and receive). Reported, not judged: the
 * two servers make the same system calls for the same bytes, so a gap in system time is the kernel
 * running slower for one of them (its caches, preemptions), and the user-time ratio falls further
 * below the instruction ratio the more of the gap is misses rather than instructions.
 */
function renderCpuSplit(results: readonly ScenarioCost[]): string {
  const head = ['scenario', 'rcd user', 'floor user', 'user eff', 'rcd system', 'floor system', 'system eff'];
  // A short run may read no system tick at all (the clock counts in 10 ms steps): no ratio then.
  const ratio = (floor: number, rcd: number): string => (rcd > 0 ? fixed(floor / rcd, 3) : 'n/a');
  const rows = results.map((r) => [
    r.scenario,
    fixed(r.userUsPerReq.rcd, 2),
    fixed(r.userUsPerReq.floor, 2),
    ratio(r.userUsPerReq.floor, r.userUsPerReq.rcd),
    fixed(r.systemUsPerReq.rcd, 2),
    fixed(r.systemUsPerReq.floor, 2),
    ratio(r.systemUsPerReq.floor, r.systemUsPerReq.rcd),
  ]);
  return textTable(head, rows) + '\n';
}

/**
 * How often the kernel took each server's delivery loop off its core while it could run
 * (preemptions), and how often the loop slept for want of work (waits), per 1,000 answers. Reported,
 * not judged: with both servers loaded at once their clients share the two cores, and a client woken
 * by its server's send may take that server's core; every preemption costs the switch and the caches
 * the other task filled, in system and user time alike (bench/README.md, "Inside the two largest functions": Preemption).
 */
function renderSwitches(results: readonly ScenarioCost[]): string {
  const head = ['scenario', 'rcd preempted', 'floor preempted', 'rcd waits', 'floor waits'];
  const perThousand = (n: number): string => fixed(n * 1000, 0);
  const rows = results.map((r) => [
    r.scenario,
    perThousand(r.preemptionsPerReq.rcd),
    perThousand(r.preemptionsPerReq.floor),
    perThousand(r.waitsPerReq.rcd),
    perThousand(r.waitsPerReq.floor),
  ]);
  return textTable(head, rows) + '\n';
}

/**
 * Instructions on the request path alone (callgrind.ts REQUEST_PATH: uWS's handler of a read, with
 * everything it calls), the least window of each: steadier than the judged figure, whose windows
 * also hold the loop's other phases and what V8 does between requests. Reported, not judged: it
 * shows a change of a few hundred instructions in one run.
 */
function renderRequestPath(results: readonly ScenarioCost[]): string {
  const head = ['scenario', 'rcd Ir/req', '(windows)', 'floor Ir/req', '(windows)', 'Ir eff'];
  const count = (n: number): string => Math.round(n).toLocaleString('en-US');
  const rows = results.flatMap((r) => {
    if (r.instructions === null) return [];
    const a = r.instructions.rcd.requestPathPerRequest;
    const b = r.instructions.floor.requestPathPerRequest;
    return [[r.scenario, count(a.min), `${count(a.min)}-${count(a.max)}`, count(b.min), `${count(b.min)}-${count(b.max)}`, a.min > 0 ? fixed(b.min / a.min, 3) : 'n/a']];
  });
  return textTable(head, rows) + '\n';
}

/** node's perf map of a process (--perf-basic-prof). */
function perfMapOf(pid: number): string {
  return `/tmp/perf-${pid}.map`;
}

/** Moves rcd's perf map into the dumps directory when one is kept (it names their JIT code), else removes it. */
function keepPerfMap(pid: number, dumps: string | null): void {
  const map = perfMapOf(pid);
  if (!existsSync(map)) return;
  if (dumps !== null) copyFileSync(map, join(dumps, `perf-rcd.${pid}.map`));
  rmSync(map, { force: true });
}

function indent(text: string, by: string): string {
  return text
    .split('\n')
    .map((l) => (l.length === 0 ? l : by + l))
    .join('\n');
}

/**
 * rcd's optimized `name` in the median window, split by the functions inlined into it (bench/cost/inlined.ts),
 * or a line saying why not.
 */
function inlinedReport(name: string, scenario: string, count: InstructionCount, pid: number, turbo: string): string {
  const map = readPerfMap(readFileSync(perfMapOf(pid), 'utf8'));
  const found = matchingTrace(turbo, name, map);
  if (found === null) return `\n  ${scenario}, rcd: no optimized code of ${name} matches a --trace-turbo trace (not optimized in this run, or optimized again since)\n`;
  const rows = inlinedCosts(found.code, codeCosts(readFileSync(count.medianDump, 'utf8'), found.start, found.code.size));
  if (!rows.some((r) => r.self.ir / count.requests >= 0.5)) return `\n  ${scenario}, rcd: ${name}'s optimized code did not run in the median window (not on this scenario's path)\n`;
  return (
    `\n  ${scenario}, rcd: ${name}'s code (${found.code.size} bytes) by the function each instruction was inlined from, per request (median window: ${basename(count.medianDump)}; incl: with what that function inlined)\n` +
    indent(renderInlinedTable(rows, count.requests), '    ') +
    '\n'
  );
}

async function instructionPart(opts: CostOptions, dir: string, bundle: string): Promise<Map<string, InstructionFigures>> {
  const out = new Map<string, InstructionFigures>();
  const dumps = opts.dumps ?? dir;
  if (opts.dumps !== null) mkdirSync(dumps, { recursive: true });
  process.stdout.write('\ninstruction counts: starting rcd and the floor under valgrind (tens of seconds)...\n');
  const l2 = opts.cacheSim ? machineL2() : null;
  if (opts.cacheSim) {
    process.stdout.write(
      l2 === null
        ? '  cache simulator: getconf names no L2 here; the L2 columns are misses of callgrind\'s default last level\n'
        : `  cache simulator: second level = this machine's L2 (${l2.bytes / 1024} KiB, ${l2.ways} ways, ${l2.lineBytes}-byte lines)\n`,
    );
  }
  // Per instruction (and rcd's perf map naming its compiled JavaScript) when a table needs it.
  const perInstruction = opts.byFunction > 0 || opts.inlined !== null;
  const turbo = join(dumps, 'turbo');
  const nodeArgs = [...opts.nodeFlags];
  // The perf map is written as code is made: no cost counted in a window.
  if (perInstruction && !nodeArgs.includes('--perf-basic-prof')) nodeArgs.push('--perf-basic-prof');
  if (opts.inlined !== null) {
    mkdirSync(turbo, { recursive: true });
    // Traced while it compiles (not counted: V8's compilers are outside the figures); the C1
    // visualizer's file, which --trace-turbo also writes, goes beside the JSON, not into the checkout.
    nodeArgs.push('--trace-turbo', `--trace-turbo-filter=${opts.inlined}`, `--trace-turbo-path=${turbo}`, `--trace-turbo-cfg-file=${join(turbo, 'turbo.cfg')}`);
  }
  // One pool worker and one delivery loop: the counted work is the request's, not idle threads'.
  const [rcd, floor] = await Promise.all([
    startServer(sup, {
      root: repoRoot(),
      store: `sqlite:${join(dir, 'callgrind.db')}`,
      bundle,
      threads: 1,
      httpThreads: 1,
      label: 'rcd under valgrind',
      nodeArgs,
      launcher: callgrindLauncher(dumps, 'rcd', opts.cacheSim, perInstruction, l2),
      startTimeoutMs: 300_000,
    }),
    startCeiling(sup, null, 1, true, callgrindLauncher(dumps, 'floor', opts.cacheSim, perInstruction, l2)),
  ]);
  const counted = [new CallgrindProcess(rcd, dumps, 'rcd', opts.cacheSim), new CallgrindProcess(floor, dumps, 'floor', opts.cacheSim)] as const;
  for (const s of opts.scenarios) {
    if (sup.stopping) break;
    const pool = poolVariant(s.pool(BASE_SEED), opts.pool);
    const sequence = Array.from({ length: opts.callgrindRequests }, (_, i) => pool[i % pool.length]!);
    // The floor's answers in the sequence's order: every pass starts at its first request, as they do.
    await configureFloor(s, rcd, [floor], sequence, opts.floorAnswers);
    const a = await countInstructions(counted[0], sequence, opts.callgrindWarmups, opts.callgrindWindows);
    const b = await countInstructions(counted[1], sequence, opts.callgrindWarmups, opts.callgrindWindows);
    const bad = [...a.statuses, ...b.statuses].filter((st) => !s.expectedStatuses.includes(st));
    if (bad.length > 0) throw new Error(`${s.name}: unexpected statuses in the counted sequence: ${[...new Set(bad)].join(', ')}`);
    out.set(s.name, { rcd: a, floor: b });
    const show = (c: InstructionCount): string =>
      `${Math.round(c.perRequest.median).toLocaleString('en-US')} Ir/req (${Math.round(c.perRequest.min).toLocaleString('en-US')}-${Math.round(c.perRequest.max).toLocaleString('en-US')}; with V8's compilers and GC and the timer phase ${Math.round(c.allPerRequest.median).toLocaleString('en-US')}, the timer phase alone ${Math.round(c.timersPerRequest.median).toLocaleString('en-US')}${misses(c)})`;
    process.stdout.write(`  ${s.name}: rcd ${show(a)}, floor ${show(b)}; ${opts.callgrindWindows} windows of ${a.requests} requests\n`);
    if (opts.byFunction > 0) {
      for (const [label, count, map] of [['rcd', a, perfMapOf(rcd.pid)], ['the floor', b, null]] as const) {
        process.stdout.write(`\n  ${s.name}, ${label}: the ${opts.byFunction} functions with the most ${opts.cacheSim ? 'L1 data misses' : 'instructions'}, per request (median window: ${basename(count.medianDump)})\n`);
        process.stdout.write(indent(renderFunctionTable(functionCostsOfFiles(count.medianDump, map), count.requests, opts.byFunction), '    ') + '\n');
      }
    }
    if (opts.inlined !== null) process.stdout.write(inlinedReport(opts.inlined, s.name, a, rcd.pid, turbo));
  }
  await Promise.all([sup.stopChild(rcd.child, 60_000), sup.stopChild(floor.child, 60_000)]);
  if (perInstruction) keepPerfMap(rcd.pid, opts.dumps);
  return out;
}

async function main(): Promise<number> {
  const opts = cpuBenchOptions('bench:cost', process.argv.slice(2), parseOptions, USAGE);
  if (opts === null) return 2;
  sup.installCleanup('the servers and the load');
  const dir = sup.tempDir('rcd-cost-');
  const bundle = join(dir, 'bundle.json');
  writeBundle(bundle);
  if (opts.pool !== 'all') process.stdout.write(`requests: ${POOL_DESCRIPTIONS[opts.pool]} (--pool ${opts.pool}), in the CPU rounds and the counted sequence\n`);
  try {
    // One delivery loop each, the floor with one loop: like for like on any box.
    const launcher = opts.pinned ? onCpu(SERVER_CPU) : [];
    const cpu = new Map<string, { rounds: CpuRound[]; setup: FloorSetup }>();
    for (let start = 1; start <= opts.starts && !sup.stopping; start++) {
      if (opts.starts > 1) process.stdout.write(`start ${start} of ${opts.starts}\n`);
      const [rcd, floor] = await Promise.all([
        startServer(sup, { root: repoRoot(), store: `sqlite:${join(dir, `cost-${start}.db`)}`, bundle, threads: null, httpThreads: 1, label: 'rcd', nodeArgs: opts.nodeFlags, launcher }),
        startCeiling(sup, null, 1, true, launcher),
      ]);
      process.stdout.write(
        opts.pinned
          ? `rcd (pid ${rcd.pid}, CPUs ${cpusAllowed(rcd.pid)}) and the floor (pid ${floor.pid}, CPUs ${cpusAllowed(floor.pid)}) in turn, each alone with its wrk on CPU ${WRK_CPU}: ${opts.rounds} rounds of ${opts.durationSec} s each, ${opts.connections} connections\n`
          : `rcd (pid ${rcd.pid}) and the floor (pid ${floor.pid}) loaded at once: ${opts.rounds} rounds of ${opts.durationSec} s, ${opts.connections} connections each\n`,
      );
      for (const s of opts.scenarios) {
        if (sup.stopping) break;
        const part = await cpuPart(s, rcd, floor, dir, opts, start);
        const kept = cpu.get(s.name);
        if (kept === undefined) cpu.set(s.name, part);
        else kept.rounds.push(...part.rounds);
      }
      await Promise.all([sup.stopChild(rcd.child), sup.stopChild(floor.child)]);
    }
    const instructions = opts.callgrind ? await instructionPart(opts, dir, bundle) : new Map<string, InstructionFigures>();
    const results = opts.scenarios.map((s) => {
      const c = cpu.get(s.name)!;
      return summarize(s, c.rounds, c.setup, instructions.get(s.name) ?? null, opts.starts);
    });
    const failed = results.filter((r) => r.verdict === 'FAIL').length;
    const passed = results.filter((r) => r.verdict === 'pass').length;
    const roundsText = opts.starts > 1 ? `${opts.rounds * opts.starts} rounds (${opts.rounds} in each of ${opts.starts} starts)` : `${opts.rounds} rounds`;
    process.stdout.write(`\ncost against the floor (CPU eff = floor CPU/req ÷ rcd CPU/req, median of ${roundsText}${opts.pinned ? ' of each alone on one CPU' : ''}; Ir = instructions per request outside V8's compilers and GC and libuv's timer phase, median of the windows; Ir eff = floor Ir/req ÷ rcd Ir/req):\n`);
    process.stdout.write(renderCostTable(results, opts.cacheSim));
    process.stdout.write(`\ncost targets: ${passed} pass, ${failed} FAIL\n`);
    if (opts.starts > 1) {
      process.stdout.write(`\nCPU eff by start (the median of each start's rounds; reported, not judged):\n`);
      process.stdout.write(renderByStart(results, opts.starts));
    }
    process.stdout.write(`\nCPU per request by kind, µs (medians of the rounds; reported, not judged):\n`);
    process.stdout.write(renderCpuSplit(results));
    process.stdout.write(`\nContext switches of each server's delivery loop per 1,000 answers (medians of the rounds; reported, not judged):\n`);
    process.stdout.write(renderSwitches(results));
    if (opts.callgrind) {
      process.stdout.write(`\nInstructions on the request path (uWS's handler of a read and all it calls; the least of the windows; reported, not judged):\n`);
      process.stdout.write(renderRequestPath(results));
    }
    if (opts.out !== null) {
      writeFileSync(opts.out, JSON.stringify({ date: new Date().toISOString(), options: { ...opts, scenarios: opts.scenarios.map((s) => s.name) }, results }, null, 2) + '\n');
      process.stdout.write(`results: ${opts.out}\n`);
    }
    return opts.check && failed > 0 ? 1 : 0;
  } finally {
    await sup.stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (sup.stopping) return;
    process.stderr.write(`bench:cost failed: ${err instanceof Error ? err.message : String(err)}\n`);
    void sup.stopAll().finally(() => process.exit(1));
  },
);
