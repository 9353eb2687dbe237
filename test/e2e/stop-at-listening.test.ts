/**
 * A server sent SIGTERM the moment it prints "listening on" stops cleanly with exit 0 every time, not
 * only once (startup.test.ts stops one such start in npm test).
 */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/server-process.js';
import { stopAtListening } from '../helpers/stop-at-listening.js';

describe('a stop signal the moment the server is up', () => {
  it('SIGTERM as soon as "listening on" is printed: a clean stop, exit 0, every time', async () => {
    for (let i = 0; i < 8; i++) {
      const dir = tempDir();
      try {
        const run = await stopAtListening(dir);
        expect({ code: run.code, signal: run.signal }, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toEqual({ code: 0, signal: null });
        expect(run.stdout).toContain('stopped');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }, 60_000);
});
