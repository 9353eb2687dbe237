/**
 * The child processes a benchmark starts (servers, ceilings, load generators) and their cleanup:
 * whatever happens (success, failure, Ctrl-C, SIGTERM, an exception thrown from a callback), nothing
 * a run started may outlive it, and its temp dirs are removed. Shared by the suite (run.ts) and the
 * side-by-side comparison (ab.ts).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CeilingConfig, CeilingMessage, CeilingReply } from './ceiling-protocol.js';

export class Supervisor {
  /** Set once a signal asked the run to stop: loops check it between steps. */
  stopping = false;
  /** Called first when stopping everything (e.g. to stop an in-process load generator). */
  beforeStop: () => void = () => undefined;
  private readonly children = new Set<ChildProcess>();
  private readonly tempDirs = new Set<string>();
  private readonly expectedExits = new WeakSet<ChildProcess>();

  track(c: ChildProcess): ChildProcess {
    this.children.add(c);
    c.once('exit', () => this.children.delete(c));
    return c;
  }

  /** A fresh temp dir, removed with everything else. */
  tempDir(prefix: string): string {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    this.tempDirs.add(dir);
    return dir;
  }

  /** True when this child was stopped on purpose (its exit is not news). */
  expected(c: ChildProcess): boolean {
    return this.expectedExits.has(c);
  }

  /** SIGTERM (a server finishes in-flight requests and exits 0), SIGKILL after a grace period. */
  stopChild(c: ChildProcess, graceMs = 5000): Promise<void> {
    this.expectedExits.add(c);
    if (!alive(c)) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        if (alive(c)) c.kill('SIGKILL');
      }, graceMs);
      c.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      c.kill('SIGTERM');
    });
  }

  async stopAll(): Promise<void> {
    this.beforeStop();
    await Promise.all([...this.children].map((c) => this.stopChild(c)));
    for (const d of this.tempDirs) rmSync(d, { recursive: true, force: true });
    this.tempDirs.clear();
  }

  /** Ctrl-C and SIGTERM stop everything and exit 130 / 143; `what` names it in the message. */
  installCleanup(what: string): void {
    const onSignal = (signal: NodeJS.Signals): void => {
      if (this.stopping) return;
      this.stopping = true;
      process.stderr.write(`\n${signal}: stopping ${what}\n`);
      void this.stopAll().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    // Last resort for paths that skip stopAll (an exception thrown from a callback): nothing may outlive us.
    process.on('exit', () => {
      for (const c of this.children) if (alive(c)) c.kill('SIGKILL');
      for (const d of this.tempDirs) rmSync(d, { recursive: true, force: true });
    });
  }
}

function alive(c: ChildProcess): boolean {
  return c.exitCode === null && c.signalCode === null;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** A load target: where to send requests and which process to account CPU and memory to. */
export interface Target {
  readonly url: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Only for ceilings: change the answer. */
  configure(config: CeilingConfig): Promise<void>;
}

const TAIL_LINES = 40;

/** Keeps reading a child's output (a full pipe would block the server) and remembers the last lines for errors. */
export function drain(stream: NodeJS.ReadableStream, tail: string[], onLine?: (line: string) => void): void {
  let partial = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) {
      tail.push(l);
      if (tail.length > TAIL_LINES) tail.shift();
      onLine?.(l);
    }
  });
}

export interface ServerStart {
  /** The checkout whose `bin/rcd.js` runs (this one, or a baseline in ab.ts). */
  readonly root: string;
  /** The server's `--store` (`sqlite:FILE` or a PostgreSQL URL), filled from `bundle` at start. */
  readonly store: string;
  /** A bundle file (bench/fixtures/generate.ts) imported at start. */
  readonly bundle: string;
  /** Worker threads, or null for the server's default. */
  readonly threads: number | null;
  /** Delivery loops, or null (or absent) for the server's default. */
  readonly httpThreads?: number | null;
  /** Names the server in messages ("server", "baseline"). */
  readonly label: string;
  /** More `rcd serve` options (e.g. --tls-cert and --tls-key). */
  readonly args?: readonly string[];
  /** Options of node itself after the launcher's own (launcherNodeFlags), before bin/rcd.js. */
  readonly nodeArgs?: readonly string[];
  /** A command that runs node (e.g. valgrind and its options, bench/cost/callgrind.ts); none when absent. */
  readonly launcher?: readonly string[];
  /** How long start-up may take before it counts as failed, ms (default 120 s). */
  readonly startTimeoutMs?: number;
}

/**
 * node's own options for `rcd serve` from `root`, as its launcher gives them: the flags after `node`
 * on bin/rcd.js's first line (`#!/usr/bin/env -S node --single-threaded-gc`), which `npm start` and
 * the systemd unit pass too. A benchmark measures rcd as it runs: without them V8's helper threads
 * share every scavenge, and bench:ab (mapped, 3 starts of 4 rounds, this flag against none) read CPU
 * per request 0.983 / 0.986 / 0.990 with it. An older checkout's launcher gives its own flags.
 */
export function launcherNodeFlags(root: string): string[] {
  const first = readFileSync(join(root, 'bin', 'rcd.js'), 'utf8').split('\n', 1)[0]!;
  const m = /^#!\S*\benv\s+-S\s+node((?:\s+--\S+)*)\s*$/.exec(first);
  return m === null ? [] : m[1]!.trim().split(/\s+/).filter((f) => f !== '');
}

