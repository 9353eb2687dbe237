/**
 * Instructions per request: a deterministic figure beside CPU time. A server runs under
 * `valgrind --tool=callgrind` with instrumentation off; a fixed sequence of requests, sent one at a
 * time on one keep-alive connection (sequential-client.ts), warms it up (the JIT tiers up by call
 * counts, which valgrind does not change); then the same sequence is sent again in several windows,
 * each counted on its own (`callgrind_control -z`, `-i on`, `-i off`, `-d`). A window's instructions
 * (Ir, every thread of the process: the delivery loop, pool workers, timers) minus V8's compilers and
 * garbage collector, divided by the requests, is its figure; the median of the windows is reported.
 *
 * Measured spread between windows after 20 warm-up passes of 400 requests: combine ±0.4%, the floor
 * ±0.7%, mapped ±3% (its median moves less): a change of a few percent on the hot path shows in one
 * run, where CPU time on this shared box needs many rounds. It counts instructions, not time (a
 * cache miss costs one instruction here, and the kernel's work is not counted at all), so the two
 * figures are read together (bench/README.md, "Cost against the floor").
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SequentialClient } from './sequential-client.js';
import type { RequestEntry } from '../harness/scenarios.js';

/** Whether valgrind and callgrind_control run here. */
export function callgrindAvailable(): boolean {
  for (const command of ['valgrind', 'callgrind_control']) {
    const r = spawnSync(command, ['--version'], { stdio: 'ignore' });
    if (r.error !== undefined || r.status !== 0) return false;
  }
  return true;
}

/** A cache level as callgrind's simulator takes it: bytes, ways, line bytes. */
export interface CacheGeometry {
  readonly bytes: number;
  readonly ways: number;
  readonly lineBytes: number;
}

/**
 * This machine's second-level cache (getconf), or null where it does not say. callgrind simulates two
 * levels and takes the machine's last level (here a VM's 512 MiB L3, which nothing a server touches
 * leaves) as its second: given the L2 instead, its second-level misses are the lines fetched from
 * beyond L2, which cost several times an L1 miss: a change that saves instructions and L1 misses by
 * touching more memory can cost more CPU (bench/README.md, "Cache misses").
 */
export function machineL2(): CacheGeometry | null {
  const read = (name: string): number => {
    const r = spawnSync('getconf', [name], { encoding: 'utf8' });
    return r.error === undefined && r.status === 0 ? Number(r.stdout.trim()) : NaN;
  };
  const bytes = read('LEVEL2_CACHE_SIZE');
  const ways = read('LEVEL2_CACHE_ASSOC');
  const lineBytes = read('LEVEL2_CACHE_LINESIZE');
  // callgrind needs a power-of-two set count: bytes / (ways * line).
  const sets = bytes / (ways * lineBytes);
  if (!(bytes > 0 && ways > 0 && lineBytes > 0 && Number.isInteger(sets) && (sets & (sets - 1)) === 0)) return null;
  return { bytes, ways, lineBytes };
}

/**
 * The launcher (processes.ts) that runs node under callgrind, its dumps in `dir`, counting nothing
 * until switched on; with `cacheSim`, callgrind's cache simulator too (L1 misses, and misses of
 * `l2` when given, else of callgrind's default last level: slower); with `perInstruction`, costs
 * dumped per instruction (what callgrind-functions.ts needs to name compiled JavaScript; larger dumps).
 */
export function callgrindLauncher(dir: string, label: string, cacheSim = false, perInstruction = false, l2: CacheGeometry | null = null): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    '--instr-atstart=no',
    ...(cacheSim ? ['--cache-sim=yes'] : []),
    ...(cacheSim && l2 !== null ? [`--LL=${l2.bytes},${l2.ways},${l2.lineBytes}`] : []),
    // Without line numbers: the tables need addresses only, and callgrind_annotate (3.19) stopped on
    // a per-instruction dump at a cost line whose line number was relative and negative ("too many
    // event counts": its running line fell below zero), in a wrapped,mapped --by-function run.
    ...(perInstruction ? ['--dump-instr=yes', '--dump-line=no'] : []),
    `--callgrind-out-file=${join(dir, `callgrind.${label}.%p`)}`,
    '--log-file=/dev/null',
  ];
}

