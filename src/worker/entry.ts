/**
 * Piscina worker entry: one task = one batch of jobs from one event-loop turn of the front end.
 * State (store reader, LRU) lives for the life of the thread. Every rendered head is in the batch's
 * transfer list: it moves to the front end without a copy.
 *
 * A SQLite store is read synchronously while rendering (a point read costs microseconds). A
 * PostgreSQL store is a network round trip away: the batch's misses are read first, all in one
 * query per kind (src/worker/prefetch.ts), and the task awaits them; the delivery loop never waits,
 * it receives the batch's answers when they are ready.
 */
import { move, transferableSymbol, valueSymbol, workerData } from 'piscina';
import { holdYoungGeneration } from '../runtime/heap.js';
import { setThreadNice } from '../runtime/priority.js';
import type { Batch, BatchResult, JobResult, WorkerOptions } from '../pool/protocol.js';
import { isRevisionSource, openWorkerReader } from '../store/worker-reader.js';
import { createCache } from './content-cache.js';
import { Prefetched, prefetch } from './prefetch.js';
import { resolveJob, type WorkerState } from './resolve.js';

const options = workerData as WorkerOptions;
// This thread's start put V8's process-wide growth factor back to its default; set it again.
if (options.holdYoungGeneration) holdYoungGeneration();
// Modules loaded at the priority the thread started with (the lowest, src/delivery/loop.ts: loading
// does not take the cores from the control thread loading the directory); from here on, the loop's.
if (!setThreadNice(options.nice)) process.emitWarning(`rcd worker: could not set its nice value to ${String(options.nice)}`);

const opened = openWorkerReader(options.storeUrl);
const source = isRevisionSource(opened) ? opened : null;
const fetched = new Prefetched();
const state: WorkerState = {
  reader: isRevisionSource(opened) ? fetched : opened,
  cache: createCache(options.cacheBytes),
  compressMinBytes: options.compressMinBytes,
};

/** Piscina's Transferable protocol: the value to send and what to move with it. */
class TransferredBatch {
  private readonly value: BatchResult;
  private readonly list: ArrayBuffer[];

  constructor(value: BatchResult, list: ArrayBuffer[]) {
    this.value = value;
    this.list = list;
  }

  get [transferableSymbol](): ArrayBuffer[] {
    return this.list;
  }

  get [valueSymbol](): BatchResult {
    return this.value;
  }
}

export default function runBatch(batch: Batch): BatchResult | Promise<BatchResult> {
  if (source === null) return renderBatch(batch, null);
  return prefetch(state.cache, source, batch.jobs, fetched).then(
    () => renderBatch(batch, null),
    (err: unknown) => {
      process.emitWarning(`rcd worker: reading from the store failed: ${(err as Error).message}`);
      return renderBatch(batch, 'store_unavailable');
    },
  );
}

/**
 * Renders every job. `unreadable`: the store could not be read, so a job whose texts are in no
 * cache answers that code instead of content_not_found.
 */
function renderBatch(batch: Batch, unreadable: string | null): BatchResult {
  const jobs = batch.jobs;
  const results = new Array<JobResult>(jobs.length);
  const transfer: ArrayBuffer[] = [];
  for (let i = 0; i < jobs.length; i++) {
    let result: JobResult;
    try {
      result = resolveJob(state, jobs[i]!);
      if (unreadable !== null && result.error === 'content_not_found') result = { head: null, seg: '', gzip: null, br: null, error: unreadable };
    } catch (err) {
      // One bad job must not fail its batch neighbours; the front end answers 500 internal for it.
      process.emitWarning(`rcd worker: job failed: ${(err as Error).stack ?? String(err)}`);
      result = { head: null, seg: '', gzip: null, br: null, error: 'internal' };
    }
    results[i] = result;
    if (result.head !== null) transfer.push(result.head);
    if (result.gzip !== null) transfer.push(result.gzip);
    if (result.br !== null) transfer.push(result.br);
  }
  fetched.clear();
  // Piscina unwraps the value and transfers the list; typed as the value for the caller.
  return move(new TransferredBatch({ results }, transfer)) as unknown as BatchResult;
}
