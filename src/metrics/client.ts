/**
 * The main thread's handle on the metrics thread: start it (resolves once it listens), stop it.
 */
import { Worker } from 'node:worker_threads';
import { logError } from '../runtime/log.js';
import type { LoopCounters, ServerCounters } from './layout.js';
import type { MetricsCommand, MetricsEvent, MetricsInit } from './protocol.js';

export interface MetricsThread {
  readonly port: number;
  close(): Promise<void>;
}

export function startMetricsThread(host: string, port: number, loops: readonly LoopCounters[], server: ServerCounters): Promise<MetricsThread> {
  const workerData: MetricsInit = { host, port, loops, server };
  const worker = new Worker(new URL('./thread.js', import.meta.url), { workerData });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const onEarlyExit = (): void => reject(new Error('the metrics thread ended before listening'));
    worker.once('exit', onEarlyExit);
    worker.once('error', reject);
    worker.once('message', (event: MetricsEvent) => {
      worker.off('exit', onEarlyExit);
      if (event.type !== 'listening') {
        void worker.terminate();
        reject(new Error(event.type === 'failed' ? event.message : 'the metrics thread stopped'));
        return;
      }
      // Delivery does not depend on metrics: a metrics thread that fails later is logged, not fatal.
      worker.on('error', (err) => logError(`the metrics thread failed, metrics are no longer served: ${err instanceof Error ? err.message : String(err)}`));
      resolve({
        port: event.port,
        close: async () => {
          worker.postMessage({ type: 'stop' } satisfies MetricsCommand);
          await exited;
        },
      });
    });
  });
}
