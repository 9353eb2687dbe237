import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { medianOfRuns, mergeStallStats, parseWrkOutput, writeWrkScript, type WrkStats } from '../../../bench/harness/wrk.js';
import { stallStats } from '../../helpers/stall-stats.js';

const PROBE = join(dirname(fileURLToPath(import.meta.url)), '../../../dist/bench/harness/stall-probe.js');

function run(p99: number, non2xx = 0): WrkStats {
  return { reqPerSec: 1000 * p99, latencyMs: { p50: 1, p90: 2, p99, p999: 2 * p99, max: 3 * p99 }, non2xx, socketErrors: 0 };
}

const REPORT = `Running 10s test @ http://127.0.0.1:19080
  1 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.70ms    1.25ms  42.30ms   97.64%
    Req/Sec    60.66k     3.10k   66.45k    75.00%
  Latency Distribution
     50%  830.00us
     75%    1.90ms
     90%    2.24ms
     99%    1.02s
  603535 requests in 10.00s, 1.00GB read
  Non-2xx or 3xx responses: 12
  Socket errors: connect 0, read 1, write 0, timeout 2
Requests/sec:  60353.07
Transfer/sec:    102.06MB
rcd-latency-us p50=830 p90=2240 p99=1020000 p999=1500123 max=1700000
`;

describe('bench --wrk: reading wrk', () => {
  it("parses rate, the script's percentiles (microseconds), non-2xx answers and socket errors", () => {
    expect(parseWrkOutput(REPORT)).toEqual({
      reqPerSec: 60353.07,
      latencyMs: { p50: 0.83, p90: 2.24, p99: 1020, p999: 1500.123, max: 1700 },
      non2xx: 12,
      socketErrors: 3,
    });
  });

  it('counts zero when wrk prints no error lines, and refuses a report without percentiles', () => {
    const clean = REPORT.replace(/ {2}Non-2xx.*\n/, '').replace(/ {2}Socket errors.*\n/, '');
    expect(parseWrkOutput(clean).non2xx).toBe(0);
    expect(parseWrkOutput(clean).socketErrors).toBe(0);
    expect(() => parseWrkOutput(REPORT.replace(/^rcd-latency-us.*\n/m, ''))).toThrow(/rcd-latency-us/);
    expect(() => parseWrkOutput(REPORT.replace(/^Requests\/sec.*\n/m, ''))).toThrow(/Requests\/sec/);
  });

  it('writes a Lua script that reproduces every request byte for byte', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcd-wrk-test-'));
    try {
      const body = '{"u":"é \\"q\\" \\\\ 日本","p":{},"v":"1.0.0"}';
      const path = writeWrkScript(dir, 't', [
        { method: 'POST', path: '/api/v1/config/A/dynamic?x=1', headers: { 'X-Api-Key': 'k"1', 'Content-Type': 'application/json' }, body, ctx: { u: '', p: {}, v: '', expectStatus: 200, expectCode: '' } },
        { method: 'GET', path: '/api/v1/env/catalog', headers: { 'X-Api-Key': 'k' }, body: undefined, ctx: { u: '', p: {}, v: '', expectStatus: 200, expectCode: '' } },
      ]);
      const script = readFileSync(path, 'utf8');
      expect(script).toMatch(/^[\x20-\x7e\n]*$/); // plain ASCII: everything else is a decimal escape
      // Lua itself (when installed) reads the strings back to the original bytes.
      const lua = spawnSync('lua', ['-e', `${script}\nio.write(entries[1][4], "|", entries[1][3]["X-Api-Key"], "|", tostring(entries[2][4]))`], { encoding: 'utf8' });
      if (lua.error === undefined) expect(lua.stdout).toBe(`${body}|k"1|nil`);
      else expect(script).toContain('\\195\\169'); // é as its two UTF-8 bytes
      // Escapes have three digits: "\\34" followed by the digit of "1.0.0" would read as byte 341.
      expect(script).toContain('\\0341.0.0\\034');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports the median round figure by figure, so one disturbed round cannot set the p99; errors are summed', () => {
    const m = medianOfRuns([run(4.1), run(78, 2), run(3.9)]);
    expect(m.latencyMs.p99).toBe(4.1);
    expect(m.latencyMs.p999).toBe(8.2);
    expect(m.reqPerSec).toBe(4100);
    expect(m.non2xx).toBe(2);
    expect(medianOfRuns([run(4), run(6)]).latencyMs.p99).toBe(5);
    expect(() => medianOfRuns([])).toThrow();
  });
});

