/**
 * The main thread's handle on the metrics thread: start it (resolves once it listens), stop it.
 */
import { Worker } from 'node:worker_threads';
import { logError } from '../runtime/log.js';
import type { MetricsCommand, MetricsEvent, MetricsInit } from './protocol.js';

export interface MetricsThread {
  readonly port: number;
  /** Has the listener read its certificate files again (it logs the outcome itself). */
  reloadTls(): void;
  close(): Promise<void>;
}

export function startMetricsThread(init: MetricsInit): Promise<MetricsThread> {
  const worker = new Worker(new URL('./thread.js', import.meta.url), { workerData: init });
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
      let stopping = false;
      resolve({
        port: event.port,
        reloadTls: () => {
          if (!stopping) worker.postMessage({ type: 'reload-tls' } satisfies MetricsCommand);
        },
        close: async () => {
          stopping = true;
          worker.postMessage({ type: 'stop' } satisfies MetricsCommand);
          await exited;
        },
      });
    });
  });
}
