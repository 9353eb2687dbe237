/**
 * Part `outage`: one server recording into PostgreSQL (the run's throwaway server, which this part
 * stops and starts), a new player every request, in windows of wrk load: before (database up), during
 * (the database stopped for --outage-s), after (back). Judged: no delivery error in any window;
 * delivery p99 while the database is down within 1.2x of its mean with it up; the drop counter
 * accounts for what the table lacks (rows + dropped = 3 per answered request, within the requests
 * still in flight when a window ended); writing resumes by itself once the database is back.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { runWrk, type WrkStats } from '../harness/wrk.js';
import { figureAgainst, type TargetCheck } from '../load/targets.js';
import { createDatabase } from '../../test/helpers/postgres.js';
import { exposureCounters, startExposureServer, type ExposureServer } from './exposure-server.js';
import { openExposureTable, settle, splitTotal, type ExposureTable } from './exposure-table.js';
import { LAUNCH_EXPERIMENTS } from './launch-fixture.js';
import { fmtCount } from './exact-check.js';
import { speedVerdict, type PartResult, type RunContext } from './options.js';
import { readPlayersSent, writePlayersScript } from './players-script.js';

const P99_BOUND = 1.2;
const RESUME_BOUND_MS = 5000;
/** In smoke runs the writer's queue is made small, so that a 2 s outage overflows it. */
const SMOKE_QUEUE = 5000;

interface Window {
  readonly name: string;
  readonly wrk: WrkStats;
  readonly made: number;
  readonly completed: number;
}

async function loadWindow(ctx: RunContext, server: ExposureServer, name: string, seconds: number): Promise<Window> {
  const script = writePlayersScript(ctx.dir, `outage-${name}`, `outage-${name}-`, 0, 0);
  const wrk = await runWrk(server.url, script.path, ctx.opts.connections, seconds, (c: ChildProcess) => void ctx.sup.track(c));
  const sent = readPlayersSent(script);
  if (sent === null) throw new Error(`outage ${name}: wrk wrote no request count`);
  return { name, wrk, ...sent };
}

/** Time from now until the writer has written a row again: its counter, else the table's counts, moves past where they stood. */
async function resumed(server: ExposureServer, table: ExposureTable, writtenBefore: number, timeoutMs: number): Promise<number | null> {
  const t0 = performance.now();
  let tableBefore: number | null = null;
  while (performance.now() - t0 < timeoutMs) {
    const written = (await exposureCounters(server)).written;
    if (written > writtenBefore) return performance.now() - t0;
    if (writtenBefore === 0) {
      // Without the writer's counter: the first total read after the return, then any increase.
      const total = await table
        .counted()
        .then(splitTotal)
        .catch(() => null);
      if (total !== null && tableBefore !== null && total > tableBefore) return performance.now() - t0;
      if (total !== null && tableBefore === null) tableBefore = total;
    }
    await sleep(25);
  }
  return null;
}

