/**
 * The main thread's handle on the exposure writer thread (writer-thread.ts): starts it with one
 * port per delivery loop and the shared queue counter, and stops it once the loops stopped. The
 * writer failing or ending early is logged, never fatal: delivery does not depend on exposures.
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import { logError, type LogSettings } from '../runtime/log.js';
import type { ExposureCounters } from '../metrics/layout.js';
import { QUEUE_SLOTS, type ExposureLink } from './protocol.js';
import type { ExposuresTarget } from './url.js';
import type { DropCounters, WriterCommand, WriterEvent, WriterInit } from './writer-protocol.js';

export interface ExposureWriterOptions {
  readonly target: ExposuresTarget;
  /** Delivery loops: one link each. */
  readonly loops: number;
  readonly counters: ExposureCounters;
  /** The loops' dropped-row counters, for the writer's once-a-minute drop line (null: no line). */
  readonly drops: DropCounters | null;
  readonly log: LogSettings;
  /** How often the drop line may be logged; a minute unless a test shortens it. */
  readonly dropLogMs?: number;
}

/** Past the stop's own time, how long the thread may take to close before it is terminated. */
const CLOSE_GRACE_MS = 2000;

export class ExposureWriterThread {
  /** Loop i's link, in loop order: loop 0 uses its port on this thread, the others take theirs (transferred). */
  readonly links: readonly ExposureLink[];
  private readonly worker: Worker;
  private readonly exit: Promise<void>;
  private readonly ready: Promise<void>;
  private stopping = false;
  private exited = false;
  private left: number | null = null;

  constructor(opts: ExposureWriterOptions) {
    const queue = new SharedArrayBuffer(QUEUE_SLOTS * Int32Array.BYTES_PER_ELEMENT);
    const channels = Array.from({ length: opts.loops }, () => new MessageChannel());
    this.links = channels.map((c) => ({ port: c.port1, queue }));
    const ports = channels.map((c) => c.port2);
    const workerData: WriterInit = {
      kind: opts.target.kind,
      url: opts.target.url,
      ports,
      queue,
      counters: opts.counters,
      drops: opts.drops,
      dropLogMs: opts.dropLogMs ?? 60_000,
      log: opts.log,
    };
    this.worker = new Worker(new URL('./writer-thread.js', import.meta.url), { workerData, transferList: ports });
    this.ready = new Promise((resolve, reject) => {
      this.worker.on('message', (event: WriterEvent) => {
        if (event.type === 'ready') resolve();
        else if (event.type === 'stopped') this.left = event.left;
        else {
          reject(new Error(`the exposure writer cannot run: ${event.message}`));
          if (!this.stopping) logError(`the exposure writer failed, exposures are no longer recorded: ${event.message}`);
        }
      });
      this.worker.on('error', (err: Error) => {
        reject(err);
        logError(`the exposure writer failed, exposures are no longer recorded: ${err.stack ?? err.message}`);
      });
    });
    this.ready.catch(() => undefined);
    this.exit = new Promise((resolve) => {
      this.worker.once('exit', (code: number) => {
        this.exited = true;
        if (!this.stopping) logError(`the exposure writer ended unexpectedly (exit code ${code}), exposures are no longer recorded`);
        resolve();
      });
    });
  }

  /** Resolves once the thread listens on the loops' ports (the database is opened in the background). */
  started(): Promise<void> {
    return Promise.race([this.ready, this.exit.then(() => Promise.reject(new Error('the exposure writer ended before it was ready')))]);
  }

  /**
   * Has the thread write what it holds (and what the ports still hold) for at most `timeoutMs`, close
   * the database and end; resolves with the rows it had to leave unwritten (null: it did not say).
   */
  async stop(timeoutMs: number): Promise<number | null> {
    if (this.stopping) {
      await this.exit;
      return this.left;
    }
    this.stopping = true;
    if (this.exited) return this.left;
    this.worker.postMessage({ type: 'stop', timeoutMs } satisfies WriterCommand);
    const timer = setTimeout(() => void this.worker.terminate(), timeoutMs + CLOSE_GRACE_MS);
    await this.exit;
    clearTimeout(timer);
    return this.left;
  }
}
