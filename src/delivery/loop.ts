/**
 * One delivery event loop: its uWS app, its front cache, its share of the render pool, and the
 * routing directory its feed keeps (src/control/feed.ts). The main thread runs loop 0 (with one
 * loop, the whole front end); src/delivery/loop-thread.ts runs each further loop in a worker
 * thread. Start: pool share (as soon as the store is open), then app and listen (once the feed
 * holds the first directory). Stop: stop accepting, drain, close connections, then the pool share.
 */
import { newRequestScratch } from './request-scratch.js';
import { getPriority } from 'node:os';
import type { Piscina } from 'piscina';
import type { DeliveryFeed } from '../control/feed.js';
import { StartupError, type ServeConfig } from '../runtime/config.js';
import { logError, rateLimitedErrorLogger } from '../runtime/log.js';
import { LOWEST_NICE, setThreadNice } from '../runtime/priority.js';
import type { TlsMaterial } from '../runtime/tls.js';
import { Batcher } from '../pool/batcher.js';
import { createPool, loaded, poolShare } from '../pool/pool.js';
import { createApp } from './app.js';
import { DeliveryListener } from './listener.js';
import { EventStreams } from './events.js';
import { createFrontCache } from './front-cache.js';
import { createPlanCache } from './combine-plan.js';
import { compileHttpPolicy } from './http-policy.js';
import type { FrontEndState } from './state.js';
import { ACCESS_REPORT_MS, newAccessSampler, reportAccess } from './access-log.js';
import { newKeyUse, takeKeyUse } from './key-use.js';
import { newExposureRecorder, stopRecorder, type ExposureRecorder } from '../exposures/recorder.js';
import type { ExposureLink } from '../exposures/protocol.js';
import { L_APPLIED_SEQ, L_FRONT_BYTES, L_FRONT_ENTRIES, L_IN_FLIGHT, L_POOL_PENDING, L_STREAMS, type LoopCounters, type ServerCounters } from '../metrics/layout.js';

/**
 * Fault injection for the tests of a crashed loop: `i:ms` makes loop i throw an uncaught error ms
 * after it listens. Never set in production.
 */
const CRASH_VARIABLE = 'RCD_TEST_LOOP_CRASH';

/** The front cache's part of a loop's cache budget; combine plans get the rest. */
const FRONT_CACHE_SHARE = 7 / 8;

/** How often a loop reports the API keys it saw (last-use bookkeeping is batched). */
const KEY_USE_REPORT_MS = 30_000;

/**
 * How often a loop copies its gauges (front cache size, pending jobs, in-flight requests, streams,
 * applied seq) into its shared counters: a timer a second instead of a store on every change.
 */
const GAUGE_SAMPLE_MS = 1000;

/** The first half of a loop's start: its pool share, begun as soon as the store is open. */
export interface LoopPoolOptions {
  /** 0 for the main thread's loop. */
  readonly index: number;
  readonly config: ServeConfig;
  /** The store URL the pool's workers open read-only. */
  readonly readerUrl: string;
  readonly holdYoungGeneration: boolean;
  /** The nice value the loop's thread and its pool's threads take once the pool started, or null (src/runtime/priority.ts). */
  readonly nice: number | null;
}

/** The second half: the loop's state and listener, once its feed holds the first directory. */
export interface LoopOptions {
  readonly index: number;
  readonly config: ServeConfig;
  readonly feed: DeliveryFeed;
  /** The port to bind; with several loops, bound by all of them with SO_REUSEPORT. */
  readonly port: number;
  /** True when the main thread claimed the port for every loop (src/delivery/listener.ts, claimPort): bind it shared. */
  readonly claimed: boolean;
  /** The certificate to serve (HTTPS), or null for plain HTTP. */
  readonly tls: TlsMaterial | null;
  /** This loop's shared counters (created by the main thread, read by the metrics listener). */
  readonly counters: LoopCounters;
  readonly server: ServerCounters;
  /**
   * This loop's link to the exposure writer (its port and the writer's queue counter), given when
   * config.exposures is set; absent or null: the loop notes no exposures.
   */
  readonly exposures?: ExposureLink | null;
}

