/**
 * A delivery loop in a worker thread (loops 1..httpThreads-1; src/delivery/loop.ts is the loop
 * itself). Its feed applies routing updates as soon as the thread starts, because the control thread
 * waits for every loop to apply the first snapshot before the listeners start; the pool share
 * starts before that, as soon as the store is open.
 *
 * An uncaught failure is reported to the main thread, the loop's sockets are closed (a worker thread
 * that ends with uWS sockets open aborts the whole process), and the thread ends with code 1: the
 * main thread then stops the server and the process exits non-zero, never serving on fewer loops.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { DeliveryFeed } from '../control/feed.js';
import { holdYoungGeneration } from '../runtime/heap.js';
import { configureLog } from '../runtime/log.js';
import { DeliveryLoop } from './loop.js';
import type { TlsMaterial } from '../runtime/tls.js';
import type { LoopCommand, LoopEvent, LoopInit } from './loop-protocol.js';

const lifecycle = parentPort;
if (lifecycle === null) throw new Error('src/delivery/loop-thread.ts runs as a worker thread');
const init = workerData as LoopInit;
if (init.holdYoungGeneration) holdYoungGeneration();
configureLog({ level: init.config.logLevel, format: init.config.logFormat });

function post(event: LoopEvent): void {
  lifecycle!.postMessage(event);
}

const feed = new DeliveryFeed(init.feed);

/** What this thread runs, as its commands start and stop it. */
interface ThreadState {
  /** The loop once started, null before. */
  loop: DeliveryLoop | null;
  /** The pool share between its start and the loop's (then the loop owns it). */
  pool: Piscina | null;
}

// The thread's singletons, one object: startLoopPool sets the pool, start hands it to the loop, and
// the other commands (and crashed, which closes the loop's sockets) act on whichever is there.
const thread: ThreadState = { loop: null, pool: null };

function crashed(err: unknown): void {
  post({ type: 'crashed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  thread.loop?.abandon();
  process.exit(1);
}
process.on('uncaughtException', crashed);
process.on('unhandledRejection', crashed);

async function startLoopPool(readerUrl: string, nice: number | null): Promise<void> {
  try {
    thread.pool = await DeliveryLoop.startPool({ index: init.index, config: init.config, readerUrl, holdYoungGeneration: init.holdYoungGeneration, nice });
  } catch (err) {
    post({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
    return;
  }
  post({ type: 'pool-started' });
}

async function start(port: number, tls: TlsMaterial | null): Promise<void> {
  const started = thread.pool;
  if (started === null) {
    post({ type: 'failed', message: 'the loop has no pool to serve with' });
    return;
  }
  try {
    // The loop owns the pool from here on (start destroys it when it fails).
    thread.pool = null;
    thread.loop = await DeliveryLoop.start({ index: init.index, config: init.config, feed, port, claimed: true, tls, counters: init.counters, server: init.server, exposures: init.exposures }, started);
  } catch (err) {
    post({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
    return;
  }
  post({ type: 'listening' });
}

async function rotateTls(id: number, material: TlsMaterial): Promise<void> {
  const loop = thread.loop;
  if (loop === null) {
    post({ type: 'tls-rotated', id, changed: false, error: 'the loop is not listening' });
    return;
  }
  try {
    post({ type: 'tls-rotated', id, changed: await loop.rotateTls(material), error: null });
  } catch (err) {
    post({ type: 'tls-rotated', id, changed: false, error: err instanceof Error ? err.message : String(err) });
  }
}

async function stop(): Promise<void> {
  if (thread.loop !== null) await thread.loop.stop();
  else await thread.pool?.destroy();
  post({ type: 'stopped' });
  // Nothing left to keep the thread alive: it ends once its ports close.
  feed.close();
  lifecycle!.close();
}

lifecycle.on('message', (cmd: LoopCommand) => {
  switch (cmd.type) {
    case 'start-pool':
      void startLoopPool(cmd.readerUrl, cmd.nice);
      return;
    case 'start':
      void start(cmd.port, cmd.tls);
      return;
    case 'rotate-tls':
      void rotateTls(cmd.id, cmd.material);
      return;
    case 'shutting-down':
      thread.loop?.markShuttingDown();
      return;
    case 'stop':
      void stop();
      return;
    case 'abandon':
      thread.loop?.abandon();
      process.exit(0);
  }
});
