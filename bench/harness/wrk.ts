/**
 * The optional latency pass (`npm run bench -- --wrk`): the same requests, sent by wrk.
 *
 * Why a second client: autocannon parses HTTP in JavaScript on one core; at 100 connections on this
 * 2-core box it saturates near 25-30k req/s, and its own queueing then sets every latency it reports
 * (the bare ceiling's p99 under autocannon is 6-11 ms). wrk is C and reaches ~100k req/s here, so its
 * latencies are the server's. It does not check bodies: autocannon's run of the same scenario did.
 * wrk is a Debian package (`apt-get install wrk`), not an npm dependency; without it `--wrk` is refused.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RequestEntry } from './scenarios.js';
import { mainThreadSwitches, processCpuTimes } from './measure.js';

export interface WrkStats {
  readonly reqPerSec: number;
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly p999: number; readonly max: number };
  readonly non2xx: number;
  /** connect + read + write + timeout errors. */
  readonly socketErrors: number;
}

/** One stall: when it ended (ms since the epoch) and how late the probe woke (ms), and on which CPU. */
export interface StallEvent {
  readonly endedAt: number;
  readonly lateMs: number;
  /** The CPU the probe was pinned to; null for an unpinned probe. */
  readonly cpu: number | null;
}

/** What bench/harness/stall-probe.ts saw during one wrk run (its probes' figures together). */
export interface StallStats {
  /** True when the probe ran with real-time priority: a late wake-up was the machine, not CPU load. */
  readonly realtime: boolean;
  /** True when one probe ran pinned to each CPU: a stall of any one CPU is seen. */
  readonly perCpu: boolean;
  /** Wake-ups late by STALL_MS or more, on any CPU. */
  readonly stalls: number;
  readonly maxStallMs: number;
  /** Time lost in those stalls, summed. */
  readonly stalledMs: number;
  /** The stalls, in the order they ended. */
  readonly events: readonly StallEvent[];
  /**
   * Where asked for (startStallProbe's `latesFromMs`): every wake-up late by that much or more, the
   * stalls among them, in the order they ended. Short stops of a CPU pass under the stall threshold
   * one at a time; bench/edits/loop-pauses.ts adds them up over a pause of the delivery loop.
   */
  readonly lates?: readonly StallEvent[];
}

export interface WrkRound {
  readonly ceiling: WrkStats;
  readonly server: WrkStats;
  readonly ceilingStalls: StallStats;
  readonly serverStalls: StallStats;
}

/**
 * The latency pass of one scenario: `rounds` rounds, each the ceiling then the server for the full
 * duration. `server` and `ceiling` hold the median of the rounds, figure by figure (errors summed):
 * one window in which the machine itself stopped moves one round's p99, not the median.
 */
export interface WrkPass {
  readonly rounds: readonly WrkRound[];
  readonly server: WrkStats;
  readonly ceiling: WrkStats;
}

/** A late wake-up of the stall probe this long or longer counts as a machine stall: the p99 target's size. */
export const STALL_MS = 5;

export function wrkAvailable(): boolean {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  return r.error === undefined && /wrk/i.test(`${r.stdout}${r.stderr}`);
}

/**
 * A Lua string literal of the UTF-8 bytes of s: decimal escapes for anything but plain ASCII, always
 * three digits (Lua reads up to three, so `\34` before a digit would swallow it).
 */
function luaString(s: string): string {
  let out = '"';
  for (const b of Buffer.from(s, 'utf8')) {
    out += b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c ? String.fromCharCode(b) : `\\${String(b).padStart(3, '0')}`;
  }
  return out + '"';
}

/**
 * Writes a wrk script that cycles through the scenario's request pool, formatted once in init so
 * that sending a request costs wrk a table lookup.
 */
