/**
 * The control thread: everything of `rcd serve` that can wait on the store. It owns the store's
 * writer connection, the admin state, the admin listener and the key-use bookkeeping, so a store
 * locked by another process (or slow storage) delays admin writes only, never a delivery request.
 *
 * At start it sends every delivery loop the whole directory snapshot; after each write that changes
 * routing data it reads the change log from the sequence number the loops applied, loads the current
 * state of what changed and sends it as a delta (src/control/protocol.ts, src/control/delta.ts); the
 * write answers once every loop has applied it. A reader that fell behind the log's retained window
 * (or a delta a loop could not apply) gets a whole snapshot again.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { startAdminServer, type AdminServer } from '../admin/server/server.js';
import { openAdminState } from '../admin/server/open-state.js';
import type { AdminStateStore } from '../admin/server/state.js';
import type { ServeConfig } from '../runtime/config.js';
import { describeMaterial, loadTlsMaterial, reloadTlsMaterial } from '../runtime/tls.js';
import { DEMO_ENV, demoBundle, demoKeyPath, newDemoKey, writeDemoKey } from '../runtime/demo.js';
import { RcdError } from '../runtime/errors.js';
import { holdYoungGeneration } from '../runtime/heap.js';
import { configureLog, logError, logInfo } from '../runtime/log.js';
import { describeStoreUrl, openStore } from '../store/index.js';
import type { Store } from '../store/types.js';
import { setContentLimits } from '../store/jsonc.js';
import { Feeds } from './feeds.js';
import { ImportPool } from './import-pool.js';
import { BulkPriority } from '../runtime/priority.js';
import { accessWriter } from './access-writer.js';
import { timeStoreWrites } from '../metrics/store-timing.js';
import { sampleWebhooks } from '../metrics/webhooks.js';
import { scheduleMetrics } from '../metrics/schedules.js';
import { S_APPLIED_SEQ, S_STORE_DOWN_SINCE, observePublish } from '../metrics/layout.js';
import { StoreFollower } from './follower.js';
import { NodeRegistry, type Propagation } from './nodes.js';
import type {
  ControlCommand,
  ControlEvent,
  ControlFailure,
  ControlInit,
  DemoNotice,
  StoreStatus,
} from './protocol.js';

/** How often the store's status is checked between writes (each write checks it too). */
const STORE_CHECK_MS = 1000;
/** A store unreachable at start is retried with this backoff (first, cap). */
const OPEN_RETRY_FIRST_MS = 250;
const OPEN_RETRY_MAX_MS = 5000;

const lifecycle = parentPort;
if (lifecycle === null) throw new Error('src/control/thread.ts runs as a worker thread');
const init = workerData as ControlInit;
const config: ServeConfig = init.config;
setContentLimits(config.content);
// This thread's start put V8's process-wide growth factor back to its default; set it again.
if (init.holdYoungGeneration) holdYoungGeneration();

function post(event: ControlEvent): void {
  lifecycle!.postMessage(event);
}

// This thread writes its own lines, synchronously to fd 1 and 2 (a line is one write(2), so lines of
// threads never mix; none is lost at exit). Sent to the main thread instead, every admin write's audit
// line would cost the delivery loop there a format and a blocking write, and stall the loop whenever
// the reader of stdout fell behind.
configureLog({ level: config.logLevel, format: config.logFormat });

let store: Store | null = null;
let adminState: AdminStateStore | null = null;
let admin: AdminServer | null = null;
let checkTimer: NodeJS.Timeout | null = null;
let storeReason: string | null = null;
const usedKeys = new Set<string>();
let usedAt = '';

// Imports, syncs and big change batches yield the cores to delivery where the thread may take its
// priority back afterwards (src/runtime/priority.ts); single writes and their propagation never wait.
const bulk = new BulkPriority(config.bulkNice, logError);
const feeds = new Feeds(init.feeds, onKeyUse, logError, {
  bulk,
  ...(init.config.accessLogRate > 0 ? { onAccess: accessWriter(init.config.logFormat) } : {}),
});

let nodes: NodeRegistry | null = null;
let follower: StoreFollower | null = null;
const imports = new ImportPool({ niceIncrement: config.importNice, holdYoungGeneration: init.holdYoungGeneration, contentLimits: config.content }, logInfo);

/**
 * Brings every delivery loop to the store's current state, then records it as this node's applied
 * seq; resolves with that seq. Feeds.publish runs one publish at a time and keeps the applied seq.
 */
async function publish(): Promise<number> {
  const before = feeds.appliedSeq;
  const t0 = performance.now();
  const seq = await feeds.publish(store!);
  if (seq !== before) {
    observePublish(init.counters, performance.now() - t0);
    init.counters[S_APPLIED_SEQ] = seq;
  }
  if (nodes !== null) await nodes.applied(seq);
  return seq;
}

/**
 * The change log is pruned when this many entries were added since the last pruning: the log holds
 * at most 1% more than --change-log-entries, and a write costs no extra transaction (a delete and an
 * fsync each) 99 times in 100.
 */
