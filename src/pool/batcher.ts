/**
 * Collects the jobs of one event-loop turn and sends them to the worker pool as few tasks.
 *
 * Why: a pool.run per request pays message passing and promise overhead per task, a large share of
 * a request; one task per turn amortises that over the turn's jobs.
 * The batch is split so that every thread gets work when there is enough of it.
 *
 * HOT PATH: change with care. No closures per job: a job's answer goes to `sink.onResult(slot, result)`.
 */
import type { Piscina } from 'piscina';
import type { Batch, BatchResult, Job, JobResult } from './protocol.js';
import { observePoolJob, type LoopCounters } from '../metrics/layout.js';

/** Whoever waits for a job's result (a request). `slot` tells a multi-job request which one it is. */
export interface JobSink {
  onResult(slot: number, result: JobResult): void;
  /** The job failed, or onResult threw. Must not throw: it answers 500 (or closes) and logs. */
  onFailure(slot: number, err: unknown): void;
}

/** Below this many jobs a batch is not split: the per-task cost would outweigh the parallelism. */
const MIN_JOBS_PER_TASK = 8;

export class Batcher {
  private readonly pool: Piscina;
  private readonly threads: number;
  private readonly maxPending: number;
  /** The loop's counters: each task's round trip goes into the pool histogram (two clock reads a task, not a job). */
  private readonly counters: LoopCounters;
  private jobs: Job[] = [];
  private sinks: JobSink[] = [];
  private slots: number[] = [];
  private scheduled = false;
  /** Jobs accepted and not yet answered (queued here or in the pool). */
  pending = 0;

  constructor(pool: Piscina, threads: number, maxPending: number, counters: LoopCounters) {
    this.pool = pool;
    this.threads = threads;
    this.maxPending = maxPending;
    this.counters = counters;
  }

  /** Room for `count` more jobs? When false the caller answers 503 at once. */
  hasRoom(count: number): boolean {
    return this.pending + count <= this.maxPending;
  }

  enqueue(job: Job, sink: JobSink, slot: number): void {
    this.jobs.push(job);
    this.sinks.push(sink);
    this.slots.push(slot);
    this.pending++;
    if (!this.scheduled) {
      this.scheduled = true;
      // setImmediate runs after the poll phase: every request uWS delivered in this turn is in the batch.
      setImmediate(flushBatcher, this);
    }
  }

  /** @internal called by flushBatcher */
  flush(): void {
    this.scheduled = false;
    const jobs = this.jobs;
    const sinks = this.sinks;
    const slots = this.slots;
    this.jobs = [];
    this.sinks = [];
    this.slots = [];
    const n = jobs.length;
    const tasks = Math.max(1, Math.min(this.threads, Math.floor(n / MIN_JOBS_PER_TASK)));
    if (tasks === 1) {
      this.runTask(jobs, sinks, slots);
      return;
    }
    const per = Math.ceil(n / tasks);
    for (let start = 0; start < n; start += per) {
      const end = Math.min(n, start + per);
      this.runTask(jobs.slice(start, end), sinks.slice(start, end), slots.slice(start, end));
    }
  }

  private runTask(jobs: Job[], sinks: JobSink[], slots: number[]): void {
    const batch: Batch = { jobs };
    const t0 = performance.now();
    this.pool.run(batch).then(
      (out: BatchResult) => {
        observePoolJob(this.counters, performance.now() - t0);
        deliverResults(this, out, sinks, slots);
      },
      (err: unknown) => {
        observePoolJob(this.counters, performance.now() - t0);
        deliverFailure(this, err, sinks, slots);
      },
    );
  }
}

function flushBatcher(b: Batcher): void {
  b.flush();
}

// A sink that throws is failed on its own: one request's bug must neither reach the other requests
// of its batch nor escape as an unhandled rejection, which would end the process.
function deliverResults(b: Batcher, out: BatchResult, sinks: JobSink[], slots: number[]): void {
  const results = out.results;
  b.pending -= sinks.length;
  for (let i = 0; i < sinks.length; i++) deliverResult(sinks[i]!, slots[i]!, results[i]);
}

function deliverResult(sink: JobSink, slot: number, result: JobResult | undefined): void {
  try {
    if (result === undefined) throw new Error('the worker returned fewer results than jobs');
    sink.onResult(slot, result);
  } catch (err) {
    sink.onFailure(slot, err);
  }
}

function deliverFailure(b: Batcher, err: unknown, sinks: JobSink[], slots: number[]): void {
  b.pending -= sinks.length;
  for (let i = 0; i < sinks.length; i++) sinks[i]!.onFailure(slots[i]!, err);
}
