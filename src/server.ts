/**
 * The composition root of `rcd serve`: store → directory → worker pool → uWS front end (+ admin
 * listener), and graceful shutdown in the reverse order.
 */
import { readFileSync } from 'node:fs';
import { Piscina } from 'piscina';
import { startAdminServer } from './admin/server.js';
import { loadSealKey } from './admin/sealed.js';
import { openAdminState } from './admin/state.js';
import { resolveAdminToken, type ResolvedAdminToken } from './admin/token.js';
import type { ServeConfig } from './config.js';
import { DEMO_CONTENT_ID, DEMO_ENV, demoBundle, newDemoKey, readDemoKey } from './demo.js';
import { Directory, MappingLibrary } from './directory.js';
import { createFrontCache } from './http/front-cache.js';
import { RcdError } from './errors.js';
import { holdYoungGeneration, operatorSizedYoungGeneration } from './heap.js';
import { createApp, isNativeUws, listen, stopListening } from './http/app.js';
import type { FrontEndState } from './http/state.js';
import { logError, logInfo, rateLimitedErrorLogger } from './log.js';
import { Batcher } from './pool/batcher.js';
import type { Batch, WorkerOptions } from './pool/protocol.js';
import { openRevisionReader, openStore } from './store/index.js';
import type { Store } from './store/types.js';

export interface RunningServer {
  readonly port: number;
  readonly store: Store;
  /** Rebuilds the routing directory from the store; resolves once new requests see the change. */
  refresh(): Promise<void>;
  /** Stops accepting, finishes in-flight requests (bounded by the shutdown timeout), releases everything. */
  close(): Promise<void>;
}

const KEY_USE_FLUSH_MS = 30_000;

export async function startServer(config: ServeConfig): Promise<RunningServer> {
  if (!isNativeUws()) {
    logError('the native uWebSockets.js addon did not load; running on its slow JavaScript fallback');
  }
  // First: opening the store and importing a bundle allocate enough to grow the young generation.
  const holdYoung = !operatorSizedYoungGeneration(process.execArgv, process.env.NODE_OPTIONS);
  if (holdYoung) holdYoungGeneration();
  // Before the store opens or anything listens: an unusable admin token or webhook key file stops
  // the start with one line (the admin state reads the key file again when it opens).
  const adminToken = config.adminEnabled ? resolveAdminToken(config.dataDir) : null;
  if (adminToken !== null && config.storeUrl.startsWith('sqlite:')) loadSealKey(config.dataDir);
  const store = await openStore(config.storeUrl);
  let demoKey: string | null = null;
  try {
    if (config.importFile !== null) await importFile(store, config.importFile);
    if (config.seedDemo) demoKey = await seedDemo(store, config);
  } catch (err) {
    await store.close();
    throw err;
  }

  const workerData: WorkerOptions = { storeUrl: store.readerUrl, cacheBytes: config.cacheBytes, holdYoungGeneration: holdYoung };
  const pool = new Piscina({
    filename: new URL('./worker/index.js', import.meta.url).href,
    minThreads: config.threads,
    maxThreads: config.threads,
    idleTimeout: Number.MAX_SAFE_INTEGER,
    workerData,
  });
  try {
    await loadEveryWorker(pool, config.threads);
  } catch (err) {
    await pool.destroy();
    await store.close();
    throw err;
  }
  // The front end reads mapping texts (by immutable id, when the directory is rebuilt) to compile and
  // evaluate rules itself; content bytes stay with the workers.
  const mainReader = openRevisionReader(store.readerUrl);
  const mappings = new MappingLibrary(mainReader, (id, err) =>
    logError(`mapping ${id} cannot be compiled; wrapped requests for its content answer 500: ${(err as Error).message}`),
  );
  const state: FrontEndState = {
    directory: new Directory(await store.loadDirectory(), mappings),
    batcher: new Batcher(pool, config.threads, config.maxPendingJobs),
    frontCache: createFrontCache(config.cacheBytes),
    config,
    inFlight: 0,
    shuttingDown: false,
    usedKeys: new Set(),
    onInternalError: rateLimitedErrorLogger(1000),
  };

  const app = createApp(state);
  let listening: Awaited<ReturnType<typeof listen>>;
  try {
    listening = await listen(app, config.host, config.port);
  } catch (err) {
    await pool.destroy();
    mainReader.close();
    await store.close();
    throw err;
  }
  // The hint first: "listening on" is the line scripts and tests wait for as the readiness signal.
  if (demoKey !== null) printDemoHint(config, listening.port, demoKey);
  logInfo(`listening on http://${config.host}:${listening.port} (${config.threads} worker threads, store ${describeStore(config.storeUrl)})`);

  const flushTimer = setInterval(() => void flushKeyUse(store, state), KEY_USE_FLUSH_MS);
  flushTimer.unref();

  const refresh = async (): Promise<void> => {
    state.directory = new Directory(await store.loadDirectory(), mappings);
  };

  const admin = adminToken !== null ? await startAdmin(config, store, refresh, adminToken) : null;

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      state.shuttingDown = true;
      if (admin !== null) await admin.close();
      stopListening(listening.socket);
      await waitForIdle(state, config.shutdownTimeoutMs);
      clearInterval(flushTimer);
      // Closes keep-alive connections too; present at runtime in this uWS build, missing from its typings.
      (app as unknown as { close(): void }).close();
      await pool.destroy();
      mainReader.close();
      await flushKeyUse(store, state);
      await store.close();
    })();
    return closing;
  };

  return { port: listening.port, store, refresh, close };
}