/** Starts `rcd serve` from `root` on a free port; resolves once it printed "listening on". */
export async function startServer(sup: Supervisor, start: ServerStart): Promise<Target> {
  const port = await freePort();
  const args = [
    ...launcherNodeFlags(start.root),
    ...(start.nodeArgs ?? []),
    join(start.root, 'bin', 'rcd.js'),
    'serve',
    '--store',
    start.store,
    '--import',
    start.bundle,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    // The benchmark measures the delivery API only: no admin listener competing for the CPU.
    '--admin',
    'false',
  ];
  if (start.threads !== null) args.push('--threads', String(start.threads));
  if (start.httpThreads !== undefined && start.httpThreads !== null) args.push('--http-threads', String(start.httpThreads));
  args.push(...(start.args ?? []));
  // Metrics stay on (their cost is part of what is measured), on any free port: two servers run at once.
  // Delivery at the priority of everything else on the box, as the bare ceiling runs: a loop raised
  // above wrk (--delivery-nice, the default where the process may) would not be compared like with
  // like. bench:edits measures what the raise does. A variable, so that older baselines ignore it.
  const env = { ...process.env, RCD_METRICS_PORT: '0', RCD_LOG_FORMAT: 'pretty', RCD_DELIVERY_NICE: '0' };
  const launcher = start.launcher ?? [];
  const [command, commandArgs] = launcher.length === 0 ? [process.execPath, args] : [launcher[0]!, [...launcher.slice(1), process.execPath, ...args]];
  const child = sup.track(spawn(command, commandArgs, { cwd: start.root, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const tail: string[] = [];
  const timeoutMs = start.startTimeoutMs ?? 120_000;
  return new Promise<Target>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`the ${start.label} did not print "listening on" within ${timeoutMs / 1000} s`)), timeoutMs);
    const fail = (err: Error): void => {
      clearTimeout(timer);
      void sup.stopChild(child, 1000);
      reject(new Error(`${err.message}\n--- ${start.label} output (last lines) ---\n${tail.join('\n')}`));
    };
    const onEarlyExit = (code: number | null, signal: string | null): void =>
      fail(new Error(`the ${start.label} exited during start-up (code ${code}, signal ${signal})`));
    child.once('error', fail);
    child.once('exit', onEarlyExit);
    drain(child.stderr as NodeJS.ReadableStream, tail);
    drain(child.stdout as NodeJS.ReadableStream, tail, (line) => {
      const m = /listening on (https?:\/\/[^\s]+)/.exec(line);
      if (m === null) return;
      clearTimeout(timer);
      child.off('exit', onEarlyExit);
      child.once('exit', (code, signal) => {
        if (!sup.stopping && !sup.expected(child)) {
          process.stderr.write(`\nthe ${start.label} exited (code ${code}, signal ${signal})\n--- last lines ---\n${tail.join('\n')}\n`);
        }
      });
      resolve({
        url: (m[1] as string).replace(/\/$/, ''),
        pid: child.pid as number,
        child,
        configure: () => Promise.reject(new Error('the real server is not configurable')),
      });
    });
  });
}

/**
 * Forks the bare-uWS ceiling (bench/harness/ceiling.ts) with `loops` apps on one port (as many as the
 * server's delivery loops); `tls` (certificate and key files) makes it serve HTTPS; `floor` makes it
 * the floor (bench/harness/ceiling.ts: the request-side work every server on this stack pays). Resolves once
 * it listens.
 */
export async function startCeiling(sup: Supervisor, tls: { cert: string; key: string } | null = null, loops = 1, floor = false, launcher: readonly string[] = []): Promise<Target> {
  const path = fileURLToPath(new URL('./ceiling.js', import.meta.url));
  const args = [String(loops), ...(tls === null ? [] : [tls.cert, tls.key]), ...(floor ? ['--floor'] : [])];
  // Under a launcher (valgrind) fork runs `launcher… node ceiling.js args`, the IPC channel passing through.
  const through = launcher.length === 0 ? {} : { execPath: launcher[0]!, execArgv: [...launcher.slice(1), process.execPath] };
  const child = sup.track(fork(path, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], ...through }));
  const timeoutMs = launcher.length === 0 ? 30_000 : 180_000;
  let onEarlyExit: (code: number | null) => void = () => undefined;
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the ceiling did not start within ${timeoutMs / 1000} s`)), timeoutMs);
    onEarlyExit = (code) => reject(new Error(`the ceiling exited during start-up (code ${code})`));
    child.once('exit', onEarlyExit);
    const onMessage = (m: CeilingReply): void => {
      if (m.type === 'listening') {
        clearTimeout(timer);
        child.off('message', onMessage);
        resolve(m.port);
      } else if (m.type === 'error') reject(new Error(m.message));
    };
    child.on('message', onMessage);
  });
  child.off('exit', onEarlyExit);
  return {
    url: `${tls === null ? 'http' : 'https'}://127.0.0.1:${port}`,
    pid: child.pid as number,
    child,
    configure(config) {
      return new Promise<void>((resolve) => {
        const onMessage = (m: CeilingReply): void => {
          if (m.type !== 'ok') return;
          child.off('message', onMessage);
          resolve();
        };
        child.on('message', onMessage);
        child.send({ type: 'set', config } satisfies CeilingMessage);
      });
    },
  };
}
