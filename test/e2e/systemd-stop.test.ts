/**
 * What deploy/systemd/rcd.service runs (its ExecStart with its environment and deploy/systemd/rcd.env)
 * starts rcd and stops within the unit's TimeoutStopSec on its KillSignal while a request is held in
 * flight: the drain runs to the production --shutdown-timeout, so this file is in npm run test:slow
 * (systemd.test.ts checks the unit itself in npm test).
 */
import { readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, startServer, tempDir } from '../helpers/server-process.js';
import { seconds, setting, unitEnvironment } from '../helpers/systemd-unit.js';

const dir = tempDir('rcd-systemd-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('deploy/systemd/rcd.service', () => {
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