const PRUNE_STEP = Math.max(1, Math.floor(config.changeLogEntries / 100));
let prunedAtSeq = 0;

/** After an admin write: live in this process, then on every live node of the store (bounded). */
async function publishWrite(): Promise<Propagation> {
  const seq = await publish();
  const propagation = await nodes!.waitFor(seq, config.propagationTimeoutMs);
  if (seq - prunedAtSeq >= PRUNE_STEP) {
    prunedAtSeq = seq;
    try {
      await store!.pruneChanges(config.changeLogEntries);
    } catch (err) {
      logError(`pruning the change log failed: ${describe(err)}`);
    }
  }
  return propagation;
}

/**
 * Another process committed: publish what the change log holds beyond what the loops applied.
 * Heartbeats move the data version too; then publish reads the log once, finds nothing and sends nothing.
 */
async function followExternalWrite(): Promise<void> {
  await publish();
}

async function open(): Promise<void> {
  // Read by the main thread before any thread started (the admin state reads the webhook key file
  // again when it opens).
  const token = init.adminToken;
  store = timeStoreWrites(await openStoreRetrying(), init.counters);
  post({ type: 'store-open', readerUrl: store.readerUrl });
  await publish();
  // A member of the fleet before the admin address answers: a write taken at once counts this node.
  nodes = new NodeRegistry(store, logError);
  await nodes.start(feeds.appliedSeq);
  let adminPort: number | null = null;
  if (token !== null) {
    if (token.source === 'file') logInfo(`admin token in ${token.path}`);
    // memory: the store's own in-memory database (its readerUrl names it), where guarded writes read the tokens.
    adminState = openAdminState(config.storeUrl.startsWith('memory:') ? store.readerUrl : config.storeUrl, { dataDir: config.dataDir, log: logError, busyTimeoutMs: config.storeBusyTimeoutMs });
    try {
      admin = await startAdminServer({
        host: config.adminHost,
        port: config.adminPort,
        token: token.token,
        store,
        state: adminState,
        onChange: publishWrite,
        publishLocal: publish,
        log: logInfo,
        // Held past the longest a write waits for the fleet, so a writer that dies mid-way still sends them.
        webhooks: { ...config.webhooks, holdMs: config.propagationTimeoutMs + 5000 },
        tls: config.adminTls === null ? null : loadTlsMaterial(config.adminTls),
        imports,
        bulk,
        schedules: {
          limits: { maxAheadMs: config.scheduleMaxDays * 86_400_000, maxOpen: config.scheduleMaxPending },
          metrics: scheduleMetrics(init.counters),
        },
        previews: { maxOps: config.previewMaxOps, concurrency: config.previewConcurrency },
        exposures: config.exposures,
        streams: { maxStreams: config.adminMaxStreams, heartbeatMs: config.streamHeartbeatMs },
      });
    } catch (err) {
      throw new Error(`cannot listen on the admin address ${config.adminHost}:${config.adminPort}: ${describe(err)}`);
    }
    adminPort = admin.port;
  }
  follower = new StoreFollower(store, followExternalWrite, (err) => {
    // An unreachable store is reported once by checkStore, not once per catch-up attempt.
    if (err instanceof RcdError && err.code === 'store_unavailable') return;
    logError(`following the store's changes failed: ${describe(err)}`);
  });
  await follower.start();
  checkTimer = setInterval(checkStore, STORE_CHECK_MS);
  logInfo(bulk.description);
  post({ type: 'opened', adminPort, adminTokenAt: token === null ? null : token.source === 'file' ? `the file ${token.path}` : 'the variable RCD_ADMIN_TOKEN' });
}

/**
 * Opens the store; one that is unreachable (a database not up yet, or out of reach) is retried with
 * backoff, saying so each time, until it answers or the process is stopped. Any other failure
 * (a bad URL, a refused login, a schema too new) stops the start.
 */
async function openStoreRetrying(): Promise<Store> {
  const shown = describeStoreUrl(config.storeUrl);
  let delay = OPEN_RETRY_FIRST_MS;
  for (;;) {
    try {
      return await openStore(config.storeUrl, { busyTimeoutMs: config.storeBusyTimeoutMs, poolSize: config.pgPoolSize });
    } catch (err) {
      if (!(err instanceof RcdError) || err.code !== 'store_unavailable') throw new Error(`cannot open the store ${shown}: ${describe(err)}`);
      logError(`the store ${shown} is unreachable (${err.message}); retrying in ${delay} ms`);
    }
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, OPEN_RETRY_MAX_MS);
  }
}

async function seed(): Promise<DemoNotice | null> {
  const s = store!;
  if (config.importFile !== null) await importFile(s, config.importFile);
  const demo = config.seedDemo ? await seedDemo(s) : null;
  await publish();
  return demo;
}

