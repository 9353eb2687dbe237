/**
 * Part `fleet`: three nodes, each with its own config store, all recording into one PostgreSQL
 * table; one wrk per node sends the same `--fleet-players` new players in the same order at the same
 * time, so every player reaches all three nodes within moments. The table must hold one row per
 * player and experiment: the database's key decides between the nodes, nothing else.
 */
import type { ChildProcess } from 'node:child_process';
import { runWrk } from '../harness/wrk.js';
import { createDatabase } from '../../test/helpers/postgres.js';
import { exposureCounters, startExposureServer } from './exposure-server.js';
import { openExposureTable, settle } from './exposure-table.js';
import { LAUNCH_EXPERIMENTS } from './launch-fixture.js';
import { exactCheck, expectedSplit, fmtCount } from './exact-check.js';
import type { PartResult, RunContext } from './options.js';
import { readPlayersSent, writePlayersScript } from './players-script.js';

const NODES = 3;

export async function runFleet(ctx: RunContext): Promise<PartResult> {
  const pg = await ctx.postgres();
  const db = await createDatabase(pg.url);
  const nodes = await Promise.all(
    Array.from({ length: NODES }, (_, i) => startExposureServer(ctx.sup, { dir: ctx.dir, bundle: ctx.bundle, label: `fleet node ${i + 1}`, exposures: db.url })),
  );
  const table = openExposureTable(db.url);
  try {
    const m = ctx.opts.fleetPlayers;
    const prefix = 'fleet-';
    const connections = Math.max(1, Math.floor(ctx.opts.connections / NODES));
    const scripts = nodes.map((_, i) => writePlayersScript(ctx.dir, `fleet-${i + 1}`, prefix, m, connections * 100));
    ctx.say(`fleet: ${NODES} nodes on one PostgreSQL table, each sent the same ${fmtCount(m)} new players at ${connections} connections`);
    const t0 = performance.now();
    const track = (c: ChildProcess): void => void ctx.sup.track(c);
    const loads = await Promise.all(nodes.map((node, i) => runWrk(node.url, scripts[i]!.path, connections, Math.max(60, Math.ceil(m / 500)), track)));
    const loadSec = (performance.now() - t0) / 1000;
    const drained = await settle(table, m * LAUNCH_EXPERIMENTS.length, 5000, 120_000);
    const counters = await Promise.all(nodes.map((node) => exposureCounters(node)));
    const problems: string[] = [];
    scripts.forEach((script, i) => {
      const sent = readPlayersSent(script);
      if (sent === null || sent.made < script.stopAt) problems.push(`node ${i + 1}'s wrk stopped before sending every player`);
      const w = loads[i]!;
      if (w.non2xx > 0 || w.socketErrors > 0) problems.push(`node ${i + 1}: ${w.non2xx} non-2xx answers, ${w.socketErrors} socket errors`);
    });
    const dropped = counters.reduce((s, c) => s + c.dropped, 0);
    if (dropped > 0) problems.push(`${fmtCount(dropped)} rows dropped`);
    const check = exactCheck(
      `fleet: the same players on ${NODES} nodes are one row each`,
      await table.rows(),
      await table.counted(),
      await table.moved(),
      expectedSplit(prefix, m, []),
      problems,
    );
    const queued = counters.reduce((s, c) => s + c.queued, 0);
    const written = counters.reduce((s, c) => s + c.written, 0);
    ctx.say(
      `fleet: ${loads.map((w) => fmtCount(w.reqPerSec)).join(' / ')} req/s for ${loadSec.toFixed(1)} s; the nodes queued ${fmtCount(queued)} rows, ` +
        `inserted ${fmtCount(written)} (${counters.map((c) => fmtCount(c.written)).join(' / ')}); table settled ${(drained.waitedMs / 1000).toFixed(1)} s after the load`,
    );
    ctx.say(`verdict: ${check.what}: ${check.measured}  ${check.verdict}`);
    return { part: 'fleet', figures: { players: m, loadSec, reqPerSec: loads.map((w) => w.reqPerSec), queued, written, drainedSec: drained.waitedMs / 1000 }, checks: [check] };
  } finally {
    await table.close();
    await Promise.all(nodes.map((node) => ctx.sup.stopChild(node.child)));
    await db.drop().catch(() => undefined);
  }
}
