/**
 * Parts `steady` and `spike`: two servers of this checkout, one recording exposures (SQLite, or
 * PostgreSQL with --exposure-db postgres) and one not, loaded at the same time by one wrk each in
 * rounds, as bench:ab loads a change and its baseline, so that whatever the shared machine does lands
 * on both. The figure is exposures on over off, per round: CPU per request (every thread of the
 * process, the writer's included) and req/s. On PostgreSQL the database's own CPU a request is
 * measured too (database-cpu.ts) and shown beside: the verdict is on rcd's process, what a delivery
 * node pays when the database is another machine's.
 * - steady: the mapped and combine scenarios' request pools, each cycled through in a warm-up first,
 *   so the players are already seen (each loop's repeat filter answers);
 * - spike: a new player every request (players-script.ts, a fresh prefix per round), on the launch
 *   item's three experiments: three rows a request for the writer.
 *
 * With --baseline the exposures-off server's place is taken by the baseline checkout's, recording
 * exposures too (into a database of its own): the rounds then compare this checkout with the
 * baseline, both recording, and no target is judged.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { BASE_SEED, scenarioByName } from '../harness/scenarios.js';
import { loadWithCpu, median, writeWrkScript, type WrkLoad } from '../harness/wrk.js';
import { figureAgainst, type TargetCheck } from '../load/targets.js';
import { createDatabase } from '../../test/helpers/postgres.js';
import { postgresCpuMicros, postmasterPid } from './database-cpu.js';
import { exposureCounters, startExposureServer, type ExposureServer } from './exposure-server.js';
import { speedVerdict, type PartResult, type RunContext } from './options.js';
import { writePlayersScript } from './players-script.js';
import { measureSqliteFloor } from './sqlite-floor.js';

interface Round {
  readonly off: WrkLoad;
  readonly on: WrkLoad;
  /** The exposure PostgreSQL's CPU per request of the exposures-on server (µs), null on SQLite. */
  readonly dbUsPerReq: number | null;
}

interface Pair {
  /** The exposures-off server, or the baseline's (recording) with --baseline. */
  readonly off: ExposureServer;
  /** This checkout's, recording exposures. */
  readonly on: ExposureServer;
  /** The postmaster of the exposure PostgreSQL whose CPU is measured; null on SQLite and with --baseline (two servers write to it). */
  readonly postmaster: number | null;
  /** What the two sides are called in the report. */
  readonly names: SideNames;
}

interface SideNames {
  readonly off: string;
  readonly on: string;
  /** The ratio's name: "on/off", or "this/base". */
  readonly ratio: string;
}

const ON_OFF: SideNames = { off: 'off', on: 'on', ratio: 'on/off' };
const THIS_BASE: SideNames = { off: 'base', on: 'this', ratio: 'this/base' };

/** New players of the SQLite floor after the spike's rounds (sqlite-floor.ts): three rows each. */
const FLOOR_PLAYERS = 100_000;
const FLOOR_PLAYERS_SMOKE = 2_000;

const STEADY_CPU_BOUND = 1.05;
const SPIKE_CPU_BOUND = 1.2;
const SPIKE_REQ_BOUND = 0.85;

/** Both servers of a pair, one wrk each, loaded at once; any non-2xx answer or socket error fails the run. */
async function loadBoth(ctx: RunContext, pair: Pair, script: (side: 'off' | 'on') => string, seconds: number): Promise<Round> {
  const track = (c: ChildProcess): void => void ctx.sup.track(c);
  const db0 = pair.postmaster === null ? 0 : postgresCpuMicros(pair.postmaster);
  const [off, on] = await Promise.all([
    loadWithCpu(pair.off, script('off'), ctx.opts.connections, seconds, track),
    loadWithCpu(pair.on, script('on'), ctx.opts.connections, seconds, track),
  ]);
  for (const [label, side] of [[pair.names.off, off], [pair.names.on, on]] as const) {
    if (side.wrk.non2xx > 0 || side.wrk.socketErrors > 0) throw new Error(`${label}: ${side.wrk.non2xx} non-2xx answers and ${side.wrk.socketErrors} socket errors under wrk`);
  }
  const onRequests = on.wrk.reqPerSec * seconds;
  const dbUsPerReq = pair.postmaster === null || onRequests === 0 ? null : (postgresCpuMicros(pair.postmaster) - db0) / onRequests;
  return { off, on, dbUsPerReq };
}

