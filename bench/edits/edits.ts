/**
 * `npm run bench:edits -- [--items N] [--duration S] [--rounds R] [--write-every MS] [--connections N] [--smoke]`
 *
 * Edits under load: a store of N small items in one environment (written with `rcd import`), two
 * `rcd serve` processes on that one SQLite file (A takes the load, the writes and the import; B is
 * where an edit must become visible), and five phases of wrk on a plain content request of A:
 * without writes; with one admin PUT every MS ms through A while B is polled for each new hash
 * (these two alternate in R rounds of S/R seconds each, and their figures are the median over the
 * rounds, so that a slow stretch of a shared host falls on both instead of deciding the ratio);
 * then, with A restarted with its loop-delay log on (RCD_LOOP_DELAY_LOG_MS, src/runtime/loop-delay.ts,
 * read per phase), the load without writes (the pauses and run-queue wait of the load alone), the
 * writes again and an ~8 MiB bundle POSTed to A's admin import. The log's own work (a collection
 * counter, a 1 ms timer) can cost time, so latency is judged on the first two phases and pauses on
 * the last three; stall probes pinned one to each CPU run beside every phase, so a pause of A's loop
 * can be laid beside a CPU the host did not run at that moment (bench/harness/stall-probe.ts). Everything
 * it starts is stopped and its temp dir removed on success, failure, Ctrl-C and SIGTERM.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { cpus, hostname, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { intOption } from '../harness/cli-options.js';
import {
  evaluateEditsTargets,
  percentileOf,
  percentiles,
  renderEditsText,
  writeEditsResults,
  type EditsOptions,
  type EditsResults,
  type ImportStats,
  type LatencyPhase,
  type PhaseResult,
  type ProcessStart,
  type WriteStats,
} from './edits-report.js';
import { BENCH_ENV, BENCH_KEY, buildBundle, prng, repoRoot, smallItemDoc, type FixtureItem } from '../fixtures/generate.js';
import { localResultsDir } from '../harness/results-dir.js';
import { isLinuxProcAvailable, memoryStatus } from '../harness/measure.js';
import { Supervisor, drain, freePort, launcherNodeFlags } from '../harness/processes.js';
import type { RequestEntry } from '../harness/scenarios.js';
import { loopDelayIn, parseLoopDelayLine, type LoopDelayLine } from './loop-pauses.js';
import { medianOfRuns, mergeStallStats, runWrk, startStallProbe, wrkAvailable, writeWrkScript, type StallStats, type WrkStats } from '../harness/wrk.js';

const USAGE = `usage: npm run bench:edits -- [options]
  --items N          content items in the store (default 50000; --smoke: 500; max 1000000)
  --duration S       seconds of each load phase (default 20, enough for 200 writes at 100 ms; --smoke: 2; max 600)
  --rounds R         phases 1-2 alternate in R rounds of S/R s each way, figures the median over rounds
                     (default 5; --smoke: 2; 1..20; S/R is rounded down and at least 1 s)
  --write-every MS   one admin write every MS ms during the write phase (default 100; 10..60000)
  --connections N    wrk connections on the plain request (default 10; max 1000)
  --smoke            ~500 items, 2 s phases, a 1 MiB import: checks that every figure is produced, not speed
  --out DIR          results directory (default $RCD_BENCH_RESULTS, else bench/results/local; --smoke: a temp dir)`;

interface Options extends EditsOptions {
  readonly outDir: string;
}

/** Give up on an edit this long after its write answered: a process that never sees the edit must not hang the run. */
const VISIBLE_WAIT_MS = 2000;
/** How often B is asked for an edited item while waiting for it. */
const POLL_EVERY_MS = 5;
const LOOP_DELAY_LOG_MS = 1000;
const FULL_IMPORT_BYTES = 8 * 1048576;
const SMOKE_IMPORT_BYTES = 1048576;
/**
 * RSS has settled when it made no new low (1% lower) for this long; the wait is bounded. V8's memory
 * reducer collects the start-up garbage 10-40 s after start: a shorter quiet window (8 s was tried)
 * declared a process settled before the reducer ran and reported the start-up peak as settled.
 */