export class DeliveryLoop {
  readonly port: number;
  private readonly state: FrontEndState;
  private readonly feed: DeliveryFeed;
  private readonly pool: Piscina;
  private readonly listener: DeliveryListener;
  private readonly keyUseTimer: NodeJS.Timeout;
  private readonly gaugeTimer: NodeJS.Timeout;
  private readonly accessTimer: NodeJS.Timeout | null;
  private stopping: Promise<void> | null = null;

  private constructor(opts: LoopOptions, state: FrontEndState, pool: Piscina, listener: DeliveryListener) {
    this.feed = opts.feed;
    this.state = state;
    this.pool = pool;
    this.listener = listener;
    this.port = listener.port;
    this.keyUseTimer = setInterval(reportKeyUse, KEY_USE_REPORT_MS, this.feed, state);
    this.keyUseTimer.unref();
    sampleGauges(state);
    this.gaugeTimer = setInterval(sampleGauges, GAUGE_SAMPLE_MS, state);
    this.gaugeTimer.unref();
    this.accessTimer = state.access === null ? null : setInterval(reportAccess, ACCESS_REPORT_MS, this.feed, state.access);
    this.accessTimer?.unref();
  }

  /**
   * Starts the loop's pool share and sets this thread's nice value; resolves once every worker
   * loaded its module. Needs only the store's reader URL: it runs while the control thread still
   * loads the directory, off a start's critical path. The workers load at the lowest priority, so
   * that they take only CPU the control thread leaves (at the loop's priority they would take it from
   * that load, and the start would come out no sooner), and each takes the loop's priority once loaded
   * (src/worker/entry.ts). Only where the loop's priority is set at all, so where it may be taken back.
   */
  static startPool(opts: LoopPoolOptions): Promise<Piscina> {
    const { config, index } = opts;
    const threads = poolShare(config.threads, config.httpThreads, index);
    if (opts.nice !== null) setThreadNice(LOWEST_NICE);
    const pool = createPool(threads, {
      storeUrl: opts.readerUrl,
      cacheBytes: config.cacheBytes,
      holdYoungGeneration: opts.holdYoungGeneration,
      compressMinBytes: config.compressMinBytes,
      nice: opts.nice,
    });
    if (!setThreadNice(opts.nice)) logError(`delivery loop ${index} could not set its nice value to ${String(opts.nice)}; it runs at ${getPriority(0)}`);
    return loaded(pool, threads);
  }

  /** Builds the loop around its started pool and listens; on failure the pool is destroyed too. */
  static async start(opts: LoopOptions, pool: Piscina): Promise<DeliveryLoop> {
    const { config, index } = opts;
    const loops = config.httpThreads;
    const threads = poolShare(config.threads, loops, index);
    // The fields every content request reads first, in one or two lines of the object; the rest after.
    const state: FrontEndState = {
      directory: opts.feed.directory,
      http: compileHttpPolicy(config),
      keyUse: newKeyUse(),
      inFlight: 0,
      shuttingDown: false,
      // A loop's share of --cache-mb: seven eighths for rendered heads, one for combine plans
      // (a plan copies heads that the front cache also holds, so the two stay within the share).
      frontCache: createFrontCache(Math.max(1, Math.floor((config.cacheBytes / loops) * FRONT_CACHE_SHARE))),
      counters: opts.counters,
      access: newAccessSampler(config.accessLogRate, config.accessLogBuffer),
      // The pending-job bound is shared out like the pool; a combine (and an OFREP bulk evaluation)
      // still needs room for all its items.
      batcher: new Batcher(pool, threads, Math.max(config.maxCombineIds, config.ofrepBulkMaxItems, Math.ceil(config.maxPendingJobs / loops)), opts.counters),
      combinePlans: createPlanCache(Math.max(1, Math.floor((config.cacheBytes / loops) * (1 - FRONT_CACHE_SHARE)))),
      config,
      loop: index,
      events: new EventStreams(
        { maxStreams: config.maxStreams, heartbeatMs: config.streamHeartbeatMs, jitterMs: config.streamJitterMs },
        opts.feed.directory.seq,
      ),
      storeAvailable: true,
      server: opts.server,
      exposures: exposureRecorderOf(opts),
      scratch: newRequestScratch(),
      onInternalError: rateLimitedErrorLogger(1000),
    };
    opts.feed.attach(state);
    let listener: DeliveryListener;
    try {
      listener = await DeliveryListener.open((material) => createApp(state, material), config.host, opts.port, opts.tls, opts.claimed);
    } catch (err) {
      await pool.destroy();
      throw new StartupError((err as Error).message);
    }
    scheduleTestCrash(index, process.env[CRASH_VARIABLE]);
    return new DeliveryLoop(opts, state, pool, listener);
  }