/** CPU/request on, the exposure PostgreSQL's included, over off. */
function withDbRatio(r: Round, dbUsPerReq: number): number {
  return (r.on.cpuUsPerReq + dbUsPerReq) / r.off.cpuUsPerReq;
}

function roundLine(names: SideNames, name: string, i: number, r: Round): string {
  const db = r.dbUsPerReq === null ? '' : `, the database ${r.dbUsPerReq.toFixed(2)} µs/req (${names.ratio} CPU with it ${withDbRatio(r, r.dbUsPerReq).toFixed(3)})`;
  return (
    `${name} round ${i + 1}: ${names.off} ${r.off.wrk.reqPerSec.toFixed(0)} req/s ${r.off.cpuUsPerReq.toFixed(2)} µs/req, ` +
    `${names.on} ${r.on.wrk.reqPerSec.toFixed(0)} req/s ${r.on.cpuUsPerReq.toFixed(2)} µs/req; ${names.ratio} CPU ${(r.on.cpuUsPerReq / r.off.cpuUsPerReq).toFixed(3)}, req/s ${(r.on.wrk.reqPerSec / r.off.wrk.reqPerSec).toFixed(3)}${db}`
  );
}

interface Measured {
  readonly cpuRatio: number;
  readonly reqRatio: number;
  readonly cpuRange: readonly [number, number];
  /** CPU/request on (rcd and its exposure PostgreSQL) over off, median of the rounds; null on SQLite. */
  readonly withDbCpuRatio: number | null;
  /** Rows the exposures-on server's loops queued per request in the rounds. */
  readonly rowsPerRequest: number;
  readonly rounds: readonly Round[];
}

/** Warm-up, then the rounds; `script(round, side)` is the wrk script of a round (-1: the warm-up). */
async function measure(ctx: RunContext, pair: Pair, name: string, script: (round: number, side: 'off' | 'on') => string): Promise<Measured> {
  if (ctx.opts.warmupSec > 0) await loadBoth(ctx, pair, (side) => script(-1, side), ctx.opts.warmupSec);
  const rounds: Round[] = [];
  const before = await exposureCounters(pair.on);
  for (let i = 0; i < ctx.opts.rounds && !ctx.sup.stopping; i++) {
    const r = await loadBoth(ctx, pair, (side) => script(i, side), ctx.opts.durationSec);
    rounds.push(r);
    ctx.say(roundLine(pair.names, name, i, r));
  }
  const after = await exposureCounters(pair.on);
  // What the writer was given: with players already seen, the loops' repeat filters should pass few rows.
  const requests = rounds.reduce((s, r) => s + r.on.wrk.reqPerSec * ctx.opts.durationSec, 0);
  const rowsPerRequest = requests > 0 ? (after.queued - before.queued) / requests : 0;
  ctx.say(`${name}: ${pair.names === ON_OFF ? 'exposures on' : 'this checkout'} queued ${(after.queued - before.queued).toFixed(0)} rows in the rounds (${rowsPerRequest.toFixed(3)} a request), wrote ${(after.written - before.written).toFixed(0)}, dropped ${(after.dropped - before.dropped).toFixed(0)}`);
  const cpu = rounds.map((r) => r.on.cpuUsPerReq / r.off.cpuUsPerReq);
  const withDb = pair.postmaster === null ? null : median(rounds.map((r) => withDbRatio(r, r.dbUsPerReq ?? 0)));
  return {
    cpuRatio: median(cpu),
    reqRatio: median(rounds.map((r) => r.on.wrk.reqPerSec / r.off.wrk.reqPerSec)),
    cpuRange: [Math.min(...cpu), Math.max(...cpu)],
    withDbCpuRatio: withDb,
    rowsPerRequest,
    rounds,
  };
}

