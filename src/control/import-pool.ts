/**
 * The control thread's import thread: a one-thread Piscina pool, started on the first big admin
 * import and ended after a minute idle, that parses and checks an import's body at a lower CPU
 * priority than delivery (import-worker.ts says why). Small bodies are prepared in the control
 * thread: a thread's start and the copies would cost more than their checks.
 */
import { getPriority } from 'node:os';
import type { Piscina } from 'piscina';
import { RcdError } from '../runtime/errors.js';
import { INLINE_IMPORTS, type ImportPreparer } from '../admin/server/handlers.js';
import type { PreparedImport } from '../store/import-plan.js';
import type { ImportOutcome, ImportTask, ImportWorkerOptions } from './import-protocol.js';

/** Bodies under this are prepared in the control thread: their checks take a few ms of CPU at most. */
export const INLINE_IMPORT_BYTES = 64 * 1024;
/** The thread ends after this long without an import; the next big one starts it again. */
const IDLE_MS = 60_000;
/**
 * Imports waiting for the thread. Admin writes already run one at a time, but preparing happens
 * before the write queue, so concurrent uploads would otherwise queue here without bound.
 */
const MAX_QUEUED = 4;

export class ImportPool implements ImportPreparer {
  private readonly options: ImportWorkerOptions;
  private readonly log: (line: string) => void;
  private pool: Promise<Piscina> | null = null;
  private inFlight = 0;
  /** Settled when no task is running: the pool is destroyed only then (see close). */
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => undefined;
  private reportedNice = false;

  constructor(options: ImportWorkerOptions, log: (line: string) => void) {
    this.options = options;
    this.log = log;
  }

  async prepare(body: Uint8Array): Promise<PreparedImport> {
    if (body.byteLength < INLINE_IMPORT_BYTES) return INLINE_IMPORTS.prepare(body);
    if (this.inFlight >= MAX_QUEUED) {
      throw new RcdError('overloaded', `${MAX_QUEUED} imports are already being prepared; retry once they are done`);
    }
    if (this.inFlight === 0) this.idle = new Promise((resolve) => (this.markIdle = resolve));
    this.inFlight++;
    let outcome: ImportOutcome;
    try {
      const task: ImportTask = { body };
      outcome = (await (await this.started()).run(task)) as ImportOutcome;
    } finally {
      if (--this.inFlight === 0) this.markIdle();
    }
    this.reportNice(outcome.nice);
    if (!outcome.ok) throw new RcdError(outcome.code, outcome.message, outcome.details);
    return outcome.prepared;
  }

  /**
   * Waits for the imports being prepared, then ends the thread. Waiting first also keeps clear of a
   * Node 20 abort when a worker is terminated while Piscina is still loading its module (pool.ts).
   */
  async close(): Promise<void> {
    await this.idle;
    const pool = this.pool;
    this.pool = null;
    if (pool !== null) await (await pool).destroy();
  }

  /** The pool, made once; Piscina is loaded at the first big import, not at start (its module loading would delay every start-up). */
  private started(): Promise<Piscina> {
    const options = this.options;
    this.pool ??= import('piscina').then(
      ({ Piscina }) =>
        new Piscina({ filename: new URL('./import-worker.js', import.meta.url).href, minThreads: 0, maxThreads: 1, idleTimeout: IDLE_MS, workerData: options }),
    );
    return this.pool;
  }

  private reportNice(nice: number): void {
    if (this.reportedNice) return;
    this.reportedNice = true;
    if (this.options.niceIncrement > 0 && nice <= getPriority(0)) {
      this.log(`the import thread could not lower its CPU priority (nice ${nice}); imports compete with delivery for the cores`);
    } else {
      this.log(`admin imports are parsed and checked in a thread of their own at nice ${nice}`);
    }
  }
}