const SETTLE_QUIET_SEC = 40;
const SETTLE_MAX_SEC = 90;
const SETTLE_MAX_SEC_SMOKE = 3;
/** The import is sent this long after its load run started, so the figures hold a calm stretch first. */
const IMPORT_AFTER_SEC = 1;
const WARMUP_SEC = 2;
/** The import phase's load lasts until the import answered, at most this long. */
const MAX_LOAD_SEC = 600;
/**
 * The probes list every wake-up late by this much, not only the 5 ms stalls: on this VM the host
 * also takes a CPU in 1-4 ms slices, several within one pause of the loop, which the loop's thread
 * counts as run time and no single stall shows (bench/edits/loop-pauses.ts adds them up). About 2-3 a
 * second on each CPU under load.
 */
const LATES_FROM_MS = 1;
/** wrk's request timeout: long enough that a delivery pause of seconds is measured as latency, not counted as an error. */
const WRK_TIMEOUT_SEC = 30;
/** wrk's plain request cycles over these items; writes go to others. */
const LOAD_ITEMS = 64;
const ADMIN_TOKEN = 'rcd-bench-edits-admin-token-0001';
const ENV = BENCH_ENV;

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      items: { type: 'string' },
      duration: { type: 'string' },
      rounds: { type: 'string' },
      'write-every': { type: 'string' },
      connections: { type: 'string' },
      smoke: { type: 'boolean', default: false },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const smoke = values.smoke === true;
  const items = intOption('items', values.items, smoke ? 500 : 50_000, LOAD_ITEMS * 2, 1_000_000);
  return {
    items,
    durationSec: intOption('duration', values.duration, smoke ? 2 : 20, 1, 600),
    rounds: intOption('rounds', values.rounds, smoke ? 2 : 5, 1, 20),
    writeEveryMs: intOption('write-every', values['write-every'], 100, 10, 60_000),
    connections: intOption('connections', values.connections, 10, 1, 1000),
    smoke,
    importBytes: smoke ? SMOKE_IMPORT_BYTES : FULL_IMPORT_BYTES,
    visibleWaitMs: VISIBLE_WAIT_MS,
    loopDelayLogMs: LOOP_DELAY_LOG_MS,
    outDir: values.out ?? (smoke ? join(tmpdir(), 'rcd-bench-smoke') : localResultsDir()),
  };
}

// ---------------------------------------------------------------- fixtures

function itemId(i: number): string {
  return `Item${String(i).padStart(6, '0')}`;
}

/** N small items (the suite's small generated documents), one environment, the bench key. */
function storeBundle(items: number): unknown {
  const rand = prng(0xed17_2026);
  const content: Record<string, FixtureItem> = {};
  for (let i = 0; i < items; i++) content[itemId(i)] = { revisions: [{ json: smallItemDoc(rand, itemId(i)), minAppVersion: null }], mapping: null };
  return buildBundle({ environments: { [ENV]: content } });
}

/** About `bytes` of new small items for the same environment (the one under load): what a big release import looks like. */
function importBundle(bytes: number): { text: string; items: number } {
  const rand = prng(0x1a7b_2026);
  const content: Record<string, unknown> = {};
  let size = 64;
  let n = 0;
  while (size < bytes) {
    const id = `Import${String(n).padStart(6, '0')}`;
    const entry = { json: smallItemDoc(rand, id) };
    content[id] = entry;
    size += JSON.stringify(entry).length + id.length + 4;
    n++;
  }
  return { text: JSON.stringify({ environments: { [ENV]: { content } } }), items: n };
}

// ---------------------------------------------------------------- processes

const sup = new Supervisor();

interface Served {
  readonly label: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly adminUrl: string;
  readonly startupMs: number;
  readonly rssAfterStartBytes: number;
  /** Lines of this process's stdout seen so far, with the time they arrived (performance.now()). */
  readonly loopDelayLines: LoopDelayLine[];
  /** What the process said at start about the CPU priority of bulk edits (src/runtime/priority.ts). */
  readonly bulkPriority: string | null;
  /** ... and of its delivery loops. */
  readonly deliveryPriority: string | null;
}