/** Where a server of the pair records: a SQLite file of the run's dir named after `name`, or a new database on the run's PostgreSQL. */
async function exposureTarget(ctx: RunContext, name: string): Promise<string> {
  if (ctx.opts.exposureDb === 'sqlite') return `sqlite:${join(ctx.dir, `${name}.db`)}`;
  return (await createDatabase((await ctx.postgres()).url)).url;
}

async function startPair(ctx: RunContext, part: string): Promise<Pair> {
  const baseline = ctx.opts.baseline;
  const exposures = await exposureTarget(ctx, `${part}-exposures`);
  const baseExposures = baseline === null ? null : await exposureTarget(ctx, `${part}-baseline-exposures`);
  const postmaster = ctx.opts.exposureDb === 'postgres' && baseline === null ? postmasterPid((await ctx.postgres()).port) : null;
  const [off, on] = await Promise.all([
    baseline === null
      ? startExposureServer(ctx.sup, { dir: ctx.dir, bundle: ctx.bundle, label: `${part} exposures off`, exposures: null })
      : startExposureServer(ctx.sup, { dir: ctx.dir, bundle: ctx.bundle, label: `${part} baseline`, exposures: baseExposures, root: baseline }),
    startExposureServer(ctx.sup, { dir: ctx.dir, bundle: ctx.bundle, label: `${part} exposures on`, exposures }),
  ]);
  const where = (url: string): string => (ctx.opts.exposureDb === 'postgres' ? 'PostgreSQL on this machine' + (postmaster === null ? '' : `, postmaster pid ${postmaster}`) : url);
  if (baseline === null) {
    ctx.say(`${part}: exposures off (pid ${off.pid}) and on (pid ${on.pid}, ${where(exposures)}), both loaded at once, ${ctx.opts.connections} connections each`);
  } else {
    ctx.say(`${part}: the baseline ${baseline} (pid ${off.pid}, ${where(baseExposures!)}) and this checkout (pid ${on.pid}, ${where(exposures)}), both recording exposures, loaded at once, ${ctx.opts.connections} connections each`);
  }
  return { off, on, postmaster, names: baseline === null ? ON_OFF : THIS_BASE };
}

async function stopPair(ctx: RunContext, pair: Pair): Promise<void> {
  await Promise.all([ctx.sup.stopChild(pair.off.child), ctx.sup.stopChild(pair.on.child)]);
}

function cpuCheck(ctx: RunContext, what: string, m: Measured, bound: number): TargetCheck {
  if (ctx.opts.baseline !== null) return comparison(`${what}: CPU/request this/base`, `${m.cpuRatio.toFixed(3)} (rounds ${m.cpuRange[0].toFixed(3)}-${m.cpuRange[1].toFixed(3)})`);
  return {
    what: `${what}: CPU/request on/off <= ${bound.toFixed(2)}`,
    measured:
      `${figureAgainst(m.cpuRatio, 3, bound, false)} (rounds ${m.cpuRange[0].toFixed(3)}-${m.cpuRange[1].toFixed(3)}, req/s ${m.reqRatio.toFixed(3)})` +
      (m.withDbCpuRatio === null ? '' : `; with the exposure PostgreSQL's own CPU on this machine ${m.withDbCpuRatio.toFixed(3)}`),
    verdict: speedVerdict(ctx.opts, m.cpuRatio <= bound),
  };
}

/** With --baseline: the figure, no target. */
function comparison(what: string, measured: string): TargetCheck {
  return { what, measured, verdict: 'n/a' };
}

function summary(m: Measured): Record<string, unknown> {
  return {
    cpuRatio: m.cpuRatio,
    reqRatio: m.reqRatio,
    withDbCpuRatio: m.withDbCpuRatio,
    rowsPerRequest: m.rowsPerRequest,
    rounds: m.rounds.map((r) => ({
      off: { reqPerSec: r.off.wrk.reqPerSec, cpuUsPerReq: r.off.cpuUsPerReq, p99Ms: r.off.wrk.latencyMs.p99 },
      on: { reqPerSec: r.on.wrk.reqPerSec, cpuUsPerReq: r.on.cpuUsPerReq, p99Ms: r.on.wrk.latencyMs.p99 },
      dbUsPerReq: r.dbUsPerReq,
    })),
  };
}