export function writeWrkScript(dir: string, name: string, pool: readonly RequestEntry[]): string {
  const lines = ['local entries = {'];
  for (const e of pool) {
    const headers = Object.entries(e.headers).map(([k, v]) => `[${luaString(k)}]=${luaString(v)}`).join(',');
    lines.push(`  {${luaString(e.method)},${luaString(e.path)},{${headers}},${e.body === undefined ? 'nil' : luaString(e.body)}},`);
  }
  lines.push(
    '}',
    'local formatted = {}',
    'local next = 0',
    'init = function(args)',
    '  for i, e in ipairs(entries) do formatted[i] = wrk.format(e[1], e[2], e[3], e[4]) end',
    'end',
    'request = function()',
    '  next = next % #formatted + 1',
    '  return formatted[next]',
    'end',
    // wrk's own --latency table has no p99.9; its histogram does (microseconds).
    'done = function(summary, latency, requests)',
    '  io.write(string.format("rcd-latency-us p50=%d p90=%d p99=%d p999=%d max=%d\\n",',
    '    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.max))',
    'end',
  );
  const path = join(dir, `wrk-${name}.lua`);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

/** Parses wrk's report and the script's `rcd-latency-us` line; throws when a figure is missing. */
export function parseWrkOutput(text: string): WrkStats {
  const lat = /^rcd-latency-us p50=(\d+) p90=(\d+) p99=(\d+) p999=(\d+) max=(\d+)\s*$/m.exec(text);
  if (lat === null) throw new Error(`wrk output has no rcd-latency-us line (the script's done()):\n${text}`);
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(text);
  if (rps === null) throw new Error(`wrk output has no Requests/sec:\n${text}`);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(text);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const socketErrors = sock === null ? 0 : sock.slice(1, 5).reduce((n, v) => n + Number(v), 0);
  const ms = (i: number): number => Number(lat[i]) / 1000;
  return {
    reqPerSec: Number(rps[1]),
    latencyMs: { p50: ms(1), p90: ms(2), p99: ms(3), p999: ms(4), max: ms(5) },
    non2xx: non2xx === null ? 0 : Number(non2xx[1]),
    socketErrors,
  };
}

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Per start of the servers (rounds tagged 1..starts, `--starts`), the median of `figure` over that
 * start's rounds, in start order; a start without rounds is left out.
 */
export function mediansByStart<R extends { readonly start: number }>(rounds: readonly R[], starts: number, figure: (r: R) => number): number[] {
  const out: number[] = [];
  for (let start = 1; start <= starts; start++) {
    const own = rounds.filter((r) => r.start === start);
    if (own.length > 0) out.push(median(own.map(figure)));
  }
  return out;
}

/** Figure-by-figure median of several runs; errors are summed (any error in any round is a problem). */
export function medianOfRuns(runs: readonly WrkStats[]): WrkStats {
  if (runs.length === 0) throw new Error('medianOfRuns needs at least one run');
  const m = (pick: (w: WrkStats) => number): number => median(runs.map(pick));
  return {
    reqPerSec: m((w) => w.reqPerSec),
    latencyMs: {
      p50: m((w) => w.latencyMs.p50),
      p90: m((w) => w.latencyMs.p90),
      p99: m((w) => w.latencyMs.p99),
      p999: m((w) => w.latencyMs.p999),
      max: m((w) => w.latencyMs.max),
    },
    non2xx: runs.reduce((n, w) => n + w.non2xx, 0),
    socketErrors: runs.reduce((n, w) => n + w.socketErrors, 0),
  };
}

/**
 * Runs a child to its end with stdout and stderr collected; resolves with `parse(output)` when it
 * exits 0 (with `anyExit`, however it ended: a child stopped by a signal may have printed what it
 * has). `track` registers the child for cleanup on Ctrl-C or failure.
 */
function runToEnd<T>(label: string, cmd: string, args: readonly string[], track: (c: ChildProcess) => void, parse: (out: string) => T, anyExit = false): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.once('error', reject);
    // 'close', not 'exit': a child may exit before its piped output has been read to the end, and
    // wrk's report (printed last) then went missing from `out` (seen twice on one day under load).
    child.once('close', (code, signal) => {
      if (code !== 0 && !anyExit) {
        reject(new Error(`${label} exited with ${code}:\n${out}`));
        return;
      }
      try {
        resolve(parse(out));
      } catch (err) {
        reject(new Error(`${label} ended (code ${code}, signal ${signal}) without a readable report (${(err as Error).message}):\n${out}`));
      }
    });
  });
}

/**
 * One wrk run (one thread, `connections` connections); `track` registers the child for cleanup (and
 * may keep it: SIGINT ends wrk early with its report of the run so far). `timeoutSec` replaces wrk's
 * 2 s request timeout, for runs that measure pauses longer than that rather than count them as errors.
 * `cpu` runs wrk on that CPU alone (taskset; see tasksetAvailable).
 */
export function runWrk(url: string, script: string, connections: number, durationSec: number, track: (c: ChildProcess) => void, timeoutSec?: number, cpu?: number): Promise<WrkStats> {
  const args = ['-t1', `-c${connections}`, `-d${wholeSeconds(durationSec)}s`, '-s', script, url];
  if (timeoutSec !== undefined) args.splice(3, 0, '--timeout', `${wholeSeconds(timeoutSec)}s`);
  if (cpu !== undefined) {
    const [launcher, ...options] = onCpu(cpu);
    return runToEnd('wrk', launcher!, [...options, 'wrk', ...args], track, parseWrkOutput);
  }
  return runToEnd('wrk', 'wrk', args, track, parseWrkOutput);
}

