/**
 * Piscina worker entry: one task = one batch of jobs from one event-loop turn of the front end.
 * State (store reader, LRU) lives for the life of the thread.
 */
import { workerData } from 'piscina';
import type { Batch, BatchResult, JobResult, WorkerOptions } from '../pool/protocol.js';
import { openRevisionReader } from '../store/index.js';
import { createCache } from './cache.js';
import { resolveJob, type WorkerState } from './resolve.js';

const options = workerData as WorkerOptions;

const state: WorkerState = {
  reader: openRevisionReader(options.storeUrl),
  cache: createCache(options.cacheBytes),
};

export default function runBatch(batch: Batch): BatchResult {
  const jobs = batch.jobs;
  const results: JobResult[] = new Array(jobs.length);
  for (let i = 0; i < jobs.length; i++) {
    try {
      results[i] = resolveJob(state, jobs[i]!);
    } catch (err) {
      // One bad job must not fail its batch neighbours; the front end answers 500 internal for it.
      process.emitWarning(`rcd worker: job failed: ${(err as Error).stack ?? String(err)}`);
      results[i] = { head: null, headLength: 0, seg: '', error: 'internal' };
    }
  }
  return { results };
}
