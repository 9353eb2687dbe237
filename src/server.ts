/**
 * The composition root of `rcd serve`: control thread (store, admin) → the exposure writer (with
 * --exposures) → delivery loops (each with its directory, front cache and share of the worker pool;
 * loop 0 on this thread, the others in loop threads) → listening, and graceful shutdown in the
 * reverse order.
 *
 * Start-up binds every listener before anything is written: a port in use stops the process before
 * the store is seeded or "listening on" is printed, with everything released.
 */
import { getPriority } from 'node:os';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { StartupError, type ServeConfig, type TlsFiles } from './runtime/config.js';
import { ControlThread } from './control/client.js';
import type { DemoNotice } from './control/protocol.js';
import { DEMO_CONTENT_ID } from './runtime/demo.js';
import { gcThreadsDescription, holdYoungGeneration, operatorSizedYoungGeneration } from './runtime/heap.js';
import { inliningDescription, operatorSetInlining, widenInlining } from './runtime/inlining.js';
import { loopDelayInterval, startLoopDelayLog } from './runtime/loop-delay.js';
import { claimPort, rotationMigratesHandshakes } from './delivery/listener.js';
import type { DeliveryLoop } from './delivery/loop.js';
import { LoopThreads } from './delivery/loop-threads.js';
import { readAdminSecrets } from './admin/startup-secrets.js';
import { describeMaterial, loadStartupTls, reloadTlsMaterial, watchTlsFiles, type TlsMaterial } from './runtime/tls.js';
import { humanLog, logError, logInfo } from './runtime/log.js';
import { deliveryPriority } from './runtime/priority.js';
import { describeStoreUrl, enableUriFilenames } from './store/url.js';
import {
  L_EXPOSURES_DROPPED,
  Phase,
  S_PHASE,
  newExposureCounters,
  newLoopCounters,
  newServerCounters,
  requestsAnswered,
  type ExposureCounters,
  type LoopCounters,
  type ServerCounters,
} from './metrics/layout.js';
import { startMetricsThread, type MetricsThread } from './metrics/client.js';
import { ExposureWriterThread } from './exposures/writer-client.js';

export interface RunningServer {
  readonly port: number;
  /** The admin listener's port, or null when it is disabled. */
  readonly adminPort: number | null;
  /** Resolves with the reason if the control thread or a delivery loop ends while the server runs (the server must stop). */
  readonly fatal: Promise<string>;
  /** Stops accepting, finishes in-flight requests (bounded by the shutdown timeout), releases everything. */
  close(): Promise<void>;
  /** SIGHUP: reads the certificate files again; new connections get the new certificate, a bad one is reported and the current one kept. */
  reloadTls(): void;
}

/** How long a crash of the main thread's loop waits for the loop threads to close their sockets. */
const ABANDON_MS = 2000;
/** The least time the exposure writer gets at shutdown to write what it holds. */
const EXPOSURES_STOP_MIN_MS = 1000;

/**
 * The delivery loop's own modules (its app and routes, the directory, the mapping compiler: ~0.1-0.15
 * s of loading) are imported once the control thread has started, which loads its own meanwhile:
 * the two loads overlap instead of adding up. Everything above them in this file is light.
 */
function loadDeliveryModules(): Promise<[typeof import('./control/feed.js'), typeof import('./delivery/loop.js'), typeof import('./delivery/app.js')]> {
  return Promise.all([import('./control/feed.js'), import('./delivery/loop.js'), import('./delivery/app.js')]);
}