/** Starts `rcd serve` on the store without importing anything; resolves at "listening on". */
async function startServe(label: string, dbPath: string, dataDir: string, loopDelay: boolean): Promise<Served> {
  const root = repoRoot();
  const [port, adminPort] = [await freePort(), await freePort()];
  const args = [...launcherNodeFlags(root), join(root, 'bin', 'rcd.js'), 'serve', '--store', `sqlite:${dbPath}`, '--data-dir', dataDir, '--host', '127.0.0.1', '--port', String(port)];
  args.push('--admin-host', '127.0.0.1', '--admin-port', String(adminPort), '--seed-demo', 'false');
  const env: NodeJS.ProcessEnv = { ...process.env, RCD_ADMIN_TOKEN: ADMIN_TOKEN, RCD_METRICS_PORT: '0', RCD_LOG_FORMAT: 'pretty' };
  if (loopDelay) env.RCD_LOOP_DELAY_LOG_MS = String(LOOP_DELAY_LOG_MS);
  else delete env.RCD_LOOP_DELAY_LOG_MS;
  const spawned = performance.now();
  const child = sup.track(spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const tail: string[] = [];
  const loopDelayLines: LoopDelayLine[] = [];
  let bulkPriority: string | null = null;
  let deliveryPriority: string | null = null;
  return new Promise<Served>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`process ${label} did not print "listening on" within 300 s`)), 300_000);
    const fail = (err: Error): void => {
      clearTimeout(timer);
      void sup.stopChild(child, 1000);
      reject(new Error(`${err.message}\n--- process ${label} output (last lines) ---\n${tail.join('\n')}`));
    };
    const onEarlyExit = (code: number | null, signal: string | null): void => fail(new Error(`process ${label} exited during start-up (code ${code}, signal ${signal})`));
    child.once('error', fail);
    child.once('exit', onEarlyExit);
    drain(child.stderr as NodeJS.ReadableStream, tail);
    drain(child.stdout as NodeJS.ReadableStream, tail, (line) => {
      const d = parseLoopDelayLine(line, performance.now());
      if (d !== null) {
        loopDelayLines.push(d);
        return;
      }
      if (line.startsWith('rcd: bulk edits ')) bulkPriority = line.slice('rcd: '.length);
      if (line.startsWith('rcd: delivery loops ')) deliveryPriority = line.slice('rcd: '.length);
      if (!/^rcd: listening on http:/.test(line)) return;
      const startupMs = performance.now() - spawned;
      clearTimeout(timer);
      child.off('exit', onEarlyExit);
      child.once('exit', (code, signal) => {
        if (!sup.stopping && !sup.expected(child)) process.stderr.write(`\nprocess ${label} exited (code ${code}, signal ${signal})\n--- last lines ---\n${tail.join('\n')}\n`);
      });
      resolve({
        label,
        child,
        pid: child.pid as number,
        url: `http://127.0.0.1:${port}`,
        adminUrl: `http://127.0.0.1:${adminPort}/admin/v1`,
        startupMs,
        rssAfterStartBytes: memoryStatus(child.pid as number).rss,
        loopDelayLines,
        bulkPriority,
        deliveryPriority,
      });
    });
  });
}

interface Settled {
  readonly rssBytes: number;
  readonly peakBytes: number;
  readonly seconds: number;
}

function processStart(s: Served, settled: Settled | null): ProcessStart {
  return {
    startupMs: s.startupMs,
    rssAfterStartBytes: s.rssAfterStartBytes,
    rssEndBytes: memoryStatus(s.pid).rss,
    rssSettledBytes: settled?.rssBytes ?? null,
    rssPeakBytes: settled?.peakBytes ?? null,
    bulkPriority: s.bulkPriority,
    deliveryPriority: s.deliveryPriority,
    settleSec: settled?.seconds ?? null,
  };
}

/**
 * Waits, with no load, until A's RSS stopped falling: start-up leaves the snapshot's garbage in the
 * heaps of the delivery loop and the control thread until V8's memory reducer collects it (10-40 s
 * after start at 100,000 items on the 2-core VM). Settled = no new low for SETTLE_QUIET_SEC.
 */
