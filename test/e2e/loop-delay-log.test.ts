// RCD_LOOP_DELAY_LOG_MS: the opt-in log of the delivery loop's pauses (README, Configuration), which
// `npm run bench:edits` reads. Checked on the real server process.
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism, cpus } from 'node:os';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, startServer, tempDir } from '../helpers/server-process.js';

// The wait field and the longest gap's split are there where /proc/thread-self/schedstat is (Linux:
// this suite's platform).
const LINE =
  /^rcd: loop delay p50=(\d+\.\d\d)ms p99=(\d+\.\d\d)ms max=(\d+\.\d\d)ms apply=(\d+\.\d\d)ms\/(\d+) gc=(\d+\.\d\d)ms\/(\d+) wait=(\d+\.\d\d)ms longest=(\d+\.\d\d)ms ran=(\d+\.\d\d)ms queued=(\d+\.\d\d)ms off=(-?\d+\.\d\d)ms at=(\d+\.\d) cpu=(\d+) answered=(\d+)$/gm;

async function waitFor(check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

describe('RCD_LOOP_DELAY_LOG_MS', () => {
  it('logs the delivery loop pauses once per interval when set, and nothing when unset', async () => {
    const startedAt = Date.now();
    // The loop at the process's priority, so that the busy processes below can keep it waiting.
    const logged = await startServer({ admin: true, args: ['--delivery-nice', '0'], env: { RCD_LOOP_DELAY_LOG_MS: '100' } });
    const quiet = await startServer({ env: { RCD_LOOP_DELAY_LOG_MS: '' } });
    try {
      await waitFor(() => [...logged.stdout().matchAll(LINE)].length >= 3, 10_000);
      const lines = [...logged.stdout().matchAll(LINE)];
      expect(lines.length, logged.stdout()).toBeGreaterThanOrEqual(3);
      for (const m of lines) {
        const [p50, p99, max, gcMax, gcCount] = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[6]), Number(m[7])];
        expect(p50).toBeGreaterThanOrEqual(0);
        expect(p99).toBeGreaterThanOrEqual(p50);
        expect(max).toBeGreaterThanOrEqual(p99);
        expect(gcCount === 0 ? gcMax === 0 : gcMax > 0).toBe(true);
        // The longest gap of the log's own 1 ms timer: at least its period, split into parts that add up.
        const [longest, ran, queued, off] = [Number(m[9]), Number(m[10]), Number(m[11]), Number(m[12])];
        expect(longest).toBeGreaterThanOrEqual(0.9);
        expect(ran).toBeGreaterThanOrEqual(0);
        expect(queued).toBeGreaterThanOrEqual(0);
        expect(Math.abs(ran + queued + off - longest)).toBeLessThan(0.02);
        // When that gap ended, on the wall clock the bench's stall probes use: within the run so far.
        const at = Number(m[13]);
        expect(at).toBeGreaterThan(startedAt);
        expect(at).toBeLessThanOrEqual(Date.now() + 1);
        // The CPU the loop was on when that gap ended: one of this machine's.
        expect(Number(m[14])).toBeLessThan(cpus().length);
      }
      // The server still answers while it logs.
      expect((await fetch(`${logged.url}/healthz`)).status).toBe(200);
      // An edit is named as an applied routing update in the line of its window.
      const before = lines.length;
      const put = await fetch(`${logged.adminUrl}/admin/v1/environments/logged`, { method: 'PUT', headers: { authorization: 'Bearer test-admin-token' } });
      expect(put.status).toBe(201);
      await waitFor(() => [...logged.stdout().matchAll(LINE)].slice(before).some((m) => Number(m[5]) >= 1), 10_000);
      const after = [...logged.stdout().matchAll(LINE)].slice(before);
      const withApply = after.find((m) => Number(m[5]) >= 1);
      expect(withApply, logged.stdout()).toBeDefined();
      expect(Number(withApply?.[4])).toBeGreaterThan(0);
      // Collections of the loop's heap are counted (@datadog/native-metrics, reset each window): requests
      // allocate, and 5,000 of them fill the young generation more than once.
      const beforeLoad = [...logged.stdout().matchAll(LINE)].length;
      for (let i = 0; i < 100; i++) await Promise.all(Array.from({ length: 50 }, async () => (await fetch(`${logged.url}/healthz`)).arrayBuffer()));
      await waitFor(() => [...logged.stdout().matchAll(LINE)].slice(beforeLoad).some((m) => Number(m[7]) >= 1), 10_000);
      const collected = [...logged.stdout().matchAll(LINE)].slice(beforeLoad).find((m) => Number(m[7]) >= 1);
      expect(collected, logged.stdout()).toBeDefined();
      expect(Number(collected?.[6])).toBeGreaterThan(0);
      // The longest gap of a window under that load holds requests the loop answered in it (`answered`).
      expect([...logged.stdout().matchAll(LINE)].slice(beforeLoad).some((m) => Number(m[15]) > 0), logged.stdout()).toBe(true);
      expect(quiet.stdout()).not.toContain('loop delay');
      // wait: the loop thread's run-queue time. With twice as many busy processes as cores, the loop
      // (woken every millisecond by the delay sampler) is ready to run while others hold the CPUs.
      const beforeHogs = [...logged.stdout().matchAll(LINE)].length;
      const hogs = Array.from({ length: availableParallelism() * 2 }, () => spawn(process.execPath, ['-e', 'const end = Date.now() + 1500; while (Date.now() < end);'], { stdio: 'ignore' }));
      await Promise.all(hogs.map((h) => new Promise((r) => h.once('exit', r))));
      await waitFor(() => [...logged.stdout().matchAll(LINE)].length >= beforeHogs + 16, 10_000);
      const waited = [...logged.stdout().matchAll(LINE)].slice(beforeHogs).reduce((sum, m) => sum + Number(m[8]), 0);
      expect(waited, logged.stdout()).toBeGreaterThan(1);
      // ... and the longest gaps of those windows were spent mostly waiting, not running the loop's work.
      const hogged = [...logged.stdout().matchAll(LINE)].slice(beforeHogs).filter((m) => Number(m[9]) >= 5);
      expect(hogged.some((m) => Number(m[11]) > Number(m[10])), logged.stdout()).toBe(true);
    } finally {
      await logged.dispose();
      await quiet.dispose();
    }
    // Stopping ends the log with the rest of the server: a clean exit.
    expect(logged.child.exitCode).toBe(0);
  });

  it('refuses a value that is not a whole number of milliseconds in range, before listening, with exit 1', () => {
    const dir = tempDir();
    try {
      for (const bad of ['abc', '5', '1.5', '-100', '3600001']) {
        const r = spawnSync(process.execPath, [BIN, 'serve', '--store', `sqlite:${join(dir, 'rcd.db')}`, '--host', '127.0.0.1', '--port', '0', '--admin', 'false', '--seed-demo', 'false'], {
          encoding: 'utf8',
          env: { ...process.env, RCD_ADMIN_TOKEN: 'test-admin-token', RCD_LOG_FORMAT: 'pretty', RCD_LOOP_DELAY_LOG_MS: bad },
          timeout: 20_000,
        });
        expect(r.status, `${bad}: ${r.stderr}`).toBe(1);
        expect(r.stderr, bad).toContain('RCD_LOOP_DELAY_LOG_MS');
        expect(r.stderr.trim().split('\n'), bad).toHaveLength(1);
        expect(r.stdout, bad).not.toContain('listening on');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
