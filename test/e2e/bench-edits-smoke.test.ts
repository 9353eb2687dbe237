// `npm run bench:edits` is a user-facing tool: this runs its smoke mode end to end, as a subprocess,
// against two real server processes on one SQLite file, and checks that the report carries every
// figure the targets are judged on. It asserts the report's shape and consistency, not speed.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { EditsResults, LoopDelaySummary, PhaseResult } from '../../bench/edits/edits-report.js';
import { wrkAvailable } from '../../bench/harness/wrk.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const outDir = mkdtempSync(join(tmpdir(), 'rcd-bench-edits-test-'));

afterAll(() => rmSync(outDir, { recursive: true, force: true }));

function runEdits(args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'dist/bench/edits/edits.js'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => {
      // SIGTERM lets the benchmark stop the servers it started.
      child.kill('SIGTERM');
      reject(new Error(`bench:edits did not finish in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

function expectLoopDelay(d: LoopDelaySummary, what: string): void {
  expect(d.intervals, what).toBeGreaterThan(0);
  expect(d.maxMs, what).not.toBeNull();
  expect(d.maxMs!, what).toBeGreaterThanOrEqual(0);
  expect(d.worstP99Ms!, what).toBeLessThanOrEqual(d.maxMs!);
  expect(d.intervalsOverLimit, what).toBeLessThanOrEqual(d.intervals);
  expect(d.overLimitByGc, what).toBeLessThanOrEqual(d.intervalsOverLimit);
  // Linux: every line carries the loop's run-queue wait, summed over the window.
  expect(d.waitMs, what).not.toBeNull();
  expect(d.waitMs!, what).toBeGreaterThanOrEqual(0);
  // ... and the longest pause's split, so each unexplained interval is of exactly one kind.
  expect(d.overLimitOffCpu, what).not.toBeNull();
  expect(d.overLimitByWait + d.overLimitOffCpu! + d.overLimitOwnWork!, what).toBe(d.intervalsOverLimit - d.overLimitByGc - (d.overLimitByHost ?? 0));
  expect(d.applyMaxMs, what).not.toBeNull();
  expect(d.gcMaxMs, what).not.toBeNull();
}

function expectLoad(p: PhaseResult, what: string): void {
  expect(p.wrk.reqPerSec, what).toBeGreaterThan(0);
  expect(p.wrk.non2xx, what).toBe(0);
  expect(p.wrk.socketErrors, what).toBe(0);
  expect(p.wrk.latencyMs.p99, what).toBeGreaterThanOrEqual(p.wrk.latencyMs.p50);
  expect(p.wrk.latencyMs.max, what).toBeGreaterThanOrEqual(p.wrk.latencyMs.p99);
  expect(p.machineStalls.stalls, what).toBeGreaterThanOrEqual(0);
  // Linux with util-linux: one probe pinned to each CPU, every stall listed with its CPU.
  expect(p.machineStalls.perCpu, what).toBe(true);
  expect(p.machineStalls.events, what).toHaveLength(p.machineStalls.stalls);
  for (const e of p.machineStalls.events) expect(e.cpu, what).not.toBeNull();
  // And every wake-up late by 1 ms or more (short stops of a CPU add up over a pause), the stalls among them.
  const lates = p.machineStalls.lates ?? [];
  expect(p.machineStalls.lates, what).toBeDefined();
  expect(lates.length, what).toBeGreaterThanOrEqual(p.machineStalls.stalls);
  for (const e of lates) expect(e.lateMs, what).toBeGreaterThanOrEqual(1);
}

function expectPhase(p: PhaseResult, what: string): void {
  expectLoad(p, what);
  expectLoopDelay(p.loopDelay, what);
}

describe('npm run bench:edits -- --smoke', () => {
  it('runs every phase against two real servers on one store and reports every figure', async () => {
    const { code, output } = await runEdits(['--smoke', '--out', outDir], 240_000);
    if (!wrkAvailable()) {
      expect(code).toBe(2);
      expect(output).toContain('apt-get install wrk');
      return;
    }
    expect(code, output).toBe(0);
    const files = readdirSync(outDir);
    const json = files.find((f) => /-edits\.json$/.test(f));
    expect(json, output).toBeDefined();
    expect(files).toContain(json!.replace(/\.json$/, '.md'));
    const r = JSON.parse(readFileSync(join(outDir, json!), 'utf8')) as EditsResults;
    expect(r.kind).toBe('edits');
    expect(r.ok).toBe(true);
    expect(r.problems).toEqual([]);
    expect(r.options).toMatchObject({ items: 500, durationSec: 2, rounds: 2, writeEveryMs: 100, connections: 10, smoke: true });
    for (const p of [r.processA, r.processB]) {
      expect(p.startupMs).toBeGreaterThan(0);
      expect(p.rssAfterStartBytes).toBeGreaterThan(0);
      expect(p.rssEndBytes).toBeGreaterThan(0);
    }
    // A's RSS once start-up garbage is collected, and its start-up peak; the wait is bounded.
    expect(r.processA.rssSettledBytes).toBeGreaterThan(0);
    expect(r.processA.rssPeakBytes!).toBeGreaterThanOrEqual(r.processA.rssSettledBytes!);
    expect(r.processA.settleSec!).toBeLessThanOrEqual(3.5);
    expect(r.processB.rssSettledBytes).toBeNull();
    // Latency phases run without the loop-delay log; the pause phases with it.
    expectLoad(r.withoutWrites, 'without writes');
    expectLoad(r.withWrites, 'with writes');
    // Phases 1-2 alternate in rounds (1 s each way in smoke mode); each phase's figures are the median of its rounds'.
    expect(r.withoutWrites.rounds).toHaveLength(2);
    expect(r.withWrites.rounds).toHaveLength(2);
    const p99s = r.withWrites.rounds.map((w) => w.latencyMs.p99);
    expect(r.withWrites.wrk.latencyMs.p99).toBeCloseTo((p99s[0]! + p99s[1]!) / 2, 6);
    expect(r.withWrites.wrk.non2xx).toBe(r.withWrites.rounds.reduce((n, w) => n + w.non2xx, 0));
    expect(r.withoutWrites.loopDelay.intervals).toBe(0);
    expect(r.withWrites.loopDelay.intervals).toBe(0);
    expectPhase(r.diagnosedQuiet, 'without writes, log on');
    expect(r.diagnosedQuiet.loopDelay.applies).toBe(0);
    expectPhase(r.diagnosedWrites, 'with writes, log on');
    expectPhase(r.underImport, 'import');

    const w = r.withWrites.writes;
    // The writes of both rounds together: 1 s at one every 100 ms, twice.
    expect(w.scheduled).toBe(20);
    expect(w.sent).toBeGreaterThan(0);
    expect(w.sent).toBeLessThanOrEqual(w.scheduled);
    expect(w.failed).toBe(0);
    expect(r.diagnosedWrites.writes.sent).toBeGreaterThan(0);
    expect(r.diagnosedWrites.writes.failed).toBe(0);
    // Every write of the logged phase reached A's delivery loop as an applied update.
    expect(r.diagnosedWrites.loopDelay.applies).toBeGreaterThanOrEqual(1);
    expect(w.adminMs!.p50).toBeGreaterThan(0);
    expect(w.adminMs!.max).toBeGreaterThanOrEqual(w.adminMs!.p99);
    // Every answered write is accounted for on the second process, visible or given up on.
    expect(w.visible + w.notVisible).toBe(w.sent);
    expect(w.visibleAtAnswer).toBeLessThanOrEqual(w.visible);
    expect(w.visibleWaitMs).toBe(2000);
    if (w.notVisible === 0) {
      expect(w.visibleMs.p99!).toBeGreaterThanOrEqual(w.visibleMs.p50!);
      expect(w.visibleMs.max!).toBeGreaterThanOrEqual(w.visibleMs.p99!);
    } else {
      // The slowest write was never seen: the maximum says "not visible" rather than a number.
      expect(w.visibleMs.max).toBeNull();
    }

    const imp = r.underImport.import;
    expect(imp.status).toBe(200);
    expect(imp.bytes).toBeGreaterThan(0.9 * 1048576);
    expect(imp.items).toBeGreaterThan(0);
    expect(imp.adminMs).toBeGreaterThan(0);
    expectLoopDelay(imp.loopDelay, 'during the import');

    // Every target of the issue is printed with a verdict; size-bound ones are n/a on 500 items.
    expect(r.targets).toHaveLength(7);
    for (const t of r.targets) expect(['pass', 'FAIL', 'n/a']).toContain(t.verdict);
    for (const t of r.targets.filter((x) => /^(50|100),000 items/.test(x.what))) expect(t.verdict, t.what).toBe('n/a');
    expect(output).toMatch(/^without writes \(median of 2\) +[\d.]+ +[\d,]+ /m);
    expect(output).toMatch(/^edit-to-visible on B/m);
    expect(output).toContain('targets:');
  }, 300_000);

  it('refuses bad options with exit code 2', async () => {
    const bad = await runEdits(['--write-every', '0'], 30_000);
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('--write-every');
    const noRounds = await runEdits(['--rounds', '0'], 30_000);
    expect(noRounds.code).toBe(2);
    expect(noRounds.output).toContain('--rounds');
    const unknown = await runEdits(['--no-such-option'], 30_000);
    expect(unknown.code).toBe(2);
  });
});
