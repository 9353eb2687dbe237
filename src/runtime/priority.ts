/**
 * CPU priority of single threads, so that delivery gets a core before the work that may wait: on a
 * box whose cores the delivery loops keep busy, a bulk edit's CPU at the priority of delivery leaves
 * the loops waiting for a core.
 * Delivery loops may run above the rest of the process (DeliveryPriority); bulk edits and import
 * checks run below it (BulkPriority, lowerThreadPriority).
 *
 * Linux only: there the nice value belongs to a thread (setpriority(2) with who = 0), so lowering it
 * leaves every other thread of the process as it was. Elsewhere `who = 0` names the whole process,
 * delivery included, so nothing here changes a priority.
 */
import { readFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** CAP_SYS_NICE's bit in /proc/self/status's CapEff. */
const CAP_SYS_NICE = 23n;

/** Whether a thread of this process may set its own nice value. */
export const PER_THREAD_PRIORITY = process.platform === 'linux';

/** The lowest priority a thread can take. */
export const LOWEST_NICE = 19;

/**
 * Raises the calling thread's nice value by `increment` (capped at 19); needs no privilege. Where
 * the system refuses (or off Linux) nothing changes: getPriority(0) says what took.
 */
export function lowerThreadPriority(increment: number): void {
  if (!PER_THREAD_PRIORITY || increment <= 0) return;
  try {
    setPriority(0, Math.min(LOWEST_NICE, getPriority(0) + increment));
  } catch {
    // Left as it was; see above.
  }
}

/**
 * Whether a thread may lower its nice value to `nice` (a thread at a higher value going back to it,
 * or one raising its priority above the process's): with CAP_SYS_NICE (counted only outside a user
 * namespace, where the kernel checks it against the initial one) or an RLIMIT_NICE of at least
 * 20 - nice (setpriority(2)). Read from /proc, so asking changes nothing.
 */
export function mayLowerNiceTo(nice: number): boolean {
  if (!PER_THREAD_PRIORITY) return false;
  try {
    if (hasSysNice(readFileSync('/proc/self/status', 'utf8')) && initialUserNamespace(readFileSync('/proc/self/uid_map', 'utf8'))) return true;
    const limit = niceLimit(readFileSync('/proc/self/limits', 'utf8'));
    return limit === Infinity || 20 - nice <= limit;
  } catch {
    return false;
  }
}

/** The CPU priority the delivery loops run at, chosen once at start (src/server.ts). */
export interface DeliveryPriority {
  /** The nice value each delivery loop sets for its thread before starting its pool, or null: left as it is. */
  readonly nice: number | null;
  /** What the log says at start. */
  readonly description: string;
}

/**
 * Delivery `raise` nice steps above the rest of the process (at `base`), where the process may
 * (mayLowerNiceTo): while writes and imports run, the loops get a core first, so what is left of
 * their pauses is their own work rather than a wait in the run queue.
 */
export function deliveryPriority(raise: number, base: number): DeliveryPriority {
  const same = 'delivery loops run at the priority of the rest of the process';
  if (raise === 0) return { nice: null, description: `${same} (--delivery-nice 0)` };
  if (!PER_THREAD_PRIORITY) return { nice: null, description: `${same} (per-thread priorities need Linux)` };
  const nice = Math.max(-20, base - raise);
  if (!mayLowerNiceTo(nice)) {
    return { nice: null, description: `${same}: nice ${nice} needs CAP_SYS_NICE or an RLIMIT_NICE of ${20 - nice} (docs/operations.md)` };
  }
  return { nice, description: `delivery loops and their worker pools run at nice ${nice}, the rest of the process at ${base}` };
}

/**
 * Sets the calling thread's nice value (threads it starts afterwards inherit it); false when the
 * system refused. Null: nothing to set.
 */
export function setThreadNice(nice: number | null): boolean {
  if (nice === null) return true;
  if (!PER_THREAD_PRIORITY) return false;
  try {
    setPriority(0, nice);
    return true;
  } catch {
    return false;
  }
}

/** CapEff of a /proc/PID/status text includes CAP_SYS_NICE. */
export function hasSysNice(status: string): boolean {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(status);
  return m !== null && ((BigInt(`0x${m[1]!}`) >> CAP_SYS_NICE) & 1n) === 1n;
}

/** A /proc/PID/uid_map text of the initial user namespace (every uid mapped to itself). */
export function initialUserNamespace(uidMap: string): boolean {
  return /^\s*0\s+0\s+4294967295\s*$/.test(uidMap.trim());
}

/** The soft "Max nice priority" of a /proc/PID/limits text (Infinity: unlimited; 0 when absent). */
export function niceLimit(limits: string): number {
  const m = /^Max nice priority\s+(\S+)/m.exec(limits);
  if (m === null) return 0;
  return m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

/** Runs a piece of bulk work (an import's or sync's write, a big change batch's publishing). */
export interface BulkRunner {
  run<T>(work: () => Promise<T>): Promise<T>;
}

/** Bulk work at the priority of whatever calls it. */
export const SAME_PRIORITY: BulkRunner = { run: (work) => work() };

/**
 * Runs bulk work of the calling thread at a lower CPU priority and puts the priority back after it,
 * where the process may (mayLowerNiceTo its base): without that right a thread could not go back, and
 * single writes and their propagation would run at the lower priority from then on, and an edit
 * would reach the other nodes later. Calls may overlap; the priority returns
 * when the last one ends. Whatever else the thread runs meanwhile runs at the lower priority too.
 */
export class BulkPriority implements BulkRunner {
  /** The nice value added during bulk work; 0 when it cannot be (or is not to be) lowered. */
  private readonly increment: number;
  private readonly base: number;
  /** What the log says at start: whether bulk work yields to delivery, and what it would take. */
  readonly description: string;
  private depth = 0;
  private broken = false;
  private readonly log: (line: string) => void;

  constructor(requested: number, log: (line: string) => void) {
    this.base = getPriority(0);
    this.increment = requested > 0 && mayLowerNiceTo(this.base) ? Math.min(requested, 19 - this.base) : 0;
    this.log = log;
    if (requested === 0) this.description = 'bulk edits run at the process\'s priority (--bulk-nice 0)';
    else if (this.increment > 0) this.description = `bulk edits (imports, syncs, change batches of ${BULK_ENTRIES} or more) run at nice ${this.base + this.increment} in the control thread`;
    else if (!PER_THREAD_PRIORITY) this.description = 'bulk edits run at the process\'s priority (per-thread priorities need Linux)';
    else this.description = 'bulk edits run at the process\'s priority: going back to it after one needs CAP_SYS_NICE or an RLIMIT_NICE of 20 (docs/operations.md)';
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.increment === 0 || this.broken) return work();
    if (this.depth++ === 0) this.set(this.base + this.increment);
    try {
      return await work();
    } finally {
      if (--this.depth === 0) this.set(this.base);
    }
  }

  private set(nice: number): void {
    try {
      setPriority(0, nice);
    } catch (err) {
      // Only if the rights read at start were taken away since; the thread stays where it is.
      this.broken = true;
      this.log(`could not set the control thread's nice to ${nice} (${(err as Error).message}); bulk edits now run at nice ${getPriority(0)}`);
    }
  }
}

/** A change-log batch of this many entries is bulk work (an import's or a sync's write always is). */
export const BULK_ENTRIES = 1000;
