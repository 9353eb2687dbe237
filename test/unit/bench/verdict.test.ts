/**
 * The verdict table and `--check` (bench/load/targets.ts, bench/load/verdict.ts), and bench:compare's
 * --history, run as the user runs them (the compiled CLIs) on results files crafted from a recorded
 * run: targets judged on the wrk saturation ratio, exit 1 on any FAIL only with --check.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchResults } from '../../../bench/load/results.js';
import { evaluateTargets, figureAgainst } from '../../../bench/load/targets.js';
import type { WrkStats } from '../../../bench/harness/wrk.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'rcd-bench-verdict-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function recorded(name: string): BenchResults {
  return JSON.parse(readFileSync(new URL(`../../fixtures/bench/${name}`, import.meta.url), 'utf8')) as BenchResults;
}

/** Only the mapped scenario of a recorded wrk run, its wrk server figures replaced. */
function mappedOnly(serverReqPerSec: number, serverP99: number): BenchResults {
  const run = structuredClone(recorded('2026-11-22-vm-20.json'));
  const mapped = run.scenarios.find((s) => s.name === 'mapped')!;
  const server = mapped.wrk!.server as { reqPerSec: number; latencyMs: WrkStats['latencyMs'] };
  server.reqPerSec = serverReqPerSec;
  (server.latencyMs as { p99: number }).p99 = serverP99;
  (mapped as { cpuEfficiency: number }).cpuEfficiency = 0.7;
  return { ...run, scenarios: [mapped] };
}

function write(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

function cli(script: string, args: string[], env: NodeJS.ProcessEnv = process.env): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, [join(root, 'dist/bench/load', script), ...args], { cwd: root, encoding: 'utf8', timeout: 30_000, env });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('targets', () => {
  it('judge throughput on the wrk saturation ratio, not on autocannon', () => {
    const run = recorded('2026-11-22-vm-20.json');
    const mapped = run.scenarios.find((s) => s.name === 'mapped')!;
    const check = evaluateTargets(run).find((c) => c.what === 'mapped: saturation ratio (wrk) >= 0.70')!;
    const ratio = mapped.wrk!.server.reqPerSec / mapped.wrk!.ceiling.reqPerSec;
    expect(check.verdict).toBe(ratio >= 0.7 ? 'pass' : 'FAIL');
    expect(check.measured.startsWith(ratio.toFixed(2))).toBe(true);
    // A run without wrk cannot judge them: n/a, with the way to measure.
    const noWrk = evaluateTargets(recorded('2026-11-22-vm-23.json')).find((c) => c.what === 'mapped: saturation ratio (wrk) >= 0.70')!;
    expect(noWrk.verdict).toBe('n/a');
    expect(noWrk.measured).toContain('--wrk');
  });

  it('cover every scenario with an issue target', () => {
    const whats = evaluateTargets(recorded('2026-11-22-vm-20.json')).map((c) => c.what);
    for (const [name, min] of [['mapped', '0.70'], ['mapped-serialized', '0.70'], ['combine', '0.60'], ['wrapped', '0.85'], ['plain', '0.85'], ['catalog', '0.90']]) {
      expect(whats).toContain(`${name}: saturation ratio (wrk) >= ${min}`);
      expect(whats).toContain(`${name}: p99 < 5 ms at 100 connections`);
    }
    expect(whats).toContain('large-miss: a miss costs < 10x a hit (server CPU per request)');
  });
});

describe('npm run bench:verdict', () => {
  const ceiling = recorded('2026-11-22-vm-20.json').scenarios.find((s) => s.name === 'mapped')!.wrk!.ceiling.reqPerSec;

  it('prints the verdict table; --check exits 0 when nothing FAILed', () => {
    const file = write('pass.json', mappedOnly(ceiling * 0.75, 3.1));
    const { code, out } = cli('verdict.js', [file, '--check']);
    expect(code, out).toBe(0);
    expect(out).toMatch(/^mapped: saturation ratio \(wrk\) >= 0\.70 +0\.75 \(server [\d,]+ req\/s, ceiling [\d,]+ req\/s\) +pass$/m);
    expect(out).toMatch(/^mapped: p99 < 5 ms at 100 connections +3\.10 ms, .* +pass$/m);
    expect(out).toMatch(/^targets: \d+ pass, 0 FAIL, \d+ n\/a$/m);
  });

  it('--check exits 1 when a target FAILed; without --check the same file exits 0', () => {
    const file = write('fail.json', mappedOnly(ceiling * 0.44, 3.1));
    const checked = cli('verdict.js', [file, '--check']);
    expect(checked.code, checked.out).toBe(1);
    expect(checked.out).toMatch(/^mapped: saturation ratio \(wrk\) >= 0\.70 +0\.44 .* +FAIL$/m);
    expect(checked.out).toMatch(/^targets: \d+ pass, 1 FAIL, \d+ n\/a$/m);
    expect(cli('verdict.js', [file]).code).toBe(0);
    const slow = cli('verdict.js', [write('slow.json', mappedOnly(ceiling * 0.75, 5.2)), '--check']);
    expect(slow.code, slow.out).toBe(1);
    expect(slow.out).toMatch(/^mapped: p99 < 5 ms at 100 connections +5\.20 ms, .* +FAIL$/m);
  });

  it('refuses a file that is not a suite run with exit code 2', () => {
    expect(cli('verdict.js', [write('edits.json', { version: 1, kind: 'edits', date: 'x', scenarios: [] }), '--check']).code).toBe(2);
    expect(cli('verdict.js', [write('broken.json', '{'), '--check']).code).toBe(2);
    expect(cli('verdict.js', []).code).toBe(2);
  });
});