  /** The certificate served to new connections (null: plain HTTP). */
  get tls(): TlsMaterial | null {
    return this.listener.tls;
  }

  /**
   * New connections get `material` from the next turn on (src/delivery/listener.ts); false when it
   * is the certificate served already; rejects, keeping the current one, when it cannot be served.
   */
  rotateTls(material: TlsMaterial): Promise<boolean> {
    return this.listener.rotate(material);
  }

  /** Answers from now on carry Connection: close and /healthz says 503 (before the listener closes). */
  markShuttingDown(): void {
    this.state.shuttingDown = true;
  }

  /**
   * Stops accepting, waits for in-flight requests (bounded by the shutdown timeout), closes the
   * remaining connections, then stops this loop's pool share and sends the last key use and exposures.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.state.shuttingDown = true;
      this.listener.stopAccepting();
      this.state.events.closeAll();
      await waitForIdle(this.state, this.state.config.shutdownTimeoutMs);
      clearInterval(this.keyUseTimer);
      clearInterval(this.gaugeTimer);
      if (this.accessTimer !== null) clearInterval(this.accessTimer);
      // Closes keep-alive connections too, of the current app and of those a rotation retired.
      this.listener.close();
      await this.pool.destroy();
      // The exposures of every request answered: the last batch, before the writer stops.
      if (this.state.exposures !== null) stopRecorder(this.state.exposures);
      reportKeyUse(this.feed, this.state);
      if (this.state.access !== null) reportAccess(this.feed, this.state.access);
    })();
    return this.stopping;
  }

  /**
   * After an uncaught failure on this thread: closes the listener and every connection so the thread
   * can end (a worker thread that ends with uWS sockets open aborts the whole process). No drain.
   */
  abandon(): void {
    try {
      this.listener.close();
    } catch {
      // Ending the process anyway; nothing more to release.
    }
  }
}

function scheduleTestCrash(index: number, spec: string | undefined): void {
  const m = /^(\d+):(\d+)$/.exec(spec ?? '');
  if (m === null || Number(m[1]) !== index) return;
  setTimeout(() => {
    throw new Error(`${CRASH_VARIABLE}: delivery loop ${index} crashed on purpose`);
  }, Number(m[2]));
}

/** The loop's exposure recorder: with --exposures set and a link to the writer given, else none. */
function exposureRecorderOf(opts: LoopOptions): ExposureRecorder | null {
  const link = opts.exposures ?? null;
  const settings = opts.config.exposures;
  return link === null || settings === null ? null : newExposureRecorder(link, settings, opts.counters);
}

function sampleGauges(state: FrontEndState): void {
  const c = state.counters;
  c[L_FRONT_BYTES] = state.frontCache.calculatedSize;
  c[L_FRONT_ENTRIES] = state.frontCache.size;
  c[L_POOL_PENDING] = state.batcher.pending;
  c[L_IN_FLIGHT] = state.inFlight;
  c[L_STREAMS] = state.events.count;
  c[L_APPLIED_SEQ] = state.directory.seq;
}

function reportKeyUse(feed: DeliveryFeed, state: FrontEndState): void {
  feed.reportKeyUse(takeKeyUse(state.keyUse));
}

function waitForIdle(state: FrontEndState, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve) => {
    const check = (): void => {
      if (state.inFlight === 0 || Date.now() >= deadline) {
        if (state.inFlight > 0) logError(`shutdown timeout: ${state.inFlight} requests still in flight on delivery loop ${state.loop}`);
        resolve();
        return;
      }
      setTimeout(check, 10);
    };
    check();
  });
}