/** The management plane on its own listener; its writes call `refresh` before they answer ("live at once"). */
async function startAdmin(
  config: ServeConfig,
  store: Store,
  refresh: () => Promise<void>,
  token: ResolvedAdminToken,
): Promise<{ close(): Promise<void> }> {
  if (token.source === 'file') logInfo(`admin token in ${token.path}`);
  const state = openAdminState(config.storeUrl, { dataDir: config.dataDir, log: logError });
  const server = await startAdminServer({
    host: config.adminHost,
    port: config.adminPort,
    token: token.token,
    store,
    state,
    onChange: refresh,
    log: logInfo,
  });
  logInfo(`admin listening on http://${config.adminHost}:${server.port}`);
  return {
    close: async () => {
      await server.close();
      await state.close();
    },
  };
}

function describeStore(url: string): string {
  return url === 'memory:' ? 'memory: (nothing is kept after exit)' : url;
}

async function importFile(store: Store, file: string): Promise<void> {
  let bundle: unknown;
  try {
    bundle = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new RcdError('invalid_bundle', `cannot read bundle ${file}: ${(err as Error).message}`);
  }
  const report = await store.importBundle(bundle);
  logInfo(
    `imported ${file}: ${report.environmentsCreated} environments created, ${report.keysAdded} keys added, ` +
      `${report.revisionsAdded} revisions added, ${report.mappingsChanged} mappings changed`,
  );
}

/** Seeds the demo environment into an empty store; returns the demo key when the demo environment is there. */
async function seedDemo(store: Store, config: ServeConfig): Promise<string | null> {
  const envs = await store.listEnvironments();
  if (envs.length === 0) {
    const key = newDemoKey(config.dataDir);
    await store.importBundle(demoBundle(key));
    logInfo(`seeded a demo environment "${DEMO_ENV}" (first start of an empty store)`);
    return key;
  }
  return envs.some((e) => e.id === DEMO_ENV) ? readDemoKey(config.dataDir) : null;
}

function printDemoHint(config: ServeConfig, port: number, key: string): void {
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  logInfo(`demo API key: ${key} (stored in ${config.dataDir}/demo-api-key)`);
  logInfo('try:');
  logInfo(
    `  curl -s -X POST http://${host}:${port}/api/v1/config/${DEMO_CONTENT_ID}/dynamic ` +
      `-H 'X-Api-Key: ${key}' -H 'Content-Type: application/json' -d '{"u":"player-1","p":{"level":12},"v":"1.0.0"}'`,
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

async function flushKeyUse(store: Store, state: FrontEndState): Promise<void> {
  if (state.usedKeys.size === 0) return;
  const ids = [...state.usedKeys];
  state.usedKeys.clear();
  try {
    await store.recordKeyUse(ids, new Date().toISOString());
  } catch (err) {
    logError(`recording API key use failed: ${(err as Error).message}`);
  }
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