async function settleRss(pid: number, maxSec: number): Promise<Settled> {
  const started = performance.now();
  let low = memoryStatus(pid).rss;
  let lowAt = started;
  while (performance.now() - started < maxSec * 1000 && performance.now() - lowAt < SETTLE_QUIET_SEC * 1000) {
    await sleep(500);
    const rss = memoryStatus(pid).rss;
    if (rss < low * 0.99) {
      low = rss;
      lowAt = performance.now();
    }
  }
  const m = memoryStatus(pid);
  return { rssBytes: Math.min(low, m.rss), peakBytes: m.peakRss, seconds: Math.round((performance.now() - started) / 100) / 10 };
}

// ---------------------------------------------------------------- measuring

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const track = (c: ChildProcess): void => void sup.track(c);

interface LoadRun {
  readonly wrk: WrkStats;
  readonly stalls: StallStats;
  readonly startedAt: number;
  readonly endedAt: number;
}

/** The stall probe in one-second runs for as long as `running` says: a phase's end need not be known at its start. */
/**
 * wrk on A's plain request, the stall probe beside it, `during` alongside. The load runs `seconds`;
 * with `untilDuring`, it goes on until `during` finished and 1.5 loop-delay intervals more (wrk is
 * started for MAX_LOAD_SEC and stopped with SIGINT, which makes it report the run so far).
 */
async function loadPhase<T>(a: Served, script: string, connections: number, seconds: number, untilDuring: boolean, during: (startedAt: number) => Promise<T>): Promise<[LoadRun, T]> {
  const startedAt = performance.now();
  let wrkChild: ChildProcess | null = null;
  const keep = (c: ChildProcess): void => {
    wrkChild = c;
    track(c);
  };
  // One probe for the whole load, stopped with it: started once a second instead, each start of node
  // at real-time priority took a core for tens of ms and made delivery pauses of up to ~60 ms of its own.
  const probe = startStallProbe(MAX_LOAD_SEC, track, LATES_FROM_MS);
  const wrk = runWrk(a.url, script, connections, untilDuring ? MAX_LOAD_SEC : seconds, keep, WRK_TIMEOUT_SEC).finally(() => probe.stop());
  const extra = during(startedAt);
  if (untilDuring) {
    await extra.catch(() => undefined);
    await sleep(Math.max(startedAt + seconds * 1000 - performance.now(), LOOP_DELAY_LOG_MS + 500));
    (wrkChild as ChildProcess | null)?.kill('SIGINT');
  }
  const w = await wrk;
  const endedAt = performance.now();
  return [{ wrk: w, stalls: await probe.result, startedAt, endedAt }, await extra];
}

function phaseResult(a: Served, run: LoadRun): PhaseResult {
  return { durationSec: Math.round((run.endedAt - run.startedAt) / 100) / 10, wrk: run.wrk, loopDelay: loopDelayIn(a.loopDelayLines, LOOP_DELAY_LOG_MS, run.stalls, run.startedAt, run.endedAt), machineStalls: run.stalls };
}

interface WriteRecord {
  readonly status: number;
  readonly adminMs: number;
  /** null: not visible on B within the wait. */
  visibleMs: number | null;
  visibleAtAnswer: boolean;
}

const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** B's hash of an item through the wrapped answer, or null when it does not answer 200. */
async function servedHash(b: Served, id: string): Promise<string | null> {
  const res = await fetch(`${b.url}/api/v1/config/${id}/dynamic`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': BENCH_KEY },
    body: '{"u":"edits-probe"}',
  });
  const text = await res.text();
  if (res.status !== 200) return null;
  return (JSON.parse(text) as { hash?: string }).hash ?? null;
}

/** Polls B until it serves `hash` for the item (or gives up `waitMs` after the write answered). */
async function waitVisible(b: Served, id: string, hash: string, sentAt: number, waitMs: number, rec: WriteRecord): Promise<void> {
  const giveUpAt = performance.now() + waitMs;
  for (let first = true; ; first = false) {
    if ((await servedHash(b, id)) === hash) {
      rec.visibleMs = performance.now() - sentAt;
      rec.visibleAtAnswer = first;
      return;
    }
    if (performance.now() >= giveUpAt || sup.stopping) return;
    await sleep(POLL_EVERY_MS);
  }
}