function control(pid: number, ...args: string[]): void {
  const r = spawnSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8', timeout: 120_000 });
  if (r.error !== undefined) throw new Error(`callgrind_control ${args.join(' ')} ${pid}: ${r.error.message}`);
  if (r.status !== 0 || !r.stdout.includes('OK')) throw new Error(`callgrind_control ${args.join(' ')} ${pid} failed: ${(r.stdout + r.stderr).trim()}`);
}

/**
 * V8's own work that lands in whichever window it happens to fall in: the optimizing compilers
 * (tier-ups) and the garbage collector (scavenges, sweeping, marking). Measured on mapped, window to
 * window of 400 requests: with them the count moved 61-71k instructions a request; without them
 * 60-63k. They are reported apart (function names from the dump, by callgrind_annotate).
 */
const V8_HOUSEKEEPING = new RegExp(
  [
    'v8::internal::compiler::',
    'v8::internal::maglev::',
    'v8::internal::baseline::',
    'v8::internal::interpreter::',
    'v8::internal::Zone',
    'Sweeper',
    'Scaveng',
    'MarkCompact',
    'Marking',
    'Evacuat',
    'IterateObjectCache',
    'v8::internal::Heap::',
    'RememberedSet',
    'SlotSet',
    'SizeFromMap',
  ].join('|'),
);

/**
 * libuv's timer phase, with everything it calls: work driven by the clock, not by requests (rcd: the
 * SQLite store's change poll every 25 ms, gauges and heartbeats every second, on the delivery loop and
 * the control and pool threads). Under valgrind a window of 400 requests lasts seconds, so this work
 * counted ~3,300 instructions a request on wrapped (2026-11-25), where at 30,000 requests a second it
 * is ~0.1 of one. It is reported apart; the floor has no timers. A collection that starts inside a
 * timer callback is counted in both (rare; a window where that leaves less than nothing is counted
 * again, countInstructions).
 */
