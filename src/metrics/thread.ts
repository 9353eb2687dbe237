/**
 * The metrics thread: the Prometheus listener and prom-client's process collectors, off the delivery
 * loops. On the main thread they would run beside delivery loop 0: prom-client's GC observer and
 * event-loop monitor work on the thread that starts them, and a scrape's formatting would take turns
 * from requests. Here a scrape only reads the shared arrays (src/metrics/layout.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { configureLog, logError, logInfo } from '../runtime/log.js';
import { describeMaterial, reloadTlsMaterial } from '../runtime/tls.js';
import { startMetricsListener, type MetricsListener } from './listener.js';
import { metricsRegistry } from './registry.js';
import { LazyExposureReader } from '../exposures/reader.js';
import type { MetricsCommand, MetricsEvent, MetricsInit } from './protocol.js';

const lifecycle = parentPort;
if (lifecycle === null) throw new Error('src/metrics/thread.ts runs as a worker thread');
const init = workerData as MetricsInit;
configureLog(init.log);

function post(event: MetricsEvent): void {
  lifecycle!.postMessage(event);
}

let listener: MetricsListener | null = null;
/** The exposure database's counts, opened at the first scrape; closed at the stop (its connection would keep the thread alive). */
const experiments = init.exposureSource === undefined || init.exposureSource === null ? null : new LazyExposureReader(init.exposureSource);

async function start(): Promise<void> {
  try {
    listener = await startMetricsListener(metricsRegistry(init.loops, init.server, init.exposures, experiments), init.host, init.port, init.tls?.material ?? null);
  } catch (err) {
    post({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
    return;
  }
  post({ type: 'listening', port: listener.port });
}

/** Reads the certificate files again; new connections get them when they changed and can be served. */
function reloadTls(): void {
  if (listener === null || init.tls === null) return;
  const next = reloadTlsMaterial(init.tls.files, listener.tls);
  if (next === null) return;
  try {
    listener.rotateTls(next);
    logInfo(`metrics TLS reload: new connections get ${describeMaterial(next)}`);
  } catch (err) {
    logError(`metrics TLS reload failed, still serving the previous certificate: ${err instanceof Error ? err.message : String(err)}`);
  }
}

lifecycle.on('message', (cmd: MetricsCommand) => {
  if (cmd.type === 'reload-tls') {
    reloadTls();
    return;
  }
  void (async () => {
    await listener?.close();
    await experiments?.close().catch(() => undefined);
    post({ type: 'stopped' });
    lifecycle.close();
  })();
});

void start();
