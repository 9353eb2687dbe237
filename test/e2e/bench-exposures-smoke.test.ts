// `npm run bench:exposures` is a user-facing tool: this runs its smoke mode end to end, as a
// subprocess, against real servers (SQLite and a throwaway PostgreSQL it stops and starts), and
// checks the correctness lines its targets are judged on: the exact rows of the launch and of the
// fleet, the outage's errors, drop count and resumption. Speed verdicts read n/a in smoke runs.
// The PostgreSQL writer's insert benchmark (bench/exposures/pg-columns.ts) runs once, small.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { wrkAvailable } from '../../bench/harness/wrk.js';
import type { PartResult } from '../../bench/exposures/options.js';
import type { TargetCheck } from '../../bench/load/targets.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const outDir = mkdtempSync(join(tmpdir(), 'rcd-bench-exposures-test-'));

afterAll(() => rmSync(outDir, { recursive: true, force: true }));

/** Runs a built benchmark script of this checkout (`script` under dist/bench/) to its end; rejects after `timeoutMs`. */
function runScript(script: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'dist/bench', script), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      // SIGTERM lets the benchmark stop the servers and PostgreSQL it started.
      child.kill('SIGTERM');
      reject(new Error(`${script} did not finish in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

function runExposures(args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return runScript('exposures/exposures.js', args, timeoutMs);
}

interface ExposuresResults {
  readonly kind: string;
  readonly parts: readonly PartResult[];
  readonly checks: readonly TargetCheck[];
}

describe('npm run bench:exposures -- --smoke', () => {
  it('runs every part against real servers and finds the tables exact', async () => {
    const { code, output } = await runExposures(['--smoke', '--check', '--out', outDir], 280_000);
    if (!wrkAvailable()) {
      expect(code).toBe(2);
      expect(output).toContain('apt-get install wrk');
      return;
    }
    expect(code, output).toBe(0);
    // The launch: 2,000 new players, exactly 2,000 rows in each of the three experiments, the split exact.
    expect(output).toMatch(/^verdict: launch: exactly 2,000 rows per experiment, split as the mod ranges say: 2,000 \/ 2,000 \/ 2,000 rows \(3 experiments\) of 2,000 players; split exact, per-hour counts agree {2}pass$/m);
    // The outage: no delivery error, every row either written or counted as dropped, and writing resumed.
    expect(output).toMatch(/^verdict: outage: 0 delivery errors: 0 in [\d,]+ answers .* {2}pass$/m);
    expect(output).toMatch(/^verdict: outage: the drop counter says what was lost .* {2}pass$/m);
    expect(output).toMatch(/^verdict: outage: writing resumes by itself .*: resumed after \d+ ms.* {2}pass$/m);
    // The fleet: the same 2,000 players on three nodes, one row each.
    expect(output).toMatch(/^verdict: fleet: the same players on 3 nodes are one row each: 2,000 \/ 2,000 \/ 2,000 rows .* {2}pass$/m);
    // Speed is not judged in a smoke run.
    for (const what of ['steady mapped', 'steady dynamic combine', 'launch spike', 'launch: writer lag', 'outage: delivery p99']) {
      expect(output).toMatch(new RegExp(`^verdict: ${what}.* {2}n/a$`, 'm'));
    }
    expect(output).toMatch(/^targets: 5 pass, 0 FAIL, 6 n\/a$/m);

    const file = readdirSync(outDir).find((f) => /-exposures\.json$/.test(f));
    expect(file, output).toBeDefined();
    const r = JSON.parse(readFileSync(join(outDir, file!), 'utf8')) as ExposuresResults;
    expect(r.kind).toBe('exposures');
    expect(r.parts.map((p) => p.part)).toEqual(['steady', 'spike', 'launch', 'outage', 'fleet']);
    const launch = r.parts.find((p) => p.part === 'launch')!.figures as { rows: number; rowsPerExperiment: number[]; counters: { dropped: number } };
    expect(launch.rowsPerExperiment).toEqual([2000, 2000, 2000]);
    expect(launch.rows).toBe(6000);
    expect(launch.counters.dropped).toBe(0);
    // The smoke outage's queue is small enough to overflow: the drop counter must have counted something.
    const outage = r.parts.find((p) => p.part === 'outage')!.figures as { counters: { dropped: number }; resumedMs: number | null };
    expect(outage.counters.dropped).toBeGreaterThan(0);
    expect(outage.resumedMs).not.toBeNull();
    // The spike's floor: SQLite's own cost of 2,000 new players' rows, set against the rounds.
    expect(output).toMatch(/^spike floor: SQLite alone \(no rcd: 6,000 rows .* costs [\d.]+ µs a row; .* the on\/off CPU cannot go below [\d.]+ here$/m);
    const floor = (r.parts.find((p) => p.part === 'spike')!.figures as { sqliteFloor: { rows: number; usPerRow: number; ratio: number } }).sqliteFloor;
    expect(floor.rows).toBe(6000);
    expect(floor.usPerRow).toBeGreaterThan(0);
    expect(floor.ratio).toBeGreaterThan(1);
  }, 300_000);

  it('with --exposure-db postgres, the spike records into PostgreSQL and reports the database\'s own CPU beside rcd\'s', async () => {
    const out = mkdtempSync(join(tmpdir(), 'rcd-bench-exposures-pg-'));
    try {
      const { code, output } = await runExposures(['--smoke', '--parts', 'spike', '--exposure-db', 'postgres', '--check', '--out', out], 120_000);
      if (!wrkAvailable()) {
        expect(code).toBe(2);
        return;
      }
      expect(code, output).toBe(0);
      expect(output).toMatch(/^spike: exposures off \(pid \d+\) and on \(pid \d+, PostgreSQL on this machine, postmaster pid \d+\)/m);
      expect(output).toMatch(/^spike round 1: .*, the database [\d.]+ µs\/req \(on\/off CPU with it [\d.]+\)$/m);
      expect(output).toMatch(/^verdict: launch spike .*; with the exposure PostgreSQL's own CPU on this machine [\d.]+ {2}n\/a$/m);
      const file = readdirSync(out).find((f) => /-exposures\.json$/.test(f));
      const r = JSON.parse(readFileSync(join(out, file!), 'utf8')) as ExposuresResults;
      const spike = r.parts.find((p) => p.part === 'spike')!.figures as { withDbCpuRatio: number; rowsPerRequest: number; rounds: { dbUsPerReq: number }[] };
      // Three rows a request went to PostgreSQL, whose backends spent CPU on them.
      expect(spike.rowsPerRequest).toBeGreaterThan(2.5);
      expect(spike.rounds[0]!.dbUsPerReq).toBeGreaterThan(0);
      expect(spike.withDbCpuRatio).toBeGreaterThan(0);
      // The floor is SQLite's: a run on PostgreSQL measures the database's CPU instead.
      expect(output).not.toMatch(/^spike floor:/m);
      expect((spike as { sqliteFloor?: unknown }).sqliteFloor).toBeUndefined();
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 150_000);

  it('refuses bad options with exit code 2', async () => {
    const bad = await runExposures(['--parts', 'nothing'], 30_000);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('--parts');
    const players = await runExposures(['--players', '0'], 30_000);
    expect(players.code).toBe(2);
    expect(players.output).toContain('--players');
    const db = await runExposures(['--exposure-db', 'mysql'], 30_000);
    expect(db.code).toBe(2);
    expect(db.output).toContain('--exposure-db');
    const notBuilt = await runExposures(['--parts', 'spike', '--baseline', outDir], 30_000);
    expect(notBuilt.code).toBe(2);
    expect(notBuilt.output).toContain('is not a built rcd checkout');
    const launch = await runExposures(['--parts', 'spike,launch', '--baseline', root], 30_000);
    expect(launch.code).toBe(2);
    expect(launch.output).toContain('--baseline compares the side-by-side parts only');
  });

  it('with --baseline, loads the baseline checkout and this one, both recording, and compares them without a verdict', async () => {
    const out = mkdtempSync(join(tmpdir(), 'rcd-bench-exposures-base-'));
    try {
      // This checkout as its own baseline: the rig's noise.
      const { code, output } = await runExposures(['--smoke', '--parts', 'spike', '--baseline', root, '--check', '--out', out], 120_000);
      if (!wrkAvailable()) {
        expect(code).toBe(2);
        return;
      }
      expect(code, output).toBe(0);
      expect(output).toMatch(/^spike: the baseline .* \(pid \d+, sqlite:.*baseline-exposures\.db\) and this checkout \(pid \d+, sqlite:.*\), both recording exposures/m);
      expect(output).toMatch(/^spike round 1: base \d+ req\/s [\d.]+ µs\/req, this \d+ req\/s [\d.]+ µs\/req; this\/base CPU [\d.]+, req\/s [\d.]+$/m);
      expect(output).toMatch(/^verdict: launch spike .*: CPU\/request this\/base: [\d.]+ \(rounds [\d.]+-[\d.]+\) {2}n\/a$/m);
      expect(output).toMatch(/^verdict: launch spike: req\/s this\/base: [\d.]+ {2}n\/a$/m);
      // The floor is set against exposures-off requests, which a comparison has none of.
      expect(output).not.toMatch(/^spike floor:/m);
      expect(output).toMatch(/^targets: 0 pass, 0 FAIL, 2 n\/a$/m);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 150_000);
});

describe('node dist/bench/exposures/pg-columns.js', () => {
  it('inserts the same rows both ways into a real PostgreSQL and prints each one\'s CPU a row', async () => {
    const { code, output } = await runScript('exposures/pg-columns.js', ['--players', '500', '--rounds', '1'], 60_000);
    expect(code, output).toBe(0);
    expect(output).toMatch(/^round 1: the driver's arrays \(reference\): [\d.]+ µs a row$/m);
    expect(output).toMatch(/^round 1: pg-columns\.ts literals \(the writer\): [\d.]+ µs a row$/m);
    expect(output).toMatch(/^median of 1 round\(s\), 1,500 rows each: the driver's arrays [\d.]+ µs a row, the literals [\d.]+ µs a row \([\d.]+x\)$/m);
  }, 90_000);
});