const TIMER_PHASE = /(^|:)uv__run_timers \[/;

/**
 * uWS's handler of the bytes a read brought (HTTP or HTTPS), with everything it calls: the request
 * path itself (parsing, rcd's or the floor's JavaScript, the answer's writes), none of the loop's
 * other phases. A collection that starts on an allocation of a request is counted in it, and a
 * tier-up that lands there too: its least window is the path alone. Measured on mapped: the floor's
 * windows agree within 10 instructions a request, rcd's least windows within ~100, where the judged
 * figure's windows spread over ~1,500 (the loop's other work, GC and timers outside the handler).
 */
const REQUEST_PATH = /uWS::HttpContext<(false|true)>::init\(\)::\{lambda\(us_socket_t\*, char\*, int\)#1\}::__invoke/;

interface DumpFigures {
  readonly total: number;
  readonly housekeeping: number;
  readonly timers: number;
  /** REQUEST_PATH's inclusive count. */
  readonly requestPath: number;
}

/**
 * The events a dump is read for: instructions, and with the cache simulator the misses of code (I1)
 * and of data (D1, reads and writes) at the first level and at the second (IL, DL).
 */
const CACHE_EVENTS = ['I1mr', 'D1mr', 'D1mw', 'ILmr', 'DLmr', 'DLmw'] as const;
/** The second-level miss events (code, data read, data written), reported summed as "L2 misses". */
export const L2_EVENTS: readonly string[] = CACHE_EVENTS.slice(3);
type CountedEvent = 'Ir' | (typeof CACHE_EVENTS)[number];

function annotate(file: string, inclusive: boolean, events: readonly CountedEvent[]): string {
  const args = ['--threshold=100', `--show=${events.join(',')}`, ...(inclusive ? ['--inclusive=yes'] : []), file];
  const r = spawnSync('callgrind_annotate', args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (r.error !== undefined || r.status !== 0) throw new Error(`callgrind_annotate ${file} failed: ${r.error?.message ?? r.stderr.trim()}`);
  return r.stdout;
}

/** One count column of callgrind_annotate: a number with its percentage, or "." for none. */
const COUNT_COLUMN = String.raw`(?:([\d,]+) \(\s*[\d.]+%\)|\.)\s+`;

/** Per-function lines of callgrind_annotate showing `columns` events: their counts (in order) and the function's name. */
function* functionLines(text: string, columns: number): Generator<[number[], string]> {
  const line = new RegExp(`^\\s*${COUNT_COLUMN.repeat(columns)}(.*)$`);
  for (const l of text.split('\n')) {
    const m = line.exec(l);
    if (m === null) continue;
    const counts: number[] = [];
    for (let i = 1; i <= columns; i++) {
      const n = m[i];
      counts.push(n === undefined ? 0 : Number(n.replaceAll(',', '')));
    }
    yield [counts, m[columns + 1]!];
  }
}

/**
 * Each event's total in a dump, that of V8's compilers and garbage collector, and the timer phase's
 * (two callgrind_annotate runs for all of them: exclusive and inclusive).
 */
function readDump(file: string, events: readonly CountedEvent[]): DumpFigures[] {
  const total = events.map(() => -1);
  const housekeeping = events.map(() => 0);
  for (const [counts, name] of functionLines(annotate(file, false, events), events.length)) {
    if (name.startsWith('PROGRAM TOTALS')) counts.forEach((n, i) => (total[i] = n));
    else if (V8_HOUSEKEEPING.test(name)) counts.forEach((n, i) => (housekeeping[i]! += n));
  }
  if (total[0]! < 0) throw new Error(`callgrind_annotate ${file}: no program totals`);
  const timers = events.map(() => 0);
  const requestPath = events.map(() => 0);
  for (const [counts, name] of functionLines(annotate(file, true, events), events.length)) {
    if (TIMER_PHASE.test(name)) counts.forEach((n, i) => (timers[i] = Math.max(timers[i]!, n)));
    else if (REQUEST_PATH.test(name)) counts.forEach((n, i) => (requestPath[i] = Math.max(requestPath[i]!, n)));
  }
  return events.map((_, i) => ({ total: total[i]!, housekeeping: housekeeping[i]!, timers: timers[i]!, requestPath: requestPath[i]! }));
}

/** The misses of one cache level in a pass: code, data read, data written. */
interface LevelMisses {
  readonly code: DumpFigures;
  readonly read: DumpFigures;
  readonly write: DumpFigures;
}

/** What one counted pass read: instructions, and the misses of both levels when the cache simulator ran. */
interface PassFigures {
  readonly ir: DumpFigures;
  readonly l1: LevelMisses | null;
  readonly l2: LevelMisses | null;
}

/** An event's count outside V8's compilers and garbage collector and the timer phase. */
function ownCount(d: DumpFigures): number {
  return d.total - d.housekeeping - d.timers;
}

/** A process running under callgrindLauncher(dir, label): each dump is the next part. */
export class CallgrindProcess {
  readonly url: string;
  readonly pid: number;
  private readonly dir: string;
  private readonly label: string;
  /** Started with callgrindLauncher's cacheSim: the dumps hold L1 misses too. */
  private readonly cacheSim: boolean;
  private part = 0;

  constructor(target: { readonly url: string; readonly pid: number }, dir: string, label: string, cacheSim = false) {
    this.url = target.url;
    this.pid = target.pid;
    this.dir = dir;
    this.label = label;
    this.cacheSim = cacheSim;
  }

  /** Zero, count what `work` makes the process do, dump: the dump's file (read it with `read`). */
  async count(work: () => Promise<void>): Promise<string> {
    control(this.pid, '-z');
    control(this.pid, '-i', 'on');
    await work();
    control(this.pid, '-i', 'off');
    control(this.pid, '-d');
    this.part++;
    return join(this.dir, `callgrind.${this.label}.${this.pid}.${this.part}`);
  }

  /** A dump's figures (callgrind_annotate: seconds a dump with the cache simulator). */
  read(file: string): PassFigures {
    if (!this.cacheSim) return { ir: readDump(file, ['Ir'])[0]!, l1: null, l2: null };
    const [ir, i1, d1r, d1w, il, dlr, dlw] = readDump(file, ['Ir', ...CACHE_EVENTS]);
    return { ir: ir!, l1: { code: i1!, read: d1r!, write: d1w! }, l2: { code: il!, read: dlr!, write: dlw! } };
  }
}

/** Median, least and greatest of some figures. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

function spreadOf(values: readonly number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]! };
}

/** The index of the median of `values` (the lower of the two middles of an even count). */
function medianIndex(values: readonly number[]): number {
  const order = values.map((_, i) => i).sort((a, b) => values[a]! - values[b]!);
  return order[(order.length - 1) >> 1]!;
}

export interface InstructionCount {
  /** Instructions per request outside V8's compilers and garbage collector and the timer phase (the judged figure), over the windows. */
  readonly perRequest: Spread;
  /** Every instruction per request, those included. */
  readonly allPerRequest: Spread;
  /** The timer phase's instructions per request (TIMER_PHASE). */
  readonly timersPerRequest: Spread;
  /** The request path's instructions per request (REQUEST_PATH: the least window is the path alone). */
  readonly requestPathPerRequest: Spread;
  /**
   * With the cache simulator: L1 misses per request of code (I1) and of data (D1, reads and writes),
   * outside V8's compilers and garbage collector and the timer phase, as the instructions; else null.
   */
  readonly i1MissesPerRequest: Spread | null;
  readonly d1MissesPerRequest: Spread | null;
  /**
   * With the cache simulator: second-level misses per request, code and data together (lines fetched
   * from beyond the machine's L2 when callgrindLauncher was given it), counted as the L1 misses; else null.
   */
  readonly l2MissesPerRequest: Spread | null;
  readonly requests: number;
  readonly windows: number;
  /** The dump of the window whose own instruction count is the median (the lower of two middles). */
  readonly medianDump: string;
  /** The statuses answered in the counted windows. */
  readonly statuses: readonly number[];
}

/**
 * Sends `sequence` `warmups` times uncounted, then `windows` times, each counted on its own; the
 * figures are per request, the median of the windows.
 */
export async function countInstructions(p: CallgrindProcess, sequence: readonly RequestEntry[], warmups: number, windows: number): Promise<InstructionCount> {
  let client = await SequentialClient.connect(p.url);
  try {
    for (let i = 0; i < warmups; i++) for (const e of sequence) await client.request(e);
    const statuses: number[] = [];
    const own: number[] = [];
    const all: number[] = [];
    const timers: number[] = [];
    const requestPath: number[] = [];
    const i1: number[] = [];
    const d1: number[] = [];
    const l2: number[] = [];
    // The windows run back to back and their dumps are read after: reading one takes seconds (eight
    // callgrind_annotate runs with the cache simulator), and a keep-alive connection idle for 10 s is
    // closed by uWS, which ended cache-simulated runs with ECONNRESET.
    const countWindows = async (n: number): Promise<string[]> => {
      const made: string[] = [];
      for (let w = 0; w < n; w++) {
        made.push(
          await p.count(async () => {
            for (const e of sequence) statuses.push(await client.request(e));
          }),
        );
      }
      return made;
    };
    const dumps: string[] = [];
    let pending = await countWindows(windows);
    // A collection that starts inside a timer callback is subtracted twice (TIMER_PHASE): in a rare
    // window that leaves less than nothing, and such a window is counted again, at most twice over.
    for (let attempt = 0; pending.length > 0; attempt++) {
      const unreadable: string[] = [];
      for (const dump of pending) {
        const c = p.read(dump);
        if (ownCount(c.ir) <= 0 && attempt < 2) {
          unreadable.push(dump);
          continue;
        }
        dumps.push(dump);
        own.push(ownCount(c.ir) / sequence.length);
        all.push(c.ir.total / sequence.length);
        timers.push(c.ir.timers / sequence.length);
        requestPath.push(c.ir.requestPath / sequence.length);
        if (c.l1 !== null && c.l2 !== null) {
          i1.push(ownCount(c.l1.code) / sequence.length);
          d1.push((ownCount(c.l1.read) + ownCount(c.l1.write)) / sequence.length);
          l2.push((ownCount(c.l2.code) + ownCount(c.l2.read) + ownCount(c.l2.write)) / sequence.length);
        }
      }
      if (unreadable.length === 0) break;
      // Reading the dumps took seconds: a new connection, where uWS may have closed the idle one.
      client.close();
      client = await SequentialClient.connect(p.url);
      pending = await countWindows(unreadable.length);
    }
    return {
      perRequest: spreadOf(own),
      allPerRequest: spreadOf(all),
      timersPerRequest: spreadOf(timers),
      requestPathPerRequest: spreadOf(requestPath),
      i1MissesPerRequest: i1.length === 0 ? null : spreadOf(i1),
      d1MissesPerRequest: d1.length === 0 ? null : spreadOf(d1),
      l2MissesPerRequest: l2.length === 0 ? null : spreadOf(l2),
      requests: sequence.length,
      windows,
      medianDump: dumps[medianIndex(own)]!,
      statuses,
    };
  } finally {
    client.close();
  }
}
