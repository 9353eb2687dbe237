/**
 * Reading the nice value of every thread of a process from /proc (field 19 of each thread's stat
 * line), for the tests of CPU priorities (test/e2e/bulk-priority.test.ts, delivery-priority.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { BIN } from './server-process.js';

/** Each thread's nice value, by thread id (a thread that ended between the listing and the read is left out). */
export function nices(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      out.set(Number(tid), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]));
    } catch {
      // Gone: it cannot be one of the threads this test follows.
    }
  }
  return out;
}

/** Every nice value each thread of `pids` had while `work` ran (read every ~1 ms). */
export async function sampleWhile<T>(pids: readonly number[], work: Promise<T>): Promise<{ result: T; seen: Map<number, Set<number>>[] }> {
  const seen = pids.map(() => new Map<number, Set<number>>());
  let done = false;
  const result = work.finally(() => (done = true));
  while (!done) {
    pids.forEach((pid, i) => {
      for (const [tid, nice] of nices(pid)) {
        const set = seen[i]!.get(tid) ?? new Set<number>();
        set.add(nice);
        seen[i]!.set(tid, set);
      }
    });
    await new Promise((r) => setTimeout(r, 1));
  }
  return { result: await result, seen };
}

/** The nice values that threads present before took, other than the one each had then. */
export function changedThreads(before: Map<number, number>, seen: Map<number, Set<number>>): number[] {
  const values: number[] = [];
  for (const [tid, set] of seen) {
    const was = before.get(tid);
    if (was === undefined) continue;
    for (const nice of set) if (nice !== was) values.push(nice);
  }
  return values;
}

/**
 * The command that runs `rcd` without the right to raise a thread's priority: RLIMIT_NICE 0, and for
 * root CAP_SYS_NICE taken out of the bounding set (what an unprivileged service has by default).
 */
export function commandWithoutNiceRights(): string[] {
  const drop = process.getuid?.() === 0 ? ['setpriv', '--inh-caps=-sys_nice', '--bounding-set=-sys_nice', '--'] : [];
  return ['prlimit', '--nice=0:0', '--', ...drop, process.execPath, BIN];
}
