/**
 * `npm run bench:startup -- [--baseline DIR] [--starts N] [--threads N]`
 *
 * What a start costs. Each round starts `rcd serve` on the benchmark's fixture bundle (a fresh SQLite
 * store that imports it) and reads the CPU of the whole process, every thread included, from /proc
 * the moment it prints "listening on", with the wall time until then; then stops it and times one
 * CLI command on the store it left (`rcd export`, CPU from bash's `time`). Every test of the suite
 * that starts a server pays the first; every fleet node and every restart pays it in production.
 *
 * With --baseline, the rounds alternate between this checkout and the baseline's, so the machine's
 * drift falls on both alike, and the verdict is this/base of the medians.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { cpuBenchOptions, intOption, UsageError } from '../harness/cli-options.js';
import { repoRoot, writeBundle } from '../fixtures/generate.js';
import { processCpuMicros } from '../harness/measure.js';
import { Supervisor, startServer } from '../harness/processes.js';
import { median } from '../harness/wrk.js';

const USAGE = `usage: npm run bench:startup -- [options]
  --baseline DIR   another checkout of rcd, built (npm run build), started in turn with this one
  --starts N       starts of each checkout (default 8, 1..50)
  --threads N      worker threads of the servers (default 2, 1..16)`;

interface Options {
  baseline: string | null;
  starts: number;
  threads: number;
}

function parse(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: { baseline: { type: 'string' }, starts: { type: 'string' }, threads: { type: 'string' } },
    strict: true,
  });
  const baseline = values.baseline === undefined ? null : resolve(values.baseline);
  if (baseline !== null && !existsSync(join(baseline, 'dist', 'src', 'cli.js'))) throw new UsageError(`--baseline ${baseline} is not a built checkout of rcd (no dist/src/cli.js)`);
  return { baseline, starts: intOption('starts', values.starts, 8, 1, 50), threads: intOption('threads', values.threads, 2, 1, 16) };
}

/** One start of one checkout. */
interface Start {
  /** CPU of the server process until "listening on", seconds. */
  serveCpu: number;
  /** Wall time from spawn to "listening on", ms. */
  serveMs: number;
  /** CPU of `rcd export` on the same store, seconds. */
  cliCpu: number;
}

async function startOnce(sup: Supervisor, root: string, bundle: string, threads: number): Promise<Start> {
  const dir = sup.tempDir('rcd-startup-');
  const store = `sqlite:${join(dir, 'rcd.db')}`;
  const began = performance.now();
  const server = await startServer(sup, { root, store, bundle, threads, label: 'server' });
  const serveMs = performance.now() - began;
  const serveCpu = processCpuMicros(server.pid) / 1e6;
  await sup.stopChild(server.child);
  const cliCpu = commandCpu(root, ['export', '--store', store]);
  return { serveCpu, serveMs, cliCpu };
}

/** User and system CPU of `node bin/rcd.js ARGS` in `root`, seconds (bash's time: the child's rusage). */
function commandCpu(root: string, args: readonly string[]): number {
  const command = ['node', join(root, 'bin', 'rcd.js'), ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const out = execFileSync('bash', ['-c', `TIMEFORMAT='%3U %3S'; { time ${command} >/dev/null; } 2>&1`], { encoding: 'utf8' });
  const [user, system] = out.trim().split('\n').pop()!.split(' ').map(Number);
  return user! + system!;
}

function row(label: string, starts: readonly Start[]): string {
  const cpu = median(starts.map((s) => s.serveCpu));
  const ms = median(starts.map((s) => s.serveMs));
  const cli = median(starts.map((s) => s.cliCpu));
  return `${label.padEnd(10)} serve CPU ${cpu.toFixed(3)} s  wall ${ms.toFixed(0).padStart(5)} ms  export CPU ${cli.toFixed(3)} s`;
}

async function main(): Promise<number> {
  const opts = cpuBenchOptions('bench:startup', process.argv.slice(2), parse, USAGE);
  if (opts === null) return 2;
  const sup = new Supervisor();
  sup.installCleanup('the start-up benchmark');
  try {
    const bundle = join(sup.tempDir('rcd-startup-bundle-'), 'bundle.json');
    writeBundle(bundle);
    const roots: [string, string][] = [['this', repoRoot()]];
    if (opts.baseline !== null) roots.push(['baseline', opts.baseline]);
    const results = new Map<string, Start[]>(roots.map(([label]) => [label, []]));
    for (let i = 0; i < opts.starts; i++) {
      // Alternate which side goes first, so that neither always follows the other.
      const order = i % 2 === 0 ? roots : [...roots].reverse();
      for (const [label, root] of order) results.get(label)!.push(await startOnce(sup, root, bundle, opts.threads));
    }
    process.stdout.write(`medians of ${opts.starts} starts, --threads ${opts.threads}\n`);
    for (const [label] of roots) process.stdout.write(`${row(label, results.get(label)!)}\n`);
    if (opts.baseline !== null) {
      const ratio = (f: (s: Start) => number): string => (median(results.get('this')!.map(f)) / median(results.get('baseline')!.map(f))).toFixed(3);
      process.stdout.write(`verdict: this/base serve CPU ${ratio((s) => s.serveCpu)}, wall ${ratio((s) => s.serveMs)}, export CPU ${ratio((s) => s.cliCpu)}\n`);
    }
    return 0;
  } finally {
    await sup.stopAll();
  }
}

process.exitCode = await main();
