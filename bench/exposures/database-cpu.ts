/**
 * The CPU a PostgreSQL on this machine spends, read from /proc: its postmaster (found by the port on
 * its command line) and every backend it forked that is alive, plus what its exited backends spent
 * (the postmaster's cutime and cstime). The side-by-side parts of bench:exposures report it beside
 * rcd's own CPU when the exposure database is PostgreSQL (--exposure-db postgres): rcd's process is
 * what a delivery node pays when the database runs elsewhere; the two together are what this one
 * machine paid.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { clockTicksPerSecond, procStatFields } from '../harness/measure.js';

/** procStatFields, or null for a process that has gone since /proc was listed. */
function statFields(pid: string): string[] | null {
  try {
    return procStatFields(pid);
  } catch {
    return null;
  }
}

/** The pid of the postmaster started with `-p PORT` (and `-D`). */
export function postmasterPid(port: number): number {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    const p = args.indexOf('-p');
    if (p !== -1 && args[p + 1] === String(port) && args.includes('-D')) return Number(name);
  }
  throw new Error(`no PostgreSQL postmaster with -p ${port} in /proc`);
}

/** utime + stime of the postmaster, of its live backends and of its exited ones, in microseconds. */
export function postgresCpuMicros(postmaster: number): number {
  const own = String(postmaster);
  let ticks = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const f = statFields(name);
    if (f === null) continue;
    if (name === own) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    else if (f[1] === own) ticks += Number(f[11]) + Number(f[12]);
  }
  return (ticks * 1e6) / clockTicksPerSecond();
}
