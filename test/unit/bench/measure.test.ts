import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { mainThreadSwitches } from '../../../bench/harness/measure.js';

const children: ChildProcess[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    c.kill('SIGKILL');
    await once(c, 'exit');
  }
});

/** A node process whose main thread runs `code`, once it has started running it. */
async function nodeRunning(code: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', `process.stdout.write('ready\\n'); ${code}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  await once(child.stdout, 'data');
  return child;
}

/** The switches of a node process's main thread over 300 ms of running `code`. */
async function switchesWhileRunning(code: string): Promise<{ voluntary: number; involuntary: number }> {
  const child = await nodeRunning(code);
  const before = mainThreadSwitches(child.pid!);
  await sleep(300);
  const after = mainThreadSwitches(child.pid!);
  return { voluntary: after.voluntary - before.voluntary, involuntary: after.involuntary - before.involuntary };
}

describe('bench: context switches of a server main thread (bench:cost, "Context switches")', () => {
  it("counts the main thread's waits: a loop woken by a 5 ms timer sleeps between its wake-ups", async () => {
    const counted = await switchesWhileRunning('setInterval(() => {}, 5);');
    // ~60 wake-ups in 300 ms; a loaded CI machine may merge or delay some.
    expect(counted.voluntary).toBeGreaterThan(10);
    expect(counted.involuntary).toBeGreaterThanOrEqual(0);
  });

  it('reads a busy thread as one that never waits', async () => {
    const counted = await switchesWhileRunning('for (;;) {}');
    expect(counted.voluntary).toBeLessThan(5);
  });

  it('throws for a process that is gone', async () => {
    const child = await nodeRunning('');
    await once(child, 'exit');
    expect(() => mainThreadSwitches(child.pid!)).toThrow();
  });
});