describe('npm run bench:compare -- --history', () => {
  it('prints a scenario over the suite runs of a directory, oldest first, and draws them', () => {
    const hist = mkdtempSync(join(dir, 'history-'));
    for (const f of ['2026-11-22-vm-20.json', '2026-11-22-vm-17.json', '2026-11-22-vm-23.json']) writeFileSync(join(hist, f), JSON.stringify(recorded(f)));
    writeFileSync(join(hist, 'edits.json'), JSON.stringify({ version: 1, kind: 'edits', date: '2026-11-22', scenarios: [] }));
    const { code, out } = cli('compare.js', ['--history', 'mapped', '--dir', hist]);
    expect(code, out).toBe(0);
    const rows = [...out.matchAll(/^(2026-11-22-vm-\d+) /gm)].map((m) => m[1]);
    expect(rows).toEqual(['2026-11-22-vm-17', '2026-11-22-vm-20', '2026-11-22-vm-23']);
    const svg = join(hist, 'history-mapped.svg');
    expect(existsSync(svg)).toBe(true);
    expect(readFileSync(svg, 'utf8')).toMatch(/^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(cli('compare.js', ['--history', 'no-such-scenario', '--dir', hist]).code).toBe(2);
  });

  it('reads the kept baselines and the local results directory together by default, and draws into the local one', () => {
    const local = mkdtempSync(join(dir, 'local-'));
    writeFileSync(join(local, '2026-11-22-vm-20.json'), JSON.stringify(recorded('2026-11-22-vm-20.json')));
    const { code, out } = cli('compare.js', ['--history', 'mapped'], { ...process.env, RCD_BENCH_RESULTS: local });
    expect(code, out).toBe(0);
    const rows = [...out.matchAll(/^(2026-11-22-vm-\d+) /gm)].map((m) => m[1]);
    expect(rows).toEqual(['2026-11-22-vm-20', '2026-11-22-vm-24']);
    expect(existsSync(join(local, 'history-mapped.svg'))).toBe(true);
  });
});

describe('the kept baselines', () => {
  it('are read by bench:verdict as suite runs', () => {
    const { code, out } = cli('verdict.js', [join(root, 'bench/results/2026-11-22-vm-24.json')]);
    expect(code, out).toBe(0);
    expect(out).toMatch(/^targets: \d+ pass, \d+ FAIL, \d+ n\/a$/m);
  });
});

describe('a figure beside its bound reads as its verdict', () => {
  it('is rounded as usual, and moved one step away from the bound where rounding would cross it', () => {
    // A minimum: 0.8996 fails ">= 0.90" and must not read 0.900.
    expect(figureAgainst(0.8996, 3, 0.9, true)).toBe('0.899');
    expect(figureAgainst(0.9, 3, 0.9, true)).toBe('0.900');
    expect(figureAgainst(0.9004, 3, 0.9, true)).toBe('0.900');
    expect(figureAgainst(0.9126, 3, 0.9, true)).toBe('0.913');
    expect(figureAgainst(0.6951, 2, 0.7, true)).toBe('0.69');
    expect(figureAgainst(0.7049, 2, 0.7, true)).toBe('0.70');
    // A maximum: 1.1049 is over "<= 1.10" and must not read 1.10.
    expect(figureAgainst(1.1049, 2, 1.1, false)).toBe('1.11');
    expect(figureAgainst(1.1, 2, 1.1, false)).toBe('1.10');
    expect(figureAgainst(1.0951, 2, 1.1, false)).toBe('1.10');
    // Every figure shown agrees with the verdict on the unrounded value.
    for (let i = 0; i < 2000; i++) {
      const v = 0.85 + i * 0.0000501;
      const shown = Number(figureAgainst(v, 3, 0.9, true));
      expect(shown >= 0.9, `${v} shown ${shown}`).toBe(v >= 0.9);
      const up = Number(figureAgainst(v, 2, 0.9, false));
      expect(up <= 0.9, `${v} shown ${up} against a maximum`).toBe(v <= 0.9);
    }
  });
});