/** The launcher that runs a command on one CPU (util-linux's taskset; its threads inherit the mask). */
export function onCpu(cpu: number): string[] {
  return ['taskset', '-c', String(cpu)];
}

/** Whether taskset can bind a command to CPUs 0 and 1 here (a machine of one CPU cannot). */
export function tasksetAvailable(): boolean {
  return succeeds('taskset', ['-c', '1', 'true']);
}

/** One wrk run against a server, with the server's CPU over it (all its threads, from /proc). */
export interface WrkLoad {
  readonly wrk: WrkStats;
  /** Server CPU per request, µs (user + system). */
  readonly cpuUsPerReq: number;
  /** Of which in the process's own code (utime) and in the kernel on its behalf (stime), µs per request. */
  readonly userUsPerReq: number;
  readonly systemUsPerReq: number;
  /**
   * Context switches of the server's main thread per request (measure.ts mainThreadSwitches):
   * preemptions (the kernel ran another task while the loop could run: each costs the switch and
   * the caches the other task evicted) and waits (the loop slept in epoll: it was not saturated).
   */
  readonly preemptionsPerReq: number;
  readonly waitsPerReq: number;
}

/** runWrk against `target` (wrk on CPU `cpu` when given), reading its process's CPU before and after. */
export async function loadWithCpu(target: { readonly url: string; readonly pid: number }, script: string, connections: number, durationSec: number, track: (c: ChildProcess) => void, cpu?: number): Promise<WrkLoad> {
  const cpu0 = processCpuTimes(target.pid);
  const switches0 = mainThreadSwitches(target.pid);
  const wrk = await runWrk(target.url, script, connections, durationSec, track, undefined, cpu);
  const cpu1 = processCpuTimes(target.pid);
  const switches1 = mainThreadSwitches(target.pid);
  const requests = wrk.reqPerSec * durationSec;
  const per = (n: number): number => (requests > 0 ? n / requests : 0);
  const user = per(cpu1.user - cpu0.user);
  const system = per(cpu1.system - cpu0.system);
  return {
    wrk,
    cpuUsPerReq: user + system,
    userUsPerReq: user,
    systemUsPerReq: system,
    preemptionsPerReq: per(switches1.involuntary - switches0.involuntary),
    waitsPerReq: per(switches1.voluntary - switches0.voluntary),
  };
}

function wholeSeconds(durationSec: number): number {
  return Math.max(1, Math.round(durationSec));
}

const worksHere = new Map<string, boolean>();

/** Whether `command args…` runs and exits 0 here; asked once per process. */
function succeeds(command: string, args: readonly string[]): boolean {
  const key = [command, ...args].join(' ');
  let works = worksHere.get(key);
  if (works === undefined) {
    const r = spawnSync(command, args, { stdio: 'ignore' });
    works = r.error === undefined && r.status === 0;
    worksHere.set(key, works);
  }
  return works;
}

/** Whether `chrt -f 1` works here (util-linux installed and the permission to use SCHED_FIFO). */
function canRunRealtime(): boolean {
  return succeeds('chrt', ['-f', '1', 'true']);
}

/** Whether `taskset -c 0` works here (util-linux, and CPU 0 in this process's affinity). */
function canPin(): boolean {
  return succeeds('taskset', ['-c', '0', 'true']);
}

/** Probes pinned one per CPU up to this many CPUs; a larger machine gets one unpinned probe. */
const MAX_PINNED_PROBES = 8;

const PROBE = fileURLToPath(new URL('./stall-probe.js', import.meta.url));

/** Starts bench/harness/stall-probe.ts for `durationSec`; resolves with what it saw. */
export function runStallProbe(durationSec: number, track: (c: ChildProcess) => void): Promise<StallStats> {
  return startStallProbe(durationSec, track).result;
}

/** The stalls of several probe runs taken together (one figure for runs of the same condition). */
export function mergeStallStats(runs: readonly StallStats[]): StallStats {
  return {
    realtime: runs.every((r) => r.realtime),
    perCpu: runs.every((r) => r.perCpu),
    stalls: runs.reduce((n, r) => n + r.stalls, 0),
    maxStallMs: Math.max(0, ...runs.map((r) => r.maxStallMs)),
    stalledMs: runs.reduce((n, r) => n + r.stalledMs, 0),
    events: runs.flatMap((r) => r.events).sort((a, b) => a.endedAt - b.endedAt),
    ...(runs.length > 0 && runs.every((r) => r.lates !== undefined) ? { lates: runs.flatMap((r) => r.lates ?? []).sort((a, b) => a.endedAt - b.endedAt) } : {}),
  };
}

interface ProbeOutput {
  readonly stalls: number;
  readonly maxStallMs: number;
  readonly stalledMs: number;
  readonly events: readonly (readonly [number, number])[];
  readonly lates?: readonly (readonly [number, number])[];
}