/** The writes of one load run: how many its schedule asked for and what became of each. */
interface WriteBatch {
  readonly scheduled: number;
  readonly records: readonly WriteRecord[];
}

/**
 * One admin PUT every `opts.writeEveryMs` for `seconds`, one at a time (admin writes queue in the
 * server anyway: a write slower than the interval delays the next rather than piling them up); each
 * one a new text of another item, numbered from `firstEdit`. Each answered write starts a poll of B
 * for its hash. After a slow write the writes it held up go one after another, each when the one
 * before answered, until the schedule is met again: never two at once, and a run is short of writes
 * only if they are held up past its end (making up one interval only, one 316 ms write left a phase
 * at 199 of the 200 edits the visibility target counts).
 */
async function writer(a: Served, b: Served, opts: Options, seconds: number, firstEdit: number, startedAt: number): Promise<WriteBatch> {
  const end = startedAt + seconds * 1000;
  const scheduled = Math.floor((seconds * 1000) / opts.writeEveryMs);
  const records: WriteRecord[] = [];
  const polls: Promise<void>[] = [];
  let next = startedAt;
  // Bounded by count as well as by time: a timer may wake a fraction of a millisecond before `end`.
  for (let i = 0; i < scheduled && !sup.stopping; i++) {
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
    if (performance.now() >= end) break;
    const edit = firstEdit + i;
    const id = itemId(LOAD_ITEMS + (edit % (opts.items - LOAD_ITEMS)));
    const text = `// edit ${edit}\n{"schema":1,"name":"${id}","edit":${edit},"at":${Date.now()}}\n`;
    const sentAt = performance.now();
    let status = 0;
    let hash: string | null = null;
    try {
      const res = await fetch(`${a.adminUrl}/environments/${ENV}/content/${id}`, { method: 'PUT', headers: AUTH, body: text });
      status = res.status;
      const body = (await res.json()) as { hash?: string };
      hash = body.hash ?? null;
    } catch {
      // Counted as failed (status 0).
    }
    const rec: WriteRecord = { status, adminMs: performance.now() - sentAt, visibleMs: null, visibleAtAnswer: false };
    records.push(rec);
    if (status === 200 && hash !== null) polls.push(waitVisible(b, id, hash, sentAt, opts.visibleWaitMs, rec));
    next += opts.writeEveryMs;
  }
  await Promise.all(polls);
  return { scheduled, records };
}

/** The figures of the writes of one or more load runs, taken together. */
function writeStats(batches: readonly WriteBatch[], visibleWaitMs: number): WriteStats {
  const records = batches.flatMap((w) => w.records);
  const answered = records.filter((r) => r.status === 200);
  const visible = answered.filter((r) => r.visibleMs !== null);
  // Not visible sorts after every visible write: a percentile landing there is "not visible" (null).
  const sorted = answered.map((r) => r.visibleMs ?? Number.POSITIVE_INFINITY).sort((x, y) => x - y);
  const finite = (n: number): number | null => (Number.isFinite(n) ? n : null);
  return {
    scheduled: batches.reduce((n, w) => n + w.scheduled, 0),
    sent: records.length,
    failed: records.length - answered.length,
    adminMs: percentiles(answered.map((r) => r.adminMs)),
    visible: visible.length,
    notVisible: answered.length - visible.length,
    visibleAtAnswer: visible.filter((r) => r.visibleAtAnswer).length,
    visibleWaitMs,
    visibleMs:
      sorted.length === 0
        ? { p50: null, p99: null, max: null }
        : { p50: finite(percentileOf(sorted, 50)), p99: finite(percentileOf(sorted, 99)), max: finite(sorted[sorted.length - 1] as number) },
  };
}

/** What the alternated rounds of phases 1-2 measured: each condition's load runs, in order, and the writes. */
interface Rounds {
  readonly quiet: LoadRun[];
  readonly busy: LoadRun[];
  readonly writes: WriteBatch[];
}

