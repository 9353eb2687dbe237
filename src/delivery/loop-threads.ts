/**
 * The main thread's handle on the delivery loops that run in worker threads
 * (src/delivery/loop-thread.ts): creates them with their feeds, starts them on the shared port,
 * stops them, and reports a loop that fails or ends on its own (the server must then stop: a process
 * serving on fewer loops than it was started with would be silently degraded).
 */
import { Worker, type MessagePort } from 'node:worker_threads';
import { StartupError, type ServeConfig } from '../runtime/config.js';
import type { TlsMaterial } from '../runtime/tls.js';
import type { LoopCommand, LoopEvent, LoopInit } from './loop-protocol.js';
import type { LoopCounters, ServerCounters } from '../metrics/layout.js';
import type { ExposureLink } from '../exposures/protocol.js';

/** What one loop thread answered to a certificate rotation. */
export interface LoopRotation {
  readonly index: number;
  readonly changed: boolean;
  readonly error: string | null;
}

interface LoopWorker {
  readonly index: number;
  readonly worker: Worker;
  /** Resolves on the thread's exit. */
  readonly exit: Promise<void>;
  exited: boolean;
  /** The answer the main thread waits for (`listening` or `stopped`), if any. */
  waiter: ((event: LoopEvent | null) => void) | null;
  /** Certificate rotations waiting for this loop's answer, by rotation id. */
  readonly rotations: Map<number, (r: LoopRotation) => void>;
}

export class LoopThreads {
  private readonly loops: LoopWorker[] = [];
  private readonly onFatal: (reason: string) => void;
  private stopping = false;
  private failed = false;
  private rotationId = 0;

  /**
   * @param feeds the loops' ends of their feeds, one per loop thread (transferred), in loop order 1..N-1
   * @param counters the loops' shared counters, in the same order as `feeds`
   * @param onFatal called once a loop crashes or ends while the server runs
   * @param exposures each loop thread's link to the exposure writer (its port transferred), in the same
   *   order as `feeds`; null or absent when exposures are off
   */
  constructor(
    config: ServeConfig,
    holdYoungGeneration: boolean,
    feeds: readonly MessagePort[],
    counters: readonly LoopCounters[],
    server: ServerCounters,
    onFatal: (reason: string) => void,
    exposures: readonly ExposureLink[] | null = null,
  ) {
    this.onFatal = onFatal;
    feeds.forEach((feed, i) => {
      const index = i + 1;
      const link = exposures?.[i] ?? null;
      const workerData: LoopInit = { index, config, feed, holdYoungGeneration, counters: counters[i]!, server, exposures: link };
      const transferList = link === null ? [feed] : [feed, link.port];
      const worker = new Worker(new URL('./loop-thread.js', import.meta.url), { workerData, transferList });
      const loop: LoopWorker = { index, worker, exit: Promise.resolve(), exited: false, waiter: null, rotations: new Map() };
      worker.on('message', (event: LoopEvent) => this.onEvent(loop, event));
      worker.on('error', (err: Error) => this.fail(loop, `delivery loop ${index} failed: ${err.stack ?? err.message}`));
      (loop as { exit: Promise<void> }).exit = new Promise((resolve) => {
        worker.once('exit', (code: number) => {
          loop.exited = true;
          this.fail(loop, `delivery loop ${index} ended unexpectedly (exit code ${code})`);
          resolve();
        });
      });
      this.loops.push(loop);
    });
  }

  /** Sets every loop thread's nice value (null: leaves it) and starts its pool share; rejects with the first failure. */
  async startPools(readerUrl: string, nice: number | null): Promise<void> {
    await Promise.all(this.loops.map((loop) => this.request(loop, { type: 'start-pool', readerUrl, nice }, 'pool-started')));
  }

  /** Every loop thread binds `port` (SO_REUSEPORT) and serves; rejects with the first failure. */
  async start(port: number, tls: TlsMaterial | null): Promise<void> {
    await Promise.all(this.loops.map((loop) => this.request(loop, { type: 'start', port, tls }, 'listening')));
  }

  /** Every loop thread serves `material` to new connections; resolves with each one's answer. */
  rotateTls(material: TlsMaterial): Promise<LoopRotation[]> {
    const id = ++this.rotationId;
    return Promise.all(
      this.loops.map((loop) => {
        if (loop.exited) return Promise.resolve({ index: loop.index, changed: false, error: 'the loop has ended' });
        return new Promise<LoopRotation>((resolve) => {
          loop.rotations.set(id, resolve);
          loop.worker.postMessage({ type: 'rotate-tls', id, material } satisfies LoopCommand);
        });
      }),
    );
  }

  /** Answers on every loop thread carry Connection: close and /healthz says 503 from now on. */
  markShuttingDown(): void {
    for (const loop of this.loops) if (!loop.exited) loop.worker.postMessage({ type: 'shutting-down' } satisfies LoopCommand);
  }

  /** Stops every loop thread (stop accepting, drain, close, pool) at once; resolves once all ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      this.loops.map(async (loop) => {
        if (!loop.exited) {
          try {
            await this.request(loop, { type: 'stop' }, 'stopped');
          } catch {
            // Ended meanwhile: reported through onFatal (or it was stopping anyway).
          }
        }
        await loop.exit;
      }),
    );
  }

  /**
   * After an uncaught failure on the main thread: every loop thread closes its sockets at once and
   * ends (the process would abort if it exited with their uWS sockets open). Resolves once all ended.
   */
  async abandon(): Promise<void> {
    this.stopping = true;
    for (const loop of this.loops) if (!loop.exited) loop.worker.postMessage({ type: 'abandon' } satisfies LoopCommand);
    await Promise.all(this.loops.map((loop) => loop.exit));
  }

  private request(loop: LoopWorker, command: LoopCommand, answer: 'pool-started' | 'listening' | 'stopped'): Promise<void> {
    if (loop.exited) return Promise.reject(new StartupError(`delivery loop ${loop.index} has ended`));
    return new Promise((resolve, reject) => {
      loop.waiter = (event) => {
        if (event !== null && event.type === answer) resolve();
        else if (event !== null && event.type === 'failed') reject(new StartupError(event.message));
        else reject(new StartupError(`delivery loop ${loop.index} ended before it answered`));
      };
      loop.worker.postMessage(command);
    });
  }

  private onEvent(loop: LoopWorker, event: LoopEvent): void {
    if (event.type === 'tls-rotated') {
      const resolve = loop.rotations.get(event.id);
      loop.rotations.delete(event.id);
      resolve?.({ index: loop.index, changed: event.changed, error: event.error });
      return;
    }
    if (event.type === 'crashed') {
      this.fail(loop, `delivery loop ${loop.index} crashed: ${event.message}`);
      return;
    }
    const waiter = loop.waiter;
    loop.waiter = null;
    waiter?.(event);
  }

  /** A loop failed or ended: a pending request is rejected; outside a stop, the server must stop. */
  private fail(loop: LoopWorker, reason: string): void {
    const waiter = loop.waiter;
    loop.waiter = null;
    waiter?.(null);
    for (const resolve of loop.rotations.values()) resolve({ index: loop.index, changed: false, error: 'the loop has ended' });
    loop.rotations.clear();
    if (this.stopping && loop.exited) return;
    if (!this.failed) {
      this.failed = true;
      this.onFatal(reason);
    }
  }
}