export async function runOutage(ctx: RunContext): Promise<PartResult> {
  const pg = await ctx.postgres();
  const db = await createDatabase(pg.url);
  const args = ctx.opts.smoke ? ['--exposure-queue', String(SMOKE_QUEUE)] : [];
  const server = await startExposureServer(ctx.sup, { dir: ctx.dir, bundle: ctx.bundle, label: 'outage', exposures: db.url, args });
  const table = openExposureTable(db.url);
  try {
    ctx.say(`outage: a new player every request, PostgreSQL stopped for ${ctx.opts.outageSec} s between windows of ${ctx.opts.durationSec} s${ctx.opts.smoke ? `, --exposure-queue ${SMOKE_QUEUE}` : ''}`);
    const windows: Window[] = [];
    if (ctx.opts.warmupSec > 0) windows.push(await loadWindow(ctx, server, 'warm-up', ctx.opts.warmupSec));
    const before = await loadWindow(ctx, server, 'before', ctx.opts.durationSec);
    windows.push(before);

    const during = loadWindow(ctx, server, 'during', ctx.opts.outageSec);
    await pg.stop();
    const downAt = performance.now();
    const writtenBefore = (await exposureCounters(server)).written;
    windows.push(await during);
    await sleep(Math.max(0, ctx.opts.outageSec * 1000 - (performance.now() - downAt)));
    const droppedDown = (await exposureCounters(server)).dropped;
    await pg.start();
    const downSec = (performance.now() - downAt) / 1000;
    const [after, resumedMs] = await Promise.all([loadWindow(ctx, server, 'after', ctx.opts.durationSec), resumed(server, table, writtenBefore, 60_000)]);
    windows.push(after);
    const duringWindow = windows.find((w) => w.name === 'during')!;

    const drained = await settle(table, Number.POSITIVE_INFINITY, 3000, 120_000);
    const counters = await exposureCounters(server);
    const rows = splitTotal(await table.rows());
    const perRequest = LAUNCH_EXPERIMENTS.length;
    const answered = windows.reduce((s, w) => s + w.completed, 0);
    const made = windows.reduce((s, w) => s + w.made, 0);

    for (const w of windows) {
      ctx.say(`outage ${w.name.padEnd(7)}: ${fmtCount(w.wrk.reqPerSec)} req/s, p99 ${w.wrk.latencyMs.p99.toFixed(2)} ms, ${w.wrk.non2xx} non-2xx, ${w.wrk.socketErrors} socket errors`);
    }
    const errors = windows.reduce((s, w) => s + w.wrk.non2xx + w.wrk.socketErrors, 0);
    const errorCheck: TargetCheck = {
      what: 'outage: 0 delivery errors',
      measured: `${errors} in ${fmtCount(answered)} answers (database down ${downSec.toFixed(1)} s)`,
      verdict: errors === 0 ? 'pass' : 'FAIL',
    };
    const upP99 = (before.wrk.latencyMs.p99 + after.wrk.latencyMs.p99) / 2;
    const p99Ratio = duringWindow.wrk.latencyMs.p99 / upP99;
    const p99Check: TargetCheck = {
      what: `outage: delivery p99 with the database down <= ${P99_BOUND}x of up`,
      measured: `${figureAgainst(p99Ratio, 2, P99_BOUND, false)}x (down ${duringWindow.wrk.latencyMs.p99.toFixed(2)} ms, up ${before.wrk.latencyMs.p99.toFixed(2)} / ${after.wrk.latencyMs.p99.toFixed(2)} ms)`,
      verdict: speedVerdict(ctx.opts, p99Ratio <= P99_BOUND),
    };
    const accounted = rows + counters.dropped;
    const accountCheck: TargetCheck = {
      what: 'outage: the drop counter says what was lost (rows + dropped = 3 per answered request)',
      measured:
        `${fmtCount(rows)} rows + ${fmtCount(counters.dropped)} dropped (${fmtCount(droppedDown)} of them by the time the database returned) = ${fmtCount(accounted)}; ` +
        `answered ${fmtCount(answered)} requests x ${perRequest} = ${fmtCount(answered * perRequest)}, made ${fmtCount(made * perRequest)}; queued ${fmtCount(counters.queued)}`,
      verdict: accounted >= answered * perRequest && accounted <= made * perRequest ? 'pass' : 'FAIL',
    };
    const resumeCheck: TargetCheck = {
      what: `outage: writing resumes by itself (within ${RESUME_BOUND_MS / 1000} s of the database's return)`,
      measured: resumedMs === null ? 'never (60 s)' : `resumed after ${resumedMs.toFixed(0)} ms; the table settled ${(drained.waitedMs / 1000).toFixed(1)} s after the load`,
      verdict: resumedMs !== null && resumedMs <= RESUME_BOUND_MS ? 'pass' : 'FAIL',
    };
    const checks = [errorCheck, p99Check, accountCheck, resumeCheck];
    for (const c of checks) ctx.say(`verdict: ${c.what}: ${c.measured}  ${c.verdict}`);
    return {
      part: 'outage',
      figures: {
        downSec,
        windows: windows.map((w) => ({ name: w.name, reqPerSec: w.wrk.reqPerSec, p99Ms: w.wrk.latencyMs.p99, errors: w.wrk.non2xx + w.wrk.socketErrors, made: w.made, completed: w.completed })),
        rows,
        counters,
        resumedMs,
      },
      checks,
    };
  } finally {
    await table.close();
    await ctx.sup.stopChild(server.child);
    await db.drop().catch(() => undefined);
  }
}