export async function runSteady(ctx: RunContext): Promise<PartResult> {
  const pair = await startPair(ctx, 'steady');
  const figures: Record<string, unknown> = {};
  const checks: TargetCheck[] = [];
  try {
    for (const name of ['mapped', 'combine'] as const) {
      const script = writeWrkScript(ctx.dir, `steady-${name}`, scenarioByName(name).pool(BASE_SEED));
      const m = await measure(ctx, pair, `steady ${name}`, () => script);
      figures[name] = summary(m);
      const check = cpuCheck(ctx, `steady ${name === 'combine' ? 'dynamic combine' : name} (players seen)`, m, STEADY_CPU_BOUND);
      checks.push(check);
      ctx.say(`verdict: ${check.what}: ${check.measured}  ${check.verdict}`);
    }
  } finally {
    await stopPair(ctx, pair);
  }
  return { part: 'steady', figures, checks };
}

/**
 * SQLite's own cost of the spike's rows, measured in this process once the rounds are over (the
 * servers idle), set against the rounds: the least the on/off CPU ratio can be on this machine.
 */
function sqliteFloor(ctx: RunContext, m: Measured): Record<string, number> {
  const floor = measureSqliteFloor(join(ctx.dir, 'spike-floor.db'), ctx.opts.smoke ? FLOOR_PLAYERS_SMOKE : FLOOR_PLAYERS);
  const offUsPerReq = median(m.rounds.map((r) => r.off.cpuUsPerReq));
  const usPerRequest = floor.usPerRow * m.rowsPerRequest;
  const ratio = offUsPerReq > 0 ? 1 + usPerRequest / offUsPerReq : 0;
  ctx.say(
    `spike floor: SQLite alone (no rcd: ${floor.rows.toLocaleString('en-US')} rows of new players into a fresh exposure file, one INSERT ... SELECT a transaction ` +
      `of the writer's size) costs ${floor.usPerRow.toFixed(2)} µs a row; at ${m.rowsPerRequest.toFixed(2)} rows a request that is ${usPerRequest.toFixed(2)} µs ` +
      `against an exposures-off request's ${offUsPerReq.toFixed(2)} µs: the on/off CPU cannot go below ${ratio.toFixed(3)} here`,
  );
  return { rows: floor.rows, usPerRow: floor.usPerRow, usPerRequest, offUsPerReq, ratio };
}

export async function runSpike(ctx: RunContext): Promise<PartResult> {
  const pair = await startPair(ctx, 'spike');
  try {
    // Both servers get the same new players in a round (each records into its own table, or none).
    const scripts = new Map<number, string>();
    const script = (round: number): string => {
      let path = scripts.get(round);
      if (path === undefined) scripts.set(round, (path = writePlayersScript(ctx.dir, `spike-${round + 1}`, `spike${round + 1}-`, 0, 0).path));
      return path;
    };
    const m = await measure(ctx, pair, 'spike', (round) => script(round));
    const cpu = cpuCheck(ctx, 'launch spike (a new player every request, 3 experiments)', m, SPIKE_CPU_BOUND);
    const req: TargetCheck =
      ctx.opts.baseline !== null
        ? comparison('launch spike: req/s this/base', m.reqRatio.toFixed(3))
        : {
            what: `launch spike: req/s on/off >= ${SPIKE_REQ_BOUND.toFixed(2)}`,
            measured: figureAgainst(m.reqRatio, 3, SPIKE_REQ_BOUND, true),
            verdict: speedVerdict(ctx.opts, m.reqRatio >= SPIKE_REQ_BOUND),
          };
    const figures: Record<string, unknown> = summary(m);
    // The floor is set against exposures-off requests: none run with --baseline.
    if (ctx.opts.exposureDb === 'sqlite' && ctx.opts.baseline === null) figures['sqliteFloor'] = sqliteFloor(ctx, m);
    for (const c of [cpu, req]) ctx.say(`verdict: ${c.what}: ${c.measured}  ${c.verdict}`);
    return { part: 'spike', figures, checks: [cpu, req] };
  } finally {
    await stopPair(ctx, pair);
  }
}
