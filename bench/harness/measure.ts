/**
 * Process-level resource accounting read from /proc, so the numbers cover every thread of the measured
 * process (the uWS main thread and all Piscina workers) without any cooperation from the server.
 * Linux only: the suite refuses to start elsewhere rather than report CPU figures it cannot measure.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

let ticksPerSecond = 0;

/** USER_HZ: the unit of utime/stime in /proc/<pid>/stat (100 on every mainstream Linux build). */
export function clockTicksPerSecond(): number {
  if (ticksPerSecond !== 0) return ticksPerSecond;
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    ticksPerSecond = Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    ticksPerSecond = 100;
  }
  return ticksPerSecond;
}

/** CPU time of the whole process (all threads, not children), in microseconds. */
export interface CpuTimes {
  /** utime: the process's own code (JavaScript, V8, libuv, uWS). */
  readonly user: number;
  /** stime: the kernel on its behalf (system calls, the TCP stack behind send and receive, faults). */
  readonly system: number;
}

/**
 * The fields of /proc/PID/stat after the command name: fields[0] is field 3 (state), fields[1] the
 * parent's pid, fields[11..14] utime, stime, cutime and cstime (ticks). Throws when the process is gone.
 */
export function procStatFields(pid: number | string): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may contain spaces: split after the last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** utime and stime of the whole process (all threads, not children) in microseconds. */
export function processCpuTimes(pid: number): CpuTimes {
  const fields = procStatFields(pid);
  const perTick = 1e6 / clockTicksPerSecond();
  return { user: Number(fields[11]) * perTick, system: Number(fields[12]) * perTick };
}

/** utime + stime of the whole process (all threads, not children) in microseconds. */
export function processCpuMicros(pid: number): number {
  const t = processCpuTimes(pid);
  return t.user + t.system;
}

/**
 * Context switches of a process's main thread (/proc/PID/task/PID/status): the delivery loop of rcd
 * and of the floor when each runs one loop, as bench:cost starts them.
 */
export interface ContextSwitches {
  /** The thread gave the CPU up itself: it waited (epoll found nothing to do, a lock). */
  readonly voluntary: number;
  /** The kernel took the CPU from the thread while it could run: another task was preferred (a preemption). */
  readonly involuntary: number;
}

export function mainThreadSwitches(pid: number): ContextSwitches {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  return { voluntary: statusCount(status, 'voluntary_ctxt_switches:'), involuntary: statusCount(status, 'nonvoluntary_ctxt_switches:') };
}

/** A count field of a status text at the start of its line (nonvoluntary_… also ends in voluntary_…). */
function statusCount(status: string, field: string): number {
  const m = new RegExp(`^${field}\\s*(\\d+)$`, 'm').exec(status);
  if (m === null) throw new Error(`${field} is missing from /proc's status of the thread`);
  return Number(m[1]);
}

/** The CPUs a process may run on, as /proc/PID/status lists them (e.g. "0" or "0-1"). */
export function cpusAllowed(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)?.[1] ?? '?';
}

export interface MemoryStatus {
  /** Resident set size now, bytes. */
  readonly rss: number;
  /** Peak RSS (VmHWM) since start or the last resetPeakRss, bytes. */
  readonly peakRss: number;
}

export function memoryStatus(pid: number): MemoryStatus {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rss: statusKiB(status, 'VmRSS:') * 1024, peakRss: statusKiB(status, 'VmHWM:') * 1024 };
}

function statusKiB(status: string, field: string): number {
  const at = status.indexOf(field);
  if (at < 0) return 0;
  return parseInt(status.slice(at + field.length), 10);
}

/** Resets VmHWM to the current RSS (clear_refs "5", Linux >= 4.0) so that each scenario reports its own
 *  peak rather than the process's lifetime peak. Returns false where the kernel or permissions refuse. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export function isLinuxProcAvailable(): boolean {
  try {
    readFileSync('/proc/self/stat', 'utf8');
    return true;
  } catch {
    return false;
  }
}

/** [milliseconds since start, RSS bytes]. */
export type RssSample = readonly [number, number];

/** Samples a process's RSS on a fixed interval; used for the memory-growth target (RSS at 10 s vs at the end). */
export class RssSampler {
  private readonly samples: RssSample[] = [];
  private readonly started = Date.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pid: number,
    intervalMs: number,
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
    // The sampler must never be what keeps the bench process alive after a failure.
    this.timer.unref();
  }

  private sample(): void {
    try {
      this.samples.push([Date.now() - this.started, memoryStatus(this.pid).rss]);
    } catch {
      // The process exited between two samples; the run reports that failure itself.
    }
  }

  stop(): RssSample[] {
    clearInterval(this.timer);
    this.sample();
    return this.samples;
  }
}

/** The RSS sample closest to (at or before) `ms` after the start, or null when the run was shorter. */
export function rssAt(samples: readonly RssSample[], ms: number): number | null {
  let best: number | null = null;
  for (const [t, rss] of samples) {
    if (t <= ms) best = rss;
    else break;
  }
  return best;
}

export interface ClientCpu {
  /** CPU time of this (bench) process over the run, all threads, as a fraction of one core. */
  readonly cores: number;
  /** True when the load generator, not the measured server, is the limit. */
  readonly bound: boolean;
}

/** autocannon shares the machine with the server: past ~90% of the cores it may use, its own speed is
 *  what the run measures, so the throughput ratio stops meaning much and CPU efficiency is the figure to read. */
export function clientCpu(start: NodeJS.CpuUsage, wallMs: number, clientThreads: number): ClientCpu {
  const used = process.cpuUsage(start);
  const cores = wallMs > 0 ? (used.user + used.system) / 1000 / wallMs : 0;
  return { cores, bound: cores >= 0.9 * clientThreads };
}
