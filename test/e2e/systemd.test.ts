/**
 * deploy/systemd/rcd.service: systemd's own checker accepts it without a warning, and it keeps the
 * settings the operations guide relies on. That what it runs stops within its TimeoutStopSec while a
 * request is held in flight is proved by systemd-stop.test.ts (npm run test:slow: the drain runs to
 * the production bound).
 */
import { execFile } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, tempDir } from '../helpers/server-process.js';
import { ENV_FILE, setting, unit } from '../helpers/systemd-unit.js';

const SYSTEMD_ANALYZE = '/usr/bin/systemd-analyze';

const dir = tempDir('rcd-systemd-');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

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
});
