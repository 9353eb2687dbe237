/**
 * A delivery loop in a worker thread (loops 1..httpThreads-1; src/delivery/loop.ts is the loop
 * itself). Its feed applies routing updates as soon as the thread starts, because the control thread
 * waits for every loop to apply the first snapshot before the pool and the listeners start.
 *
 * An uncaught failure is reported to the main thread, the loop's sockets are closed (a worker thread
 * that ends with uWS sockets open aborts the whole process), and the thread ends with code 1: the
 * main thread then stops the server and the process exits non-zero, never serving on fewer loops.
 */
import { parentPort, workerData } from 'node:worker_threads';
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
let loop: DeliveryLoop | null = null;

function crashed(err: unknown): void {
  post({ type: 'crashed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  loop?.abandon();
  process.exit(1);
}
process.on('uncaughtException', crashed);
process.on('unhandledRejection', crashed);

async function start(readerUrl: string, port: number, tls: TlsMaterial | null, nice: number | null): Promise<void> {
  try {
    loop = await DeliveryLoop.start({ index: init.index, config: init.config, feed, readerUrl, holdYoungGeneration: init.holdYoungGeneration, port, claimed: true, tls, nice, counters: init.counters, server: init.server });
  } catch (err) {
    post({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
    return;
  }
  post({ type: 'listening' });
}

async function rotateTls(id: number, material: TlsMaterial): Promise<void> {
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
  if (loop !== null) await loop.stop();
  post({ type: 'stopped' });
  // Nothing left to keep the thread alive: it ends once its ports close.
  feed.close();
  lifecycle!.close();
}

lifecycle.on('message', (cmd: LoopCommand) => {
  switch (cmd.type) {
    case 'start':
      void start(cmd.readerUrl, cmd.port, cmd.tls, cmd.nice);
      return;
    case 'rotate-tls':
      void rotateTls(cmd.id, cmd.material);
      return;
    case 'shutting-down':
      loop?.markShuttingDown();
      return;
    case 'stop':
      void stop();
      return;
    case 'abandon':
      loop?.abandon();
      process.exit(0);
  }
});
