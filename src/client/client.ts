/**
 * RcdClient: the catalog protocol for a game (docs/client.md).
 *
 * A refresh reads the catalog with its ETag, then fetches in one dynamic combine (cut at
 * `maxCombineIds`) the ids whose catalog hash differs from the cached one plus the ids with a mapping
 * (`d: true`: a mapping edit does not change `h`, so they are revalidated with the combine's ETag and
 * usually answered 304), stores the result and tells what changed. Any failure leaves the last good
 * values in place and is reported; the next attempt waits out a jittered exponential backoff that
 * never undercuts Retry-After. One refresh at a time: a call while one runs shares its result.
 *
 * Browser-safe: fetch, timers and JSON only.
 */
import { backoffDelay, type BackoffOptions } from './backoff.js';
import { checkClientDefaults, type ClientDefaults } from './defaults.js';
import { RcdClientError } from './errors.js';
import type { Endpoint, FetchLike } from './http.js';
import { emptyState, parseState, setOwn, stateFromDefaults, type CacheState, type CachedItem, type Segment } from './state.js';
import { memoryStorage, type ClientStorage } from './storage.js';
import { ChangeStream, type ChangeNotice, type StreamMessage } from './stream.js';
import { syncState } from './sync.js';

export interface UserContext {
  /** User id (meta.uid and the A/B group are derived from it). */
  readonly u?: string;
  /** Attributes the mapping rules test. */
  readonly p?: Readonly<Record<string, unknown>>;
  /** App version X.Y.Z: picks the newest revision whose minAppVersion fits. */
  readonly v?: string;
}

export interface RcdClientOptions {
  /** The delivery API's origin (and path prefix, if behind one), e.g. https://config.example.com */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly context?: UserContext;
  /** Where the cache is kept between launches (default: memory only). `cache` is an alias. */
  readonly storage?: ClientStorage;
  readonly cache?: ClientStorage;
  /** First-launch values (`rcd export --client-defaults ENV`), used until the server answered. */
  readonly defaults?: unknown;
  /** The server's --max-combine-ids (default 100): a longer id list is cut into several combines. */
  readonly maxCombineIds?: number;
  readonly backoff?: BackoffOptions;
  /** Retry a failed refresh by itself once the backoff delay passed (default true). */
  readonly autoRetry?: boolean;
  /** A fetch implementation (default: the global fetch). */
  readonly fetch?: FetchLike;
}

export interface RefreshResult {
  /** Ids whose data or segments changed (added, edited, removed). */
  readonly changed: readonly string[];
  /** True when the server could not be asked or refused: the values are the last good ones. */
  readonly fromCache: boolean;
  /** Why, when fromCache is true; also set (code `storage`) when fresh values could not be stored. */
  readonly error?: RcdClientError;
}

export interface ItemMeta {
  /** Hash of the delivered revision. */
  readonly hash: string | null;
  /** Applied mapping segments (`[]`: defaults). */
  readonly seg: readonly Segment[];
  /** The catalog hash the item was fetched under. */
  readonly h: string;
  /** 'defaults' while the value comes from the shipped defaults. */
  readonly source: 'server' | 'defaults';
}

export type RefreshListener = (result: RefreshResult) => void;

const DEFAULT_MAX_COMBINE_IDS = 100;

export class RcdClient {
  private readonly endpoint: Endpoint;
  private readonly storage: ClientStorage;
  private readonly defaults: ClientDefaults | null;
  private readonly maxCombineIds: number;
  private readonly backoff: BackoffOptions;
  private readonly autoRetry: boolean;
  private context: UserContext;
  private contextText: string;
  private state: CacheState | null = null;
  private loading: Promise<CacheState> | null = null;
  private firstState: CacheState | null = null;
  private readonly parsed = new Map<string, unknown>();
  private inFlight: Promise<RefreshResult> | null = null;
  private failures = 0;
  private lastError: RcdClientError | null = null;
  private retryAt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly listeners = new Set<RefreshListener>();
  private closed = false;
  private readonly subscribers = new Set<RefreshListener>();
  private stream: ChangeStream | null = null;
  private streamTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(options: RcdClientOptions) {
    if (typeof options.baseUrl !== 'string' || options.baseUrl === '') throw new TypeError('baseUrl is required');
    if (typeof options.apiKey !== 'string' || options.apiKey === '') throw new TypeError('apiKey is required');
    const fetchImpl = options.fetch ?? ((input: string, init: RequestInit) => globalThis.fetch(input, init));
    this.endpoint = { baseUrl: options.baseUrl.replace(/\/+$/, ''), apiKey: options.apiKey, fetch: fetchImpl };
    this.storage = options.storage ?? options.cache ?? memoryStorage();
    this.defaults = options.defaults === undefined ? null : checkClientDefaults(options.defaults);
    this.maxCombineIds = options.maxCombineIds ?? DEFAULT_MAX_COMBINE_IDS;
    if (!Number.isInteger(this.maxCombineIds) || this.maxCombineIds < 1) throw new TypeError('maxCombineIds must be a positive integer');
    this.backoff = options.backoff ?? {};
    this.autoRetry = options.autoRetry ?? true;
    this.context = options.context ?? {};
    this.contextText = contextBody(this.context);
  }

