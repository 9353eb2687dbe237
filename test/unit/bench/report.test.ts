/**
 * The latency verdict of the suite's report, on results this suite recorded (copied out of
 * bench/results into test/fixtures/bench, so that pruning bench/results leaves them in place; their
 * figures are listed in bench/results/HISTORY.md): which client's figure decides, and when a run
 * cannot judge the target at all.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { BenchResults } from '../../../bench/load/results.js';
import { evaluateTargets } from '../../../bench/load/targets.js';

function recorded(name: string): BenchResults {
  return JSON.parse(readFileSync(new URL(`../../fixtures/bench/${name}`, import.meta.url), 'utf8')) as BenchResults;
}

function latencyCheck(results: BenchResults): { verdict: string; measured: string } {
  const check = evaluateTargets(results).find((c) => c.what === 'mapped: p99 < 5 ms at 100 connections');
  expect(check).toBeDefined();
  return check!;
}

/** A copy of a recorded run with the mapped scenario's autocannon p99s replaced. */
function withAutocannonP99(base: BenchResults, server: number, ceiling: number): BenchResults {
  const copy = structuredClone(base);
  const mapped = copy.scenarios.find((s) => s.name === 'mapped')!;
  (mapped.server.latencyMs as { p99: number }).p99 = server;
  (mapped.ceiling.latencyMs as { p99: number }).p99 = ceiling;
  return copy;
}

describe('the p99 target', () => {
  it('is judged on wrk when the run has a wrk pass, even in a minute when the ceiling stalled', () => {
    const passed = latencyCheck(recorded('2026-11-22-vm-20.json')); // wrk 4.84 ms, ceiling 11.77 ms
    expect(passed.verdict).toBe('pass');
    expect(passed.measured).toContain('4.84 ms, median of 3 rounds');
    const failed = latencyCheck(recorded('2026-11-22-vm-17.json')); // wrk 5.20 ms, ceiling 15.15 ms
    expect(failed.verdict).toBe('FAIL');
  });

  it('is n/a under autocannon alone when the bare ceiling is over 5 ms too, and says how to measure it', () => {
    const run = recorded('2026-11-22-vm-23.json'); // 60 s, no wrk: rcd 6 ms, ceiling 7 ms
    const check = latencyCheck(run);
    expect(check.verdict).toBe('n/a');
    expect(check.measured).toContain('--wrk');
  });

  it('is judged on autocannon when the ceiling stays under 5 ms there', () => {
    const run = recorded('2026-11-22-vm-23.json');
    expect(latencyCheck(withAutocannonP99(run, 6, 3)).verdict).toBe('FAIL');
    expect(latencyCheck(withAutocannonP99(run, 4, 3)).verdict).toBe('pass');
  });
});