describe('bench:edits: the stalls of the rounds of one condition', () => {
  it('adds the counts, keeps the longest and every event in time order, and sees the host only if every round did', () => {
    const merged = mergeStallStats([stallStats([[500, 6, 0], [900, 12, 1]]), stallStats([[100, 7, 1]])]);
    expect(merged).toMatchObject({ realtime: true, perCpu: true, stalls: 3, maxStallMs: 12, stalledMs: 25 });
    expect(merged.events.map((e) => e.endedAt)).toEqual([100, 500, 900]);
    expect(mergeStallStats([stallStats([]), stallStats([], true, false)]).perCpu).toBe(false);
    expect(mergeStallStats([stallStats([])])).toMatchObject({ stalls: 0, maxStallMs: 0, events: [] });
  });
});

describe('bench --wrk: the machine-stall probe', () => {
  it('counts a stop of its process as a stall of about that length', async () => {
    const child = spawn(process.execPath, [PROBE, '1.5', '5'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    await new Promise((r) => setTimeout(r, 500));
    // SIGSTOP freezes the probe the way a host freezes a guest: its clock runs on, it does not.
    const stoppedAt = Date.now();
    child.kill('SIGSTOP');
    await new Promise((r) => setTimeout(r, 120));
    child.kill('SIGCONT');
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(0);
    const seen = JSON.parse(out) as { stalls: number; maxStallMs: number; stalledMs: number; events: [number, number][] };
    expect(seen.stalls).toBeGreaterThanOrEqual(1);
    expect(seen.maxStallMs).toBeGreaterThanOrEqual(100);
    expect(seen.stalledMs).toBeGreaterThanOrEqual(seen.maxStallMs);
    // Each stall with the moment it ended (wall clock, ms): the stop is one of them.
    expect(seen.events).toHaveLength(seen.stalls);
    const stop = seen.events.find(([, late]) => late >= 100);
    expect(stop).toBeDefined();
    expect(stop![0]).toBeGreaterThanOrEqual(stoppedAt + 100);
    expect(stop![0]).toBeLessThanOrEqual(Date.now());
  });

  it('runs one probe pinned to each CPU, so a stop of one CPU is seen and named', async () => {
    // The built module: it starts the probe that sits beside it in dist/.
    const { startStallProbe } = (await import(join(dirname(PROBE), 'wrk.js'))) as typeof import('../../../bench/harness/wrk.js');
    const children: ChildProcess[] = [];
    const probe = startStallProbe(2, (c) => children.push(c));
    await new Promise((r) => setTimeout(r, 700));
    // Each probe's thread was pinned once its Node was up (not before: see bench/harness/stall-probe.ts).
    children.forEach((c, cpu) => expect(readFileSync(`/proc/${c.pid}/status`, 'utf8')).toMatch(new RegExp(`^Cpus_allowed_list:\\s+${cpu}$`, 'm')));
    // The first probe is CPU 0's: stopping it is what the host stopping that CPU looks like to it.
    const stoppedAt = Date.now();
    children[0]!.kill('SIGSTOP');
    await new Promise((r) => setTimeout(r, 150));
    children[0]!.kill('SIGCONT');
    const seen = await probe.result;
    expect(seen.perCpu).toBe(true);
    expect(children).toHaveLength(cpus().length);
    const stop = seen.events.find((e) => e.lateMs >= 100);
    expect(stop?.cpu).toBe(0);
    expect(stop!.endedAt).toBeGreaterThanOrEqual(stoppedAt + 100);
    expect(seen.maxStallMs).toBeGreaterThanOrEqual(100);
    expect(seen.stalls).toBe(seen.events.length);
  });

  it('with --lates-from, also lists every wake-up late by that much, each stall among them', async () => {
    const child = spawn(process.execPath, [PROBE, '1.2', '50', '--lates-from', '2'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    await new Promise((r) => setTimeout(r, 400));
    // Three stops too short for the 50 ms stall threshold: a host taking the CPU in slices.
    for (let i = 0; i < 3; i++) {
      child.kill('SIGSTOP');
      await new Promise((r) => setTimeout(r, 20));
      child.kill('SIGCONT');
      await new Promise((r) => setTimeout(r, 60));
    }
    expect(await new Promise<number | null>((r) => child.once('exit', r))).toBe(0);
    const seen = JSON.parse(out) as { stalls: number; events: [number, number][]; lates: [number, number][] };
    expect(seen.lates.filter(([, late]) => late >= 15).length).toBeGreaterThanOrEqual(3);
    expect(seen.lates.every(([, late]) => late >= 2)).toBe(true);
    for (const e of seen.events) expect(seen.lates).toContainEqual(e);
    // Without the flag the output has no such list (the wrk pass does not ask for it).
    const plain = spawnSync(process.execPath, [PROBE, '0.2', '5'], { encoding: 'utf8' });
    expect(JSON.parse(plain.stdout)).not.toHaveProperty('lates');
  });

  it('refuses a missing or silly duration with exit code 2', () => {
    for (const args of [[], ['0', '5'], ['1', 'x'], ['1', '5', '--lates-from'], ['1', '5', '--lates-from', '0'], ['1', '5', '--late']]) {
      const r = spawnSync(process.execPath, [PROBE, ...args], { encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('usage');
    }
  });
});