  /**
   * Brings the cache up to date. Never rejects: a failure resolves `fromCache: true` with the error,
   * and the values stay the last good ones. Calls while a refresh runs share it.
   */
  refresh(): Promise<RefreshResult> {
    if (this.inFlight !== null) return this.inFlight;
    const run = this.runRefresh().finally(() => {
      this.inFlight = null;
    });
    this.inFlight = run;
    return run;
  }

  /** The current data of a content id (parsed once per change; do not mutate it), or undefined. */
  get<T = unknown>(id: string): T | undefined {
    if (this.parsed.has(id)) return this.parsed.get(id) as T;
    const item = this.currentItem(id);
    if (item === undefined || item.text === null) return undefined;
    const value: unknown = JSON.parse(item.text);
    this.parsed.set(id, value);
    return value as T;
  }

  /** The hash and segments of a content id, or undefined when it has no value. */
  meta(id: string): ItemMeta | undefined {
    const item = this.currentItem(id);
    if (item === undefined || item.text === null) return undefined;
    return { hash: item.hash, seg: item.seg, h: item.h, source: item.source };
  }

  /** Every content id that has a value. */
  ids(): string[] {
    const items = (this.state ?? this.initialState()).items;
    return Object.keys(items).filter((id) => items[id]!.text !== null);
  }

  /** The error of the last refresh, null after a success. */
  get error(): RcdClientError | null {
    return this.lastError;
  }

  /**
   * A new user context (a login, an app update): the next refresh fetches every id again for it;
   * until then the values of the previous context are served.
   */
  setContext(context: UserContext): void {
    this.context = context;
    this.contextText = contextBody(context);
  }

