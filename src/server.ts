/**
 * The composition root of `rcd serve`: control thread (store, admin) → directory → worker pool →
 * uWS front end, and graceful shutdown in the reverse order.
 *
 * Start-up binds every listener before anything is written: a port in use stops the process before
 * the store is seeded or "listening on" is printed, with everything released.
 */
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { StartupError, type ServeConfig } from './runtime/config.js';
import { ControlThread } from './control/client.js';
import { DeliveryFeed } from './control/feed.js';
import type { DemoNotice } from './control/protocol.js';
import { DEMO_CONTENT_ID } from './runtime/demo.js';
import { createFrontCache } from './delivery/front-cache.js';
import { holdYoungGeneration, operatorSizedYoungGeneration } from './runtime/heap.js';
import { loopDelayInterval, startLoopDelayLog } from './runtime/loop-delay.js';
import { createApp, isNativeUws, listen, stopListening } from './delivery/app.js';
import type { FrontEndState } from './delivery/state.js';
import { compileHttpPolicy } from './delivery/http-policy.js';
import { EventStreams } from './delivery/events.js';
import { logError, logInfo, rateLimitedErrorLogger } from './runtime/log.js';
import { Batcher } from './pool/batcher.js';
import type { Batch, WorkerOptions } from './pool/protocol.js';

export interface RunningServer {
  readonly port: number;
  /** The admin listener's port, or null when it is disabled. */
  readonly adminPort: number | null;
  /** Resolves with the reason if the control thread ends while the server runs (the server must stop). */
  readonly fatal: Promise<string>;
  /** Stops accepting, finishes in-flight requests (bounded by the shutdown timeout), releases everything. */
  close(): Promise<void>;
}

/** How often the front end reports the API keys it saw (last-use bookkeeping is batched). */
const KEY_USE_REPORT_MS = 30_000;

export async function startServer(config: ServeConfig): Promise<RunningServer> {
  if (!isNativeUws()) {
    logError('the native uWebSockets.js addon did not load; running on its slow JavaScript fallback');
  }
  const loopDelayLogMs = loopDelayInterval(process.env.RCD_LOOP_DELAY_LOG_MS);
  // First: the directory and the pool allocate enough to grow the young generation.
  const holdYoung = !operatorSizedYoungGeneration(process.execArgv, process.env.NODE_OPTIONS);
  if (holdYoung) holdYoungGeneration();

  let reportFatal: (reason: string) => void = () => undefined;
  const fatal = new Promise<string>((resolve) => (reportFatal = resolve));
  const channel = new MessageChannel();
  const feed = new DeliveryFeed(channel.port1);
  const control = new ControlThread({ config, holdYoungGeneration: holdYoung }, [channel.port2], (reason) => {
    logError(reason);
    reportFatal(reason);
  });
  const release = async (pool: Piscina | null): Promise<void> => {
    if (pool !== null) await pool.destroy();
    await control.close();
    feed.close();
  };

  let opened: { readerUrl: string; adminPort: number | null };
  try {
    opened = await control.opened();
  } catch (err) {
    await release(null);
    throw err;
  }

  const workerData: WorkerOptions = {
    storeUrl: opened.readerUrl,
    cacheBytes: config.cacheBytes,
    holdYoungGeneration: holdYoung,
    compressMinBytes: config.compressMinBytes,
  };
  const pool = new Piscina({
    filename: new URL('./worker/entry.js', import.meta.url).href,
    minThreads: config.threads,
    maxThreads: config.threads,
    idleTimeout: Number.MAX_SAFE_INTEGER,
    workerData,
  });
  try {
    await loadEveryWorker(pool, config.threads);
  } catch (err) {
    await release(pool);
    throw err;
  }
  const state: FrontEndState = {
    directory: feed.directory,
    batcher: new Batcher(pool, config.threads, config.maxPendingJobs),
    frontCache: createFrontCache(config.cacheBytes),
    config,
    http: compileHttpPolicy(config),
    events: new EventStreams(
      { maxStreams: config.maxStreams, heartbeatMs: config.streamHeartbeatMs, jitterMs: config.streamJitterMs },
      feed.directory.seq,
    ),
    inFlight: 0,
    shuttingDown: false,
    storeAvailable: true,
    usedKeys: new Set(),
    onInternalError: rateLimitedErrorLogger(1000),
  };
  feed.attach(state);

  const app = createApp(state);
  let listening: Awaited<ReturnType<typeof listen>>;
  let demo: DemoNotice | null;
  try {
    try {
      listening = await listen(app, config.host, config.port);
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
    demo = await control.seed();
  } catch (err) {
    // Created but never listening (or listening only until here): closing it releases the socket.
    (app as unknown as { close(): void }).close();
    await release(pool);
    throw err;
  }
  // The hint first: "listening on" is the line scripts and tests wait for as the readiness signal.
  if (demo !== null) printDemoHint(config, listening.port, demo);
  logInfo(`listening on http://${config.host}:${listening.port} (${config.threads} worker threads, store ${describeStore(config.storeUrl)})`);
  if (opened.adminPort !== null) logInfo(`admin listening on http://${config.adminHost}:${opened.adminPort}`);

  const stopLoopDelayLog = startLoopDelayLog(loopDelayLogMs);
  const keyUseTimer = setInterval(() => feed.reportKeyUse(state.usedKeys), KEY_USE_REPORT_MS);
  keyUseTimer.unref();

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      state.shuttingDown = true;
      await control.stopAdmin();
      stopListening(listening.socket);
      state.events.closeAll();
      await waitForIdle(state, config.shutdownTimeoutMs);
      clearInterval(keyUseTimer);
      stopLoopDelayLog();
      // Closes keep-alive connections too; present at runtime in this uWS build, missing from its typings.
      (app as unknown as { close(): void }).close();
      await pool.destroy();
      feed.reportKeyUse(state.usedKeys);
      await control.close();
      feed.close();
    })();
    return closing;
  };

  return { port: listening.port, adminPort: opened.adminPort, fatal, close };
}

function describeStore(url: string): string {
  return url === 'memory:' ? 'memory: (nothing is kept after exit)' : url;
}

/**
 * The demo key is printed only by the start that created it (keys are never logged otherwise);
 * later starts name the file it is kept in, and the curl line reads it from there.
 */
function printDemoHint(config: ServeConfig, port: number, demo: DemoNotice): void {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  let keyArg: string;
  if (demo.createdKey !== null) {
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
    `  curl -s -X POST http://${host}:${port}/api/v1/config/${DEMO_CONTENT_ID}/dynamic ` +
      `-H ${keyArg} -H 'Content-Type: application/json' -d '{"u":"player-1","p":{"level":12},"v":"1.0.0"}'`,
  );
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

function waitForIdle(state: FrontEndState, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve) => {
    const check = (): void => {
      if (state.inFlight === 0 || Date.now() >= deadline) {
        if (state.inFlight > 0) logError(`shutdown timeout: ${state.inFlight} requests still in flight`);
        resolve();
        return;
      }
      setTimeout(check, 10);
    };
    check();
  });
}