async function importFile(s: Store, file: string): Promise<void> {
  let bundle: unknown;
  try {
    bundle = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new RcdError('invalid_bundle', `cannot read bundle ${file}: ${(err as Error).message}`);
  }
  const report = await s.importBundle(bundle);
  logInfo(
    `imported ${file}: ${report.environmentsCreated} environments created, ${report.keysAdded} keys added, ` +
      `${report.revisionsAdded} revisions added, ${report.mappingsChanged} mappings changed`,
  );
}

/** Seeds the demo environment into an empty store; says what the operator needs to know about its key. */
async function seedDemo(s: Store): Promise<DemoNotice | null> {
  const memory = config.storeUrl.startsWith('memory:');
  const envs = await s.listEnvironments();
  if (envs.length === 0) {
    const key = newDemoKey();
    // A memory store's demo ends with the process: a file would outlive it and name a dead key.
    const keyFile = memory ? null : writeDemoKey(config.dataDir, key);
    await s.importBundle(demoBundle(key));
    logInfo(`seeded a demo environment "${DEMO_ENV}" (first start of an empty store)`);
    return { createdKey: key, keyFile };
  }
  if (!envs.some((e) => e.id === DEMO_ENV)) return null;
  const path = demoKeyPath(config.dataDir);
  return { createdKey: null, keyFile: !memory && existsSync(path) ? path : null };
}

function onKeyUse(keyIds: readonly string[], at: string): void {
  for (const id of keyIds) usedKeys.add(id);
  usedAt = at;
  void recordKeyUse();
}

/** Last-use bookkeeping; ids that cannot be written now stay queued (bounded by the number of keys). */
async function recordKeyUse(): Promise<void> {
  if (store === null || usedKeys.size === 0 || storeReason !== null) return;
  const ids = [...usedKeys];
  usedKeys.clear();
  try {
    await store.recordKeyUse(ids, usedAt);
  } catch (err) {
    for (const id of ids) usedKeys.add(id);
    logError(`recording API key use failed: ${describe(err)}`);
  }
}

/** Logs a change of the store's status and tells the delivery loops (/healthz reports it). */
function checkStore(): void {
  if (store === null) return;
  if (admin !== null && storeReason === null) sampleWebhooks(init.counters, admin, store);
  const reason = store.unavailableReason();
  if (reason === storeReason) return;
  storeReason = reason;
  init.counters[S_STORE_DOWN_SINCE] = reason === null ? 0 : Date.now();
  if (reason !== null) {
    logError(`the store is unavailable: ${reason}. Delivery goes on from the last good state; writes answer 503 store_unavailable meanwhile`);
  } else {
    logInfo('the store is available again');
  }
  const status: StoreStatus = reason === null ? 'ok' : 'unavailable';
  feeds.send({ type: 'store-status', status, reason });
}

async function stopAdmin(): Promise<void> {
  if (admin !== null) await admin.close();
}

/** Releases everything, in order; safe after a partial open. */
async function close(): Promise<void> {
  if (checkTimer !== null) clearInterval(checkTimer);
  checkTimer = null;
  follower?.stop();
  follower = null;
  await nodes?.stop();
  nodes = null;
  await stopAdmin();
  await imports.close();
  feeds.drain();
  checkStore();
  await recordKeyUse();
  feeds.close();
  if (adminState !== null) await adminState.close();
  adminState = null;
  if (store !== null) await store.close();
  store = null;
}

function describe(err: unknown): string {
  if (err instanceof RcdError) return `${err.code}: ${err.message}`;
  const code = (err as { code?: unknown }).code;
  if (code === 'EADDRINUSE') return 'the address is already in use';
  if (code === 'EACCES') return 'permission denied';
  return err instanceof Error ? err.message : String(err);
}

function failure(err: unknown): ControlFailure {
  if (err instanceof RcdError) return { code: err.code, message: err.message, details: err.details };
  return { code: null, message: describe(err) };
}

async function handle(cmd: ControlCommand): Promise<void> {
  try {
    switch (cmd.type) {
      case 'seed':
        post({ type: 'seeded', demo: await seed() });
        return;
      case 'stop-admin':
        await stopAdmin();
        post({ type: 'admin-stopped' });
        return;
      case 'close':
        await close();
        post({ type: 'closed' });
        return;
      case 'reload-tls':
        if (admin !== null && config.adminTls !== null) {
          const next = reloadTlsMaterial(config.adminTls, admin.tls);
          if (next !== null) {
            try {
              admin.rotateTls(next);
              logInfo(`admin TLS reload: new connections get ${describeMaterial(next)}`);
            } catch (err) {
              logError(`admin TLS reload failed, still serving the previous certificate: ${describe(err)}`);
            }
          }
        }
        return;
    }
  } catch (err) {
    post({ type: 'failed', failure: failure(err) });
  }
}

lifecycle.on('message', (cmd: ControlCommand) => void handle(cmd));

open().catch(async (err: unknown) => {
  const f = failure(err);
  try {
    await close();
  } catch (closeErr) {
    logError(`releasing the store after a failed start: ${describe(closeErr)}`);
  }
  post({ type: 'failed', failure: f });
});