  /**
   * Calls `listener` with the result of every refresh made from now on (automatic retries included).
   * Returns the function that removes it.
   */
  onRefresh(listener: RefreshListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Follows the environment's change stream and refreshes when it announces a change (after a random
   * delay within the server's jitter window, so a fleet does not re-fetch in the same second); the
   * listener gets the result of every refresh from then on. The stream stays open while at least one
   * subscriber remains; it reconnects by itself (backoff, Last-Event-ID: missed changes are
   * replayed). Returns the function that unsubscribes.
   */
  subscribe(listener: RefreshListener): () => void {
    this.listeners.add(listener);
    this.subscribers.add(listener);
    if (this.stream === null && !this.closed) {
      this.stream = new ChangeStream(this.endpoint, this.backoff, (message) => this.onStreamMessage(message));
      this.stream.start();
    }
    return () => {
      this.listeners.delete(listener);
      this.subscribers.delete(listener);
      if (this.subscribers.size === 0) this.stopStream();
    };
  }

  /** Stops automatic retries and the change stream; the values stay readable. */
  close(): void {
    this.closed = true;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.stopStream();
    this.listeners.clear();
    this.subscribers.clear();
  }

  private stopStream(): void {
    this.stream?.stop();
    this.stream = null;
    if (this.streamTimer !== null) clearTimeout(this.streamTimer);
    this.streamTimer = null;
  }

  private onStreamMessage(message: StreamMessage): void {
    if (message.event !== 'change' && message.event !== 'ready') return;
    let notice: ChangeNotice;
    try {
      notice = JSON.parse(message.data) as ChangeNotice;
    } catch {
      return;
    }
    // ready: on (re)connection; a catalog other than ours means changes we have not seen yet.
    if (message.event === 'ready' && this.state !== null && notice.catalog !== undefined && notice.catalog === plainTag(this.state.catalogTag)) return;
    if (this.streamTimer !== null) return;
    const jitter = typeof notice.jitterMs === 'number' && notice.jitterMs > 0 ? Math.random() * notice.jitterMs : 0;
    this.streamTimer = setTimeout(() => {
      this.streamTimer = null;
      // A refresh already running may have read the catalog before this change: refresh after it.
      void (this.inFlight ?? Promise.resolve()).then(() => this.refresh());
    }, jitter);
    (this.streamTimer as { unref?: () => void }).unref?.();
  }

  /**
   * Reads the cache from storage (the first refresh does it too): until then get() answers from the
   * defaults. Resolves once read; a storage failure rejects and the next call tries again.
   */
  load(): Promise<void> {
    return this.ensureLoaded().then(() => undefined);
  }

  private ensureLoaded(): Promise<CacheState> {
    this.loading ??= this.storage.read().then(
      (text) => {
        const stored = parseState(text);
        const state = stored ?? this.initialState();
        this.state = state;
        this.parsed.clear();
        return state;
      },
      (err: unknown) => {
        this.loading = null;
        throw new RcdClientError('storage', `the cache could not be read: ${(err as Error).message}`, 0, null, { cause: err });
      },
    );
    return this.loading;
  }

  /** The state before anything was stored: the defaults, or nothing. */
  private initialState(): CacheState {
    this.firstState ??= this.defaults === null ? emptyState(this.contextText) : stateFromDefaults(this.defaults, this.contextText);
    return this.firstState;
  }

  private currentItem(id: string): CachedItem | undefined {
    const items = (this.state ?? this.initialState()).items;
    return Object.prototype.hasOwnProperty.call(items, id) ? items[id] : undefined;
  }

  private async runRefresh(): Promise<RefreshResult> {
    let result: RefreshResult;
    if (this.closed) {
      result = { changed: [], fromCache: true, error: new RcdClientError('closed', 'the client was closed') };
    } else if (Date.now() < this.retryAt && this.lastError !== null) {
      const error = new RcdClientError('backoff', `waiting until ${new Date(this.retryAt).toISOString()} after: ${this.lastError.message}`, this.lastError.status, this.lastError.retryAfterMs);
      error.retryAt = this.retryAt;
      result = { changed: [], fromCache: true, error };
    } else {
      result = await this.attempt();
    }
    for (const listener of this.listeners) {
      try {
        listener(result);
      } catch (err) {
        // A listener's failure is the application's: surfaced as an uncaught error, never as a
        // rejected refresh() (which promises never to reject) or a skipped listener.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
    return result;
  }

  private async attempt(): Promise<RefreshResult> {
    try {
      await this.ensureLoaded();
      const before = this.withContext(this.state!);
      const { state, changed } = await syncState(this.endpoint, before, before !== this.state, this.contextText, this.maxCombineIds);
      if (state !== null) {
        // Memory first: the values are fresh even if only the next launch would lose them.
        this.state = state;
        for (const id of changed) this.parsed.delete(id);
        try {
          await this.storage.write(JSON.stringify(state));
        } catch (err) {
          // The values are fresh (fromCache false); only the next launch would miss them.
          const error = new RcdClientError('storage', `the cache could not be written: ${(err as Error).message}`, 0, null, { cause: err });
          this.succeeded();
          this.lastError = error;
          return { changed, fromCache: false, error };
        }
      }
      this.succeeded();
      return { changed, fromCache: false };
    } catch (err) {
      const error = err instanceof RcdClientError ? err : new RcdClientError('internal', (err as Error).message, 0, null, { cause: err });
      this.fail(error);
      return { changed: [], fromCache: true, error };
    }
  }

  private succeeded(): void {
    this.failures = 0;
    this.lastError = null;
    this.retryAt = 0;
  }

  private fail(error: RcdClientError): void {
    this.failures++;
    this.lastError = error;
    const delay = backoffDelay(this.failures, error.retryAfterMs, this.backoff, Math.random());
    this.retryAt = Date.now() + delay;
    error.retryAt = this.retryAt;
    if (!this.autoRetry || this.closed || !error.retryable) return;
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      // The wait is over whatever Date.now() says: timers count from the event loop's time of the
      // turn that set them, which lags Date.now() by whatever that turn had already run, so this one
      // can fire before retryAt. Checked against retryAt, the retry answered "backoff" and was never
      // scheduled again (the client then waited for the application's next refresh).
      this.retryAt = 0;
      void this.refresh();
    }, delay);
    // A Node process is not kept alive by a pending retry alone (a browser timer has no unref).
    (this.retryTimer as { unref?: () => void }).unref?.();
  }

  /** The state to refresh from: under another user context every item is fetched again (served until then). */
  private withContext(state: CacheState): CacheState {
    if (state.context === this.contextText) return state;
    const items: Record<string, CachedItem> = {};
    for (const [id, item] of Object.entries(state.items)) setOwn(items, id, { ...item, h: '' });
    return { ...state, context: this.contextText, items, batches: [] };
  }
}

/** An ETag without the content-coding suffix the server adds to compressed answers ("k….gz"). */
function plainTag(tag: string | null): string | null {
  return tag === null ? null : tag.replace(/\.(gz|br)"$/, '"');
}

/** The request body of every combine: the context as JSON, v left out when absent. */
function contextBody(context: UserContext): string {
  const body: { u: string; p: Readonly<Record<string, unknown>>; v?: string } = { u: context.u ?? '', p: context.p ?? {} };
  if (context.v !== undefined) body.v = context.v;
  return JSON.stringify(body);
}