/**
 * Stall probes running for at most `durationSec`, one pinned to each CPU where `taskset` works (a
 * guest's CPUs stall one at a time: bench/harness/stall-probe.ts); `stop()` ends them early with what they
 * saw so far. Their figures are taken from their output whatever way they ended: a SIGINT that lands
 * while node is already exiting ends one by the signal, after it printed them. With `latesFromMs`,
 * the result also lists every wake-up late by that much (`lates`).
 */
export function startStallProbe(durationSec: number, track: (c: ChildProcess) => void, latesFromMs: number | null = null): { readonly result: Promise<StallStats>; stop(): void } {
  const realtime = canRunRealtime();
  const cpuCount = cpus().length;
  const pinned = cpuCount <= MAX_PINNED_PROBES && canPin();
  const probeArgs = [PROBE, String(durationSec), String(STALL_MS), '--await-go', ...(latesFromMs === null ? [] : ['--lates-from', String(latesFromMs)])];
  const children: ChildProcess[] = [];
  const runs = (pinned ? Array.from({ length: cpuCount }, (_, i) => i) : [null]).map((cpu) => {
    const keep = (c: ChildProcess): void => {
      children.push(c);
      track(c);
      c.stdout?.once('data', () => raise(c, cpu, realtime));
    };
    return runToEnd('stall probe', process.execPath, probeArgs, keep, (out) => ({ cpu, seen: JSON.parse(lastLine(out)) as ProbeOutput }), true);
  });
  const result = Promise.all(runs).then((all): StallStats => {
    const listed = (pick: (seen: ProbeOutput) => readonly (readonly [number, number])[]): StallEvent[] =>
      all.flatMap(({ cpu, seen }) => pick(seen).map(([endedAt, lateMs]) => ({ endedAt, lateMs, cpu }))).sort((a, b) => a.endedAt - b.endedAt);
    return {
      realtime,
      perCpu: pinned,
      stalls: all.reduce((n, r) => n + r.seen.stalls, 0),
      maxStallMs: Math.max(0, ...all.map((r) => r.seen.maxStallMs)),
      stalledMs: all.reduce((n, r) => n + r.seen.stalledMs, 0),
      events: listed((seen) => seen.events),
      ...(latesFromMs === null ? {} : { lates: listed((seen) => seen.lates ?? []) }),
    };
  });
  return {
    result,
    stop: () => {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
    },
  };
}

/**
 * Once the probe's Node is up (its first output, `ready`): its probing thread, which is the main
 * thread, pinned to `cpu` and raised to real time (`taskset -p`, `chrt -p` act on that thread only;
 * Node's helper threads stay where they were), then told to start.
 */
function raise(child: ChildProcess, cpu: number | null, realtime: boolean): void {
  const pid = String(child.pid);
  if (cpu !== null) spawnSync('taskset', ['-p', '-c', String(cpu), pid], { stdio: 'ignore' });
  if (realtime) spawnSync('chrt', ['-f', '-p', '1', pid], { stdio: 'ignore' });
  child.kill('SIGUSR2');
}

function lastLine(out: string): string {
  const lines = out.trim().split('\n');
  return lines[lines.length - 1] ?? '';
}

async function probedRun(url: string, script: string, connections: number, durationSec: number, track: (c: ChildProcess) => void): Promise<[WrkStats, StallStats]> {
  const probe = runStallProbe(wholeSeconds(durationSec), track);
  const wrk = runWrk(url, script, connections, durationSec, track);
  return [await wrk, await probe];
}

/**
 * The --wrk pass of one scenario: `rounds` times the ceiling, then the server, each for `durationSec`
 * with the stall probe beside it. Interleaved so that a slow minute of a shared machine lands on
 * both servers rather than on one.
 */
export async function runWrkPass(
  serverUrl: string,
  ceilingUrl: string,
  script: string,
  connections: number,
  durationSec: number,
  rounds: number,
  track: (c: ChildProcess) => void,
  shouldStop: () => boolean,
): Promise<WrkPass> {
  const done: WrkRound[] = [];
  for (let i = 0; i < rounds && !shouldStop(); i++) {
    const [ceiling, ceilingStalls] = await probedRun(ceilingUrl, script, connections, durationSec, track);
    const [server, serverStalls] = await probedRun(serverUrl, script, connections, durationSec, track);
    done.push({ ceiling, server, ceilingStalls, serverStalls });
  }
  if (done.length === 0) throw new Error('wrk pass stopped before its first round');
  return { rounds: done, server: medianOfRuns(done.map((r) => r.server)), ceiling: medianOfRuns(done.map((r) => r.ceiling)) };
}
