/**
 * deploy/systemd/rcd.service: systemd's own checker accepts it without a warning, and what it runs
 * (its ExecStart with its environment and deploy/systemd/rcd.env) starts rcd and stops within the
 * unit's TimeoutStopSec on its KillSignal while a request is held in flight.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, startServer, tempDir } from '../helpers/server-process.js';

const UNIT = join(ROOT, 'deploy', 'systemd', 'rcd.service');
const ENV_FILE = join(ROOT, 'deploy', 'systemd', 'rcd.env');
const SYSTEMD_ANALYZE = '/usr/bin/systemd-analyze';

const unit = readFileSync(UNIT, 'utf8');
const dir = tempDir('rcd-systemd-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The value of `Key=` in the unit (the last one wins, as in systemd). */
function setting(key: string): string | undefined {
  const lines = unit.split('\n').filter((l) => l.startsWith(`${key}=`));
  return lines.at(-1)?.slice(key.length + 1);
}

/** KEY=VALUE pairs of the unit's Environment= line and of the example environment file (which wins). */
function unitEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of (setting('Environment') ?? '').split(/\s+/).filter((p) => p !== '')) {
    const at = pair.indexOf('=');
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  for (const line of readFileSync(ENV_FILE, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m !== null) env[m[1]!] = m[2]!;
  }
  return env;
}

function seconds(value: string | undefined): number {
  const m = /^(\d+)s?$/.exec(value ?? '');
  if (m === null) throw new Error(`not a number of seconds: ${value}`);
  return Number(m[1]);
}

describe('deploy/systemd/rcd.service', () => {
  it('passes systemd-analyze verify with no warning (ExecStart pointed at this node and checkout)', async () => {
    // verify checks that ExecStart's program exists; the unit names /usr/bin/node and /opt/rcd, so a
    // copy names the node running the tests and this checkout, everything else unchanged.
    const copy = unit
      .replace(/^ExecStart=\S+\/node((?: --[\w-]+)*) \S+\/bin\/rcd\.js serve$/m, `ExecStart=${process.execPath}$1 ${BIN} serve`)
      .replace(/^EnvironmentFile=.*$/m, `EnvironmentFile=${ENV_FILE}`);
    expect(copy).not.toBe(unit);
    expect(existsSync(SYSTEMD_ANALYZE), `${SYSTEMD_ANALYZE} is missing: apt-get install systemd (.ci/run does)`).toBe(true);
    const file = join(dir, 'rcd.service');
    writeFileSync(file, copy);
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      execFile(SYSTEMD_ANALYZE, ['verify', file], { timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : null, out: stdout + stderr });
      });
    });
    expect(r.out).toBe('');
    expect(r.code).toBe(0);
  });

  it('keeps the settings the operations guide relies on', () => {
    expect(setting('User')).toBe('rcd');
    expect(setting('KillSignal')).toBe('SIGTERM');
    expect(setting('Restart')).toBe('on-failure');
    expect(setting('CapabilityBoundingSet')).toBe('');
    expect(setting('SystemCallFilter')).toBe('@system-service');
    expect(Number(setting('LimitNOFILE'))).toBeGreaterThanOrEqual(65536);
    // Delivery runs at nice -10 and the control thread goes back to nice 0 after a bulk edit (src/runtime/priority.ts).
    expect(setting('LimitNICE')).toBe('-10');
    // V8's JIT needs memory that is written and then executed (docs/operations.md).
    expect(setting('MemoryDenyWriteExecute')).toBeUndefined();
  });

  it('its ExecStart and environment start rcd, and SIGTERM stops it within TimeoutStopSec while a request hangs', async () => {
    const env = unitEnvironment();
    const drainMs = Number(env.RCD_SHUTDOWN_TIMEOUT_MS);
    const stopSec = seconds(setting('TimeoutStopSec'));
    expect(drainMs).toBeGreaterThan(0);
    expect(stopSec * 1000).toBeGreaterThan(drainMs);
    // The unit's paths are the production ones; the store and data directory move to a temp dir.
    // ExecStart is node + its flags + bin/rcd.js + serve: the helper runs exactly that with its test flags.
    const exec = /^\S+\/node((?: --[\w-]+)*) \S+\/bin\/rcd\.js serve$/.exec(setting('ExecStart') ?? '');
    expect(exec).not.toBeNull();
    const nodeFlags = exec![1]!.split(' ').filter((f) => f !== '');
    expect(nodeFlags).toContain('--single-threaded-gc');
    const server = await startServer({ dir, seedDemo: true, env: { ...env, RCD_DATA_DIR: dir }, command: [process.execPath, ...nodeFlags, BIN] });
    expect(server.stdout()).toContain('garbage collection: each thread collects its own heap');
    const key = readFileSync(join(dir, 'demo-api-key'), 'utf8').trim();
    // A POST whose body never finishes: the drain waits for it until --shutdown-timeout cuts it.
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`POST /api/v1/config/PlayerSettings HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"u":`);
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    server.child.kill(setting('KillSignal') as NodeJS.Signals);
    const code = await new Promise<number | null>((resolve) => {
      if (server.child.exitCode !== null) resolve(server.child.exitCode);
      else server.child.once('exit', (c) => resolve(c));
    });
    const took = Date.now() - started;
    socket.destroy();
    expect(code).toBe(0);
    // The drain ran to its bound: the hanging request held the stop until --shutdown-timeout.
    expect(took).toBeGreaterThanOrEqual(drainMs / 2);
    expect(took).toBeLessThan(stopSec * 1000);
  }, 60_000);
});