export async function startServer(config: ServeConfig): Promise<RunningServer> {
  const loopDelayLogMs = loopDelayInterval(process.env.RCD_LOOP_DELAY_LOG_MS);
  const delivery = deliveryPriority(config.deliveryNice, getPriority(0));
  // Before anything starts: a certificate that cannot be served stops the start with one line.
  const startupTls = loadStartupTls(config);
  // So does an unusable admin token or webhook key file, before any thread loads; the control
  // thread is handed the token.
  const adminToken = readAdminSecrets(config);
  const tls = startupTls.delivery;
  // First: the directory and the pool allocate enough to grow the young generation.
  const holdYoung = !operatorSizedYoungGeneration(process.execArgv, process.env.NODE_OPTIONS);
  if (holdYoung) holdYoungGeneration();
  // Before any delivery code is optimized: the flags apply to the functions V8 optimizes from now on.
  const widened = !operatorSetInlining(process.execArgv);
  if (widened) widenInlining();
  // Here, in the main thread: the control thread and the workers open the store (a memory: store
  // needs it set in the process's real environment, which their process.env is a copy of).
  enableUriFilenames();

  let reportFatal: (reason: string) => void = () => undefined;
  const fatal = new Promise<string>((resolve) => (reportFatal = resolve));
  const onFatal = (reason: string): void => {
    logError(reason);
    reportFatal(reason);
  };
  // One feed per delivery loop: the control thread sends every loop the same updates and answers
  // an admin write once all of them applied it.
  const channels = Array.from({ length: config.httpThreads }, () => new MessageChannel());
  // Loop 0's end: its DeliveryFeed takes it once the delivery modules are loaded (the control
  // thread's first update waits in the port until then).
  const feedPort = channels[0]!.port1;
  const threadFeeds: MessagePort[] = channels.slice(1).map((c) => c.port1);
  // Shared counters, created once: each loop and the control thread write theirs, the metrics listener reads them all.
  const loopCounters = Array.from({ length: config.httpThreads }, () => newLoopCounters());
  const serverCounters = newServerCounters();
  // With --exposures: the writer thread, a port to it for every loop, and its counters.
  const exposureCounters = config.exposures === null ? null : newExposureCounters();
  const exposures = exposureCounters === null ? null : startExposureWriter(config, exposureCounters, loopCounters);
  const loopThreads = new LoopThreads(config, holdYoung, threadFeeds, loopCounters.slice(1), serverCounters, onFatal, exposures?.links.slice(1) ?? null);
  const control = new ControlThread(
    { config, holdYoungGeneration: holdYoung, counters: serverCounters, adminToken },
    channels.map((c) => c.port2),
    onFatal,
  );
  let loop: DeliveryLoop | null = null;
  /** Loop 0's pool share between its start and the loop's (then the loop owns it). */
  let pool: Piscina | null = null;
  let metrics: MetricsThread | null = null;
  const release = async (): Promise<void> => {
    await metrics?.close();
    await Promise.all([loop?.stop() ?? pool?.destroy(), loopThreads.stop()]);
    await exposures?.stop(0);
    await control.close();
    feedPort.close();
  };

  let demo: DemoNotice | null;
  let opened: { adminPort: number | null; adminTokenAt: string | null };
  // The metrics thread needs nothing of the store: it starts while the control thread loads the
  // directory (its module loading off the start's critical path; /metrics reports the starting
  // phase meanwhile). Its failure is awaited below, in order.
  const metricsStarting = config.metricsEnabled ? startMetrics(config, startupTls.metrics, loopCounters, serverCounters, exposureCounters) : null;
  metricsStarting?.catch(() => undefined);
  // Registered first: the control thread's opening ends with `opened` (or its failure).
  const opening = control.opened();
  opening.catch(() => undefined);
  try {
    const [{ DeliveryFeed: Feed }, { DeliveryLoop: Loop }, { isNativeUws }] = await loadDeliveryModules();
    if (!isNativeUws()) logError('the native uWebSockets.js addon did not load; running on its slow JavaScript fallback');
    const feed = new Feed(feedPort);
    // The pools start as soon as the store is open, while the control thread loads the directory
    // (~0.3 s of module loading in the workers off the start's critical path). Here, after the
    // control and metrics threads exist: threads inherit the nice value of the thread that starts
    // them, and only the loops and their pools are to run above the rest.
    const readerUrl = await control.storeOpened();
    const main = Loop.startPool({ index: 0, config, readerUrl, holdYoungGeneration: holdYoung, nice: delivery.nice });
    const others = loopThreads.startPools(readerUrl, delivery.nice);
    try {
      pool = await main;
    } finally {
      // Both settle before anything is released, so a failure of one never races the other's start.
      await others.catch(() => undefined);
    }
    await others;
    opened = await opening;
    // Several loops bind with SO_REUSEPORT, which would not notice another server on the port: the
    // port is claimed once here for all of them (one HTTPS loop claims it itself).
    const claimed = config.httpThreads > 1;
    const port = claimed ? await claimLoopsPort(config.host, config.port) : config.port;
    if (metricsStarting !== null) metrics = await metricsStarting;
    // The writer listens on the loops' ports before any loop answers (the database may still be
    // out of reach: it is retried in the background, and delivery never waits for it).
    if (exposures !== null) await exposures.started();
    // The loop owns the pool from here on (its start destroys it when it fails). `exposures`: the
    // loop's link to the exposure writer, null when exposures are off.
    const mainLoop = Loop.start({ index: 0, config, feed, port, claimed, tls, counters: loopCounters[0]!, server: serverCounters, exposures: exposures?.links[0] ?? null }, pool);
    pool = null;
    const othersListening = loopThreads.start(port, tls);
    try {
      loop = await mainLoop;
    } finally {
      await othersListening.catch(() => undefined);
    }
    await othersListening;
    demo = await control.seed();
  } catch (err) {
    // A metrics thread that started while something else failed is released with the rest; an
    // opening still under way (a pool failed first) ends before the control thread is closed.
    if (metrics === null && metricsStarting !== null) metrics = await metricsStarting.catch(() => null);
    await opening.catch(() => undefined);
    await release();
    throw err;
  }
  const listening = loop;
  serverCounters[S_PHASE] = Phase.Serving;
  // The hint first: "listening on" is the line scripts and tests wait for as the readiness signal.
  if (demo !== null) printDemoHint(config, listening.port, demo);
  if (tls !== null) {
    logInfo(`HTTPS: ${describeMaterial(tls)}`);
    if (rotationMigratesHandshakes() === false) {
      logInfo('HTTPS: net.ipv4.tcp_migrate_req is 0: a certificate rotation resets connections still in their TCP handshake with the previous listener (set it to 1 for none; docs/deployment.md)');
    }
  }
  logInfo(delivery.description);
  logInfo(gcThreadsDescription(process.execArgv));
  logInfo(inliningDescription(widened));
  if (metrics !== null) logInfo(`metrics at ${config.metricsTls === null ? 'http' : 'https'}://${config.metricsHost}:${metrics.port}/metrics`);
  const loops = config.httpThreads === 1 ? '' : `${config.httpThreads} delivery loops, `;
  const scheme = tls === null ? 'http' : 'https';
  logInfo(`listening on ${scheme}://${config.host}:${listening.port} (${loops}${config.threads} worker threads, store ${describeStore(config.storeUrl)})`);
  if (opened.adminPort !== null) {
    logInfo(`admin listening on ${config.adminTls === null ? 'http' : 'https'}://${config.adminHost}:${opened.adminPort}`);
    logInfo(`console at ${consoleUrl(config, opened.adminPort)} (sign in with the admin token in ${opened.adminTokenAt ?? 'RCD_ADMIN_TOKEN'})`);
  }

  const mainCounters = loopCounters[0]!;
  const stopLoopDelayLog = startLoopDelayLog(loopDelayLogMs, () => requestsAnswered(mainCounters));
  // With loop threads, Node's default end of an uncaught error here (print it, exit) would abort the
  // process (SIGABRT and an assertion dump) as their uWS sockets are still open: close them first.
  if (config.httpThreads > 1) {
    process.once('uncaughtException', (err: unknown) => {
      logError(`delivery loop 0 crashed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      listening.abandon();
      setTimeout(() => process.exit(1), ABANDON_MS);
      void loopThreads.abandon().finally(() => process.exit(1));
    });
  }

  let closing: Promise<void> | null = null;
  const reloadTls = (): void => {
    if (closing !== null) return;
    if (config.tls !== null) rotateCertificate(config.tls, listening, loopThreads);
    control.reloadTls();
    metrics?.reloadTls();
  };
  const stopWatchingTls = watchTlsFiles(config, reloadTls);

  const close = (): Promise<void> => {
    closing ??= (async () => {
      const closeStarted = Date.now();
      stopWatchingTls();
      serverCounters[S_PHASE] = Phase.Draining;
      listening.markShuttingDown();
      loopThreads.markShuttingDown();
      await control.stopAdmin();
      // Every loop: stop accepting, drain, close its connections, then its pool share.
      await Promise.all([listening.stop(), loopThreads.stop()]);
      // The loops sent their last exposures as they stopped: the writer writes what it holds in what
      // is left of the shutdown timeout (at least a second: a database that answers takes it all).
      await exposures?.stop(Math.max(EXPOSURES_STOP_MIN_MS, config.shutdownTimeoutMs - (Date.now() - closeStarted)));
      stopLoopDelayLog();
      await metrics?.close();
      await control.close();
      feedPort.close();
    })();
    return closing;
  };

  return { port: listening.port, adminPort: opened.adminPort, fatal, close, reloadTls };
}

async function startMetrics(config: ServeConfig, tls: TlsMaterial | null, loops: readonly LoopCounters[], server: ServerCounters, exposures: ExposureCounters | null): Promise<MetricsThread> {
  try {
    return await startMetricsThread({
      host: config.metricsHost,
      port: config.metricsPort,
      loops,
      server,
      exposures,
      exposureSource: config.exposures,
      tls: config.metricsTls === null || tls === null ? null : { files: config.metricsTls, material: tls },
      log: { level: config.logLevel, format: config.logFormat },
    });
  } catch {
    throw new StartupError(`cannot listen on the metrics address ${config.metricsHost}:${config.metricsPort} (the port is in use or not permitted; --metrics false turns metrics off)`);
  }
}

/**
 * The exposure writer thread (docs/experiments.md). Its once-a-minute drop line sums the loops'
 * dropped-row counters (each loop's L_EXPOSURES_DROPPED, read from their shared arrays).
 */
function startExposureWriter(config: ServeConfig, counters: ExposureCounters, loops: readonly LoopCounters[]): ExposureWriterThread {
  const target = config.exposures!;
  return new ExposureWriterThread({
    target: { kind: target.kind, url: target.url },
    loops: config.httpThreads,
    counters,
    drops: { counters: loops, slot: L_EXPOSURES_DROPPED },
    log: { level: config.logLevel, format: config.logFormat },
  });
}

async function claimLoopsPort(host: string, port: number): Promise<number> {
  try {
    return await claimPort(host, port);
  } catch {
    throw new StartupError(`cannot listen on ${host}:${port} (the port is in use or not permitted)`);
  }
}

/**
 * Reads the certificate files again and, when they changed, has every loop serve them to new
 * connections; one log line for the whole server. A loop that cannot serve the new certificate keeps
 * the previous one, and the line names it.
 */
function rotateCertificate(files: TlsFiles, main: DeliveryLoop, threads: LoopThreads): void {
  const next: TlsMaterial | null = reloadTlsMaterial(files, main.tls);
  if (next === null) return;
  const loop0 = main.rotateTls(next).then(
    (changed) => ({ index: 0, changed, error: null }),
    (err: unknown) => ({ index: 0, changed: false, error: err instanceof Error ? err.message : String(err) }),
  );
  void Promise.all([loop0, threads.rotateTls(next)]).then(([first, rest]) => {
    const all = [first, ...rest];
    const failed = all.filter((r) => r.error !== null);
    if (failed.length > 0) {
      const which = all.length === 1 ? '' : ` (delivery loop ${failed.map((r) => r.index).join(', ')})`;
      logError(`TLS reload failed, still serving the previous certificate${which}: ${failed[0]!.error}`);
    } else if (all.some((r) => r.changed)) {
      logInfo(`TLS reload: new connections get ${describeMaterial(next)}`);
    }
  });
}

/** The console's address as a browser on this machine reaches it: a wildcard host is named as loopback. */
function consoleUrl(config: ServeConfig, port: number): string {
  const host = config.adminHost === '0.0.0.0' ? '127.0.0.1' : config.adminHost === '::' ? '[::1]' : config.adminHost.includes(':') ? `[${config.adminHost}]` : config.adminHost;
  return `${config.adminTls === null ? 'http' : 'https'}://${host}:${port}/console/`;
}

function describeStore(url: string): string {
  return url === 'memory:' ? 'memory: (nothing is kept after exit)' : describeStoreUrl(url);
}

/**
 * The demo key is printed only by the start that created it (keys are never logged otherwise);
 * later starts name the file it is kept in, and the curl line reads it from there.
 */
function printDemoHint(config: ServeConfig, port: number, demo: DemoNotice): void {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  let keyArg: string;
  if (demo.createdKey !== null && !humanLog()) {
    // JSON lines go to log stores, which must never hold a key: name where it is kept instead.
    logInfo(demo.keyFile === null ? 'demo API key created (a memory store: start with --log-format pretty to see it)' : `demo API key in ${demo.keyFile}`);
    keyArg = demo.keyFile === null ? "'X-Api-Key: <the demo key>'" : `"X-Api-Key: $(cat '${demo.keyFile}')"`;
  } else if (demo.createdKey !== null) {
    const where = demo.keyFile === null ? 'not written to a file: a memory store ends with the process' : `stored in ${demo.keyFile}`;
    logInfo(`demo API key: ${demo.createdKey} (${where})`);
    keyArg = `'X-Api-Key: ${demo.createdKey}'`;
  } else if (demo.keyFile !== null) {
    logInfo(`demo API key in ${demo.keyFile} (printed only when it was created)`);
    keyArg = `"X-Api-Key: $(cat '${demo.keyFile}')"`;
  } else {
    logInfo(`the demo environment's key file ${config.dataDir}/demo-api-key is missing; create a key with: rcd key create --env demo`);
    return;
  }
  logInfo('try:');
  logInfo(
    `  curl -s -X POST ${config.tls === null ? 'http' : 'https'}://${host}:${port}/api/v1/config/${DEMO_CONTENT_ID}/dynamic ` +
      `-H ${keyArg} -H 'Content-Type: application/json' -d '{"u":"player-1","p":{"level":12},"v":"1.0.0"}'`,
  );
}