/**
 * Phases 1-2: `opts.rounds` rounds of `seconds` without writes and `seconds` with, the order
 * alternating (without first in odd rounds, with first in even ones) so that neither condition is
 * always the earlier one. On this shared 2-core VM the host stops a CPU for 5-25 ms in bursts that
 * come and go over tens of seconds (58 such stalls in one 20 s phase, 8 in the next); with one run of
 * each, a burst in one of them alone decided the p99 ratio.
 */
async function latencyRounds(a: Served, b: Served, script: string, opts: Options, seconds: number): Promise<Rounds> {
  const out: Rounds = { quiet: [], busy: [], writes: [] };
  for (let round = 1; round <= opts.rounds && !sup.stopping; round++) {
    for (const withWrites of round % 2 === 1 ? [false, true] : [true, false]) {
      process.stdout.write(`  round ${round}/${opts.rounds}: ${seconds} s ${withWrites ? `with a write every ${opts.writeEveryMs} ms` : 'without writes'}\n`);
      if (withWrites) {
        const firstEdit = out.writes.reduce((n, w) => n + w.scheduled, 0);
        const [run, batch] = await loadPhase(a, script, opts.connections, seconds, false, (at) => writer(a, b, opts, seconds, firstEdit, at));
        out.busy.push(run);
        out.writes.push(batch);
      } else {
        const [run] = await loadPhase(a, script, opts.connections, seconds, false, () => Promise.resolve(null));
        out.quiet.push(run);
      }
    }
  }
  return out;
}

/**
 * One condition of the rounds as one phase: wrk's figures are the median over its runs (as in the
 * main benchmark's wrk pass), each run's kept in `rounds`; the stalls are the runs' together. A runs
 * without the loop-delay log here, so there are no pauses to read.
 */
function roundsResult(runs: readonly LoadRun[]): LatencyPhase {
  const stalls = mergeStallStats(runs.map((r) => r.stalls));
  return {
    durationSec: Math.round(runs.reduce((s, r) => s + (r.endedAt - r.startedAt), 0) / 100) / 10,
    wrk: medianOfRuns(runs.map((r) => r.wrk)),
    loopDelay: loopDelayIn([], LOOP_DELAY_LOG_MS, stalls, 0, 0),
    machineStalls: stalls,
    rounds: runs.map((r) => r.wrk),
  };
}

async function importDuring(a: Served, bundle: { text: string; items: number }, startedAt: number): Promise<Omit<ImportStats, 'loopDelay' | 'withinLoad'> & { sentAt: number; answeredAt: number }> {
  await sleep(Math.max(0, startedAt + IMPORT_AFTER_SEC * 1000 - performance.now()));
  const sentAt = performance.now();
  let status = 0;
  try {
    const res = await fetch(`${a.adminUrl}/import`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: bundle.text });
    status = res.status;
    await res.text();
  } catch {
    // status 0: reported as a problem.
  }
  const answeredAt = performance.now();
  return {
    bytes: Buffer.byteLength(bundle.text),
    items: bundle.items,
    status,
    adminMs: answeredAt - sentAt,
    sentAtSec: IMPORT_AFTER_SEC,
    sentAt,
    answeredAt,
  };
}

function plainPool(): RequestEntry[] {
  const headers = { 'content-type': 'application/json', 'x-api-key': BENCH_KEY };
  const out: RequestEntry[] = [];
  for (let i = 0; i < LOAD_ITEMS; i++) {
    const u = `player-${i}`;
    out.push({ method: 'POST', path: `/api/v1/config/${itemId(i)}`, headers, body: JSON.stringify({ u, p: {} }), ctx: { u, p: {}, v: '', expectStatus: 200, expectCode: '' } });
  }
  return out;
}

