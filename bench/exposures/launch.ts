/**
 * Part `launch`: `--players` distinct players, each new, at saturation (wrk, players-script.ts, N
 * players then repeats until it stops itself) on one server recording into SQLite, with the lag probe
 * beside the load (lag-probe.ts; its players are among the N). At the end, once the writer caught up:
 * the table must hold exactly N rows per experiment, each variant exactly as many players as the
 * players sent whose XXH32(u) % 1000 falls in its range (launch-fixture.ts), the per-hour counts the
 * same, no player moved and nothing dropped. Reports the writer lag and the server's RSS.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { memoryStatus, RssSampler } from '../harness/measure.js';
import { runWrk } from '../harness/wrk.js';
import { figureAgainst, type TargetCheck } from '../load/targets.js';
import { exposureCounters, startExposureServer } from './exposure-server.js';
import { openExposureTable, settle, splitTotal } from './exposure-table.js';
import { LagProbe, percentile } from './lag-probe.js';
import { exactCheck, expectedSplit, fmtCount } from './exact-check.js';
import { LAUNCH_EXPERIMENTS, rowsPerExperiment } from './launch-fixture.js';
import { speedVerdict, type PartResult, type RunContext } from './options.js';
import { readPlayersSent, writePlayersScript } from './players-script.js';

const LAG_BOUND_MS = 2000;
const MIB = 1048576;

export async function runLaunch(ctx: RunContext): Promise<PartResult> {
  const n = ctx.opts.players;
  const sampleCount = Math.min(n - 1, Math.max(ctx.opts.smoke ? 20 : 50, Math.floor(n / 500)));
  const wrkPlayers = n - sampleCount;
  const exposures = `sqlite:${join(ctx.dir, 'launch-exposures.db')}`;
  const server = await startExposureServer(ctx.sup, { dir: ctx.dir, bundle: ctx.bundle, label: 'launch', exposures });
  const table = openExposureTable(exposures);
  try {
    const prefix = 'launch-';
    const margin = ctx.opts.connections * 100;
    const script = writePlayersScript(ctx.dir, 'launch', prefix, wrkPlayers, margin);
    // One sample per 40 ms: 1,000,000 players at 12,500 a second or faster are sampled to their end.
    const probe = new LagProbe(server.url, table, `${prefix}s`, sampleCount, ctx.opts.smoke ? 5 : 40);
    ctx.say(`launch: ${fmtCount(n)} new players (${fmtCount(wrkPlayers)} through wrk at ${ctx.opts.connections} connections, ${sampleCount} timed samples), ${exposures}`);
    const rssStart = memoryStatus(server.pid).rss;
    const rss = new RssSampler(server.pid, 250);
    const t0 = performance.now();
    probe.start();
    const track = (c: ChildProcess): void => void ctx.sup.track(c);
    const wrk = await runWrk(server.url, script.path, ctx.opts.connections, Math.max(60, Math.ceil(n / 1000)), track);
    const loadSec = (performance.now() - t0) / 1000;
    probe.loadEnded();
    const lag = await probe.finish(30_000);
    const sent = readPlayersSent(script);
    const drained = await settle(table, n * LAUNCH_EXPERIMENTS.length, 10_000, 300_000);
    const rssSamples = rss.stop();
    const rssPeak = Math.max(...rssSamples.map((s) => s[1]));
    const rssEnd = memoryStatus(server.pid).rss;
    const counters = await exposureCounters(server);
    const got = await table.rows();
    const counted = await table.counted();
    const moved = await table.moved();

    const problems: string[] = [];
    if (sent === null || sent.made < script.stopAt) problems.push(`wrk stopped before sending every player (${sent === null ? 'no count' : `${fmtCount(sent.made)} of ${fmtCount(script.stopAt)} requests`})`);
    if (wrk.non2xx > 0 || wrk.socketErrors > 0) problems.push(`${wrk.non2xx} non-2xx answers, ${wrk.socketErrors} socket errors`);
    if (lag.failed > 0) problems.push(`${lag.failed} sample requests failed`);
    if (counters.dropped > 0) problems.push(`${fmtCount(counters.dropped)} rows dropped (writer queue full)`);
    const want = expectedSplit(prefix, wrkPlayers, probe.players());
    const exact = exactCheck(`launch: exactly ${fmtCount(n)} rows per experiment, split as the mod ranges say`, got, counted, moved, want, problems);

    const lagP99 = percentile(lag.underLoadMs, 99);
    const lagLine = (l: readonly number[]): string =>
      l.length === 0 ? 'none' : `p50 ${percentile(l, 50)!.toFixed(0)} ms, p99 ${percentile(l, 99)!.toFixed(0)} ms, max ${l[l.length - 1]!.toFixed(0)} ms (${l.length} samples)`;
    const lagCheck: TargetCheck = {
      what: `launch: writer lag p99 < ${LAG_BOUND_MS / 1000} s (first request to its rows queryable)`,
      measured:
        lagP99 === null
          ? `no sample sent under load${lag.missing > 0 ? `, ${lag.missing} never seen` : ''}`
          : `${figureAgainst(lagP99, 0, LAG_BOUND_MS, false)} ms under load (${lagLine(lag.underLoadMs)}); after the load ${lagLine(lag.afterLoadMs)}${lag.missing > 0 ? `; ${lag.missing} never seen` : ''}`,
      verdict: lagP99 === null || lag.missing > 0 ? (ctx.opts.smoke ? 'n/a' : 'FAIL') : speedVerdict(ctx.opts, lagP99 < LAG_BOUND_MS),
    };
    ctx.say(
      `launch: wrk ${fmtCount(wrk.reqPerSec)} req/s for ${loadSec.toFixed(1)} s (p99 ${wrk.latencyMs.p99.toFixed(1)} ms), ` +
        `table complete ${(drained.waitedMs / 1000).toFixed(1)} s after the load (${fmtCount(drained.total)} of ${fmtCount(n * LAUNCH_EXPERIMENTS.length)} rows counted)`,
    );
    ctx.say(
      `launch: server RSS ${(rssStart / MIB).toFixed(1)} MiB before, peak ${(rssPeak / MIB).toFixed(1)} MiB, ${(rssEnd / MIB).toFixed(1)} MiB at the end; ` +
        `rows queued ${fmtCount(counters.queued)}, written ${fmtCount(counters.written)}, dropped ${fmtCount(counters.dropped)}, write failures ${fmtCount(counters.writeFailures)}`,
    );
    for (const c of [exact, lagCheck]) ctx.say(`verdict: ${c.what}: ${c.measured}  ${c.verdict}`);
    return {
      part: 'launch',
      figures: {
        players: n,
        samples: sampleCount,
        reqPerSec: wrk.reqPerSec,
        loadSec,
        p99Ms: wrk.latencyMs.p99,
        drainedSec: drained.waitedMs / 1000,
        rowsPerExperiment: rowsPerExperiment(got),
        rows: splitTotal(got),
        lagMs: { p50: percentile(lag.underLoadMs, 50), p99: lagP99, max: lag.underLoadMs[lag.underLoadMs.length - 1] ?? null, samples: lag.underLoadMs.length, missing: lag.missing },
        rssMiB: { start: rssStart / MIB, peak: rssPeak / MIB, end: rssEnd / MIB },
        counters,
      },
      checks: [exact, lagCheck],
    };
  } finally {
    await table.close();
    await ctx.sup.stopChild(server.child);
  }
}
