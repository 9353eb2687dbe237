/**
 * One delivery loop's share of the render pool: a Piscina instance of `threads` workers, each opening
 * the store read-only. A Piscina instance belongs to the thread that created it, so each delivery loop
 * starts its own share, rather than reaching one pool in the main thread over MessagePorts
 * (docs/architecture.md, "Several delivery loops").
 */
import { Piscina } from 'piscina';
import type { Batch, WorkerOptions } from './protocol.js';

/**
 * Creates the pool's `threads` workers at once (they start now, inheriting the calling thread's nice
 * value); `loaded()` then waits until each loaded its module.
 */
export function createPool(threads: number, options: WorkerOptions): Piscina {
  return new Piscina({
    filename: new URL('../worker/entry.js', import.meta.url).href,
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: Number.MAX_SAFE_INTEGER,
    workerData: options,
  });
}

/** Resolves once every worker of `pool` loaded its module; on failure the pool is destroyed. */
export async function loaded(pool: Piscina, threads: number): Promise<Piscina> {
  try {
    await loadEveryWorker(pool, threads);
  } catch (err) {
    await pool.destroy();
    throw err;
  }
  return pool;
}

/** The worker threads of loop `index` of `loops`: --threads split as evenly as it goes, the first loops taking the remainder. */
export function poolShare(threads: number, loops: number, index: number): number {
  return Math.floor(threads / loops) + (index < threads % loops ? 1 : 0);
}

/**
 * Resolves once every worker thread has loaded its module (one empty batch each: Piscina gives a free
 * worker the next task, so N concurrent tasks reach N workers). Why before listening: Node 20 aborts
 * the whole process (SIGABRT, an assertion in ModuleWrap::CreateRequiredModuleFacade) when a worker
 * is terminated while Piscina is still loading its module, which a SIGTERM soon after start did about
 * once in 15 runs of the restart test; and the first requests then do not wait for the load.
 */
async function loadEveryWorker(pool: Piscina, threads: number): Promise<void> {
  const empty: Batch = { jobs: [] };
  await Promise.all(Array.from({ length: threads }, () => pool.run(empty)));
}