function wrkProblems(name: string, w: WrkStats): string[] {
  const out: string[] = [];
  if (w.non2xx > 0) out.push(`${name}: ${w.non2xx} non-2xx answers to the load`);
  if (w.socketErrors > 0) out.push(`${name}: ${w.socketErrors} socket errors under load`);
  if (w.reqPerSec <= 0) out.push(`${name}: no request answered`);
  return out;
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (!isLinuxProcAvailable()) {
    process.stderr.write('bench:edits: memory is read from /proc; this benchmark runs on Linux only\n');
    return 2;
  }
  if (!wrkAvailable()) {
    process.stderr.write('bench:edits needs wrk on PATH (Debian: apt-get install wrk)\n');
    return 2;
  }
  sup.installCleanup('the load and both servers');
  const started = new Date();
  const loadAtStart = loadavg();
  const dir = sup.tempDir('rcd-bench-edits-');
  const dbPath = join(dir, 'rcd.db');
  const bundlePath = join(dir, 'store.json');
  process.stdout.write(`generating ${opts.items} items ...\n`);
  writeFileSync(bundlePath, JSON.stringify(storeBundle(opts.items)));
  const importStarted = performance.now();
  const imported = spawnSync(process.execPath, [join(repoRoot(), 'bin', 'rcd.js'), 'import', bundlePath, '--store', `sqlite:${dbPath}`], {
    encoding: 'utf8',
    env: { ...process.env, RCD_DATA_DIR: dir },
  });
  if (imported.status !== 0) throw new Error(`rcd import failed (exit ${imported.status}):\n${imported.stdout}${imported.stderr}`);
  const store = { bundleBytes: statSync(bundlePath).size, importMs: performance.now() - importStarted };
  const importFile = importBundle(opts.importBytes);

  // A runs without the loop-delay log first: its collection counter and 1 ms timer are work of their
  // own (src/runtime/loop-delay.ts), so latency is judged on a server without the instrument.
  const a = await startServe('A', dbPath, dir, false);
  process.stdout.write(`A ${a.url} (admin ${a.adminUrl}, pid ${a.pid}) started in ${(a.startupMs / 1000).toFixed(2)} s\n`);
  const b = await startServe('B', dbPath, dir, false);
  process.stdout.write(`B ${b.url} (admin ${b.adminUrl}, pid ${b.pid}) started in ${(b.startupMs / 1000).toFixed(2)} s, same store\n`);
  process.stdout.write(`waiting for A's RSS to settle (at most ${opts.smoke ? SETTLE_MAX_SEC_SMOKE : SETTLE_MAX_SEC} s) ...\n`);
  const settledA = await settleRss(a.pid, opts.smoke ? SETTLE_MAX_SEC_SMOKE : SETTLE_MAX_SEC);
  const script = writeWrkScript(dir, 'edits-plain', plainPool());

  await runWrk(a.url, script, opts.connections, opts.smoke ? 1 : WARMUP_SEC, track);
  const seconds = opts.durationSec;
  const roundSec = Math.max(1, Math.floor(seconds / opts.rounds));
  process.stdout.write(`phases 1-2: ${opts.rounds} round(s) of ${roundSec} s without writes and ${roundSec} s with, alternating\n`);
  const rounds = await latencyRounds(a, b, script, opts, roundSec);
  const processA = processStart(a, settledA);

  // Then A again, on the same store, with the loop-delay log: which pauses writes and an import cause.
  await sup.stopChild(a.child);
  const ad = await startServe('A', dbPath, dir, true);
  process.stdout.write(`A restarted with the loop-delay log (RCD_LOOP_DELAY_LOG_MS=${LOOP_DELAY_LOG_MS}), pid ${ad.pid}\n`);
  await runWrk(ad.url, script, opts.connections, opts.smoke ? 1 : WARMUP_SEC, track);
  // The same load without writes first: the pauses and the run-queue wait the load causes by itself,
  // beside which the writes' are read.
  process.stdout.write(`phase 3/5: ${seconds} s without writes, loop-delay log on\n`);
  const [diagnosedQuiet] = await loadPhase(ad, script, opts.connections, seconds, false, () => Promise.resolve(null));
  await sleep(LOOP_DELAY_LOG_MS);
  process.stdout.write(`phase 4/5: ${seconds} s with a write every ${opts.writeEveryMs} ms, loop-delay log on\n`);
  const [diagnosed, diagnosedBatch] = await loadPhase(ad, script, opts.connections, seconds, false, (at) => writer(ad, b, opts, seconds, 0, at));
  const diagnosedWrites = writeStats([diagnosedBatch], opts.visibleWaitMs);
  // A loop-delay line is given to the phase its interval lies mostly in; without a gap, the last
  // line of one phase would also hold the first half-interval of the next (and its writes).
  await sleep(LOOP_DELAY_LOG_MS);
  process.stdout.write(`phase 5/5: a ${(importFile.text.length / 1048576).toFixed(1)} MiB import ${IMPORT_AFTER_SEC} s into the load, which lasts until it answered (at least ${seconds} s), loop-delay log on\n`);
  const [importLoad, imp] = await loadPhase(ad, script, opts.connections, seconds, true, (at) => importDuring(ad, importFile, at));
  // The loop-delay line that covers the end of the load arrives up to one interval later.
  await sleep(LOOP_DELAY_LOG_MS);

  const { sentAt, answeredAt, ...importFigures } = imp;
  const withoutWrites = roundsResult(rounds.quiet);
  const withWrites = { ...roundsResult(rounds.busy), writes: writeStats(rounds.writes, opts.visibleWaitMs) };
  const writes = withWrites.writes;
  const problems = [
    ...rounds.quiet.flatMap((r, i) => wrkProblems(`without writes, round ${i + 1}`, r.wrk)),
    ...rounds.busy.flatMap((r, i) => wrkProblems(`with writes, round ${i + 1}`, r.wrk)),
    ...wrkProblems('without writes, loop-delay log on', diagnosedQuiet.wrk),
    ...wrkProblems('with writes, loop-delay log on', diagnosed.wrk),
    ...wrkProblems('import', importLoad.wrk),
  ];
  for (const [phase, w] of [['with writes', writes], ['with writes, loop-delay log on', diagnosedWrites]] as const) {
    if (w.sent === 0) problems.push(`${phase}: no admin write was sent`);
    if (w.failed > 0) problems.push(`${phase}: ${w.failed} of ${w.sent} admin writes did not answer 200`);
  }
  if (imp.status !== 200) problems.push(`the import answered ${imp.status}`);
  if (ad.loopDelayLines.length === 0) problems.push('process A logged no loop-delay line (RCD_LOOP_DELAY_LOG_MS)');
  const partial = {
    version: 1 as const,
    kind: 'edits' as const,
    date: started.toISOString(),
    host: hostname(),
    node: process.versions.node,
    cpus: { model: cpus()[0]?.model ?? 'unknown', count: cpus().length },
    loadavgAtStart: loadAtStart,
    loadavgAtEnd: loadavg(),
    options: { items: opts.items, durationSec: opts.durationSec, rounds: opts.rounds, writeEveryMs: opts.writeEveryMs, connections: opts.connections, smoke: opts.smoke, importBytes: opts.importBytes, visibleWaitMs: opts.visibleWaitMs, loopDelayLogMs: opts.loopDelayLogMs },
    store,
    processA,
    processB: processStart(b, null),
    withoutWrites,
    withWrites,
    diagnosedQuiet: phaseResult(ad, diagnosedQuiet),
    diagnosedWrites: { ...phaseResult(ad, diagnosed), writes: diagnosedWrites },
    underImport: {
      ...phaseResult(ad, importLoad),
      import: { ...importFigures, withinLoad: answeredAt <= importLoad.endedAt, loopDelay: loopDelayIn(ad.loopDelayLines, LOOP_DELAY_LOG_MS, importLoad.stalls, sentAt, answeredAt, true) },
    },
    problems,
  };
  const results: EditsResults = { ...partial, targets: evaluateEditsTargets(partial), ok: problems.length === 0 };
  await sup.stopChild(b.child);
  await sup.stopChild(ad.child);
  process.stdout.write('\n' + renderEditsText(results) + '\n');
  const files = writeEditsResults(results, opts.outDir);
  process.stdout.write(`\nresults: ${files.json}\nsummary: ${files.md}\n`);
  if (!results.ok) process.stderr.write(`\nPROBLEMS:\n${problems.map((p) => `  ${p}\n`).join('')}`);
  await sup.stopAll();
  return results.ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (sup.stopping) return;
    process.stderr.write(`bench:edits failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    void sup.stopAll().finally(() => process.exit(1));
  },
);
