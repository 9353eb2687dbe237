/**
 * Flags and environment variables → one frozen, typed configuration, validated at start-up.
 * Every limit the server enforces is here, bounded, with its default (docs: README "Configuration").
 */
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { LOG_LEVELS, type LogFormat, type LogLevel } from './log.js';
import { DEFAULT_CONTENT_LIMITS, type ContentLimits } from '../shared/json-limits.js';
import { parseDimensionNames } from '../exposures/dimensions.js';
import { parseExposuresUrl } from '../exposures/url.js';
import { ConfigError, bool, checked, fractionIn, intIn, oneOf, type FlagValues } from './flag-values.js';

export { ConfigError };

export interface ServeConfig {
  readonly storeUrl: string;
  /** PostgreSQL stores: connections of the control thread's pool. */
  readonly pgPoolSize: number;
  /** How long a store write waits for another connection's lock before answering 503 store_busy. */
  readonly storeBusyTimeoutMs: number;
  /** How long an admin write waits for every live node on the store to apply it. */
  readonly propagationTimeoutMs: number;
  /** Close connections whose request framing is ambiguous (duplicate Content-Length, or it beside Transfer-Encoding). */
  readonly rejectAmbiguousFraming: boolean;
  /** Change-log entries kept; a node further behind reloads a whole snapshot. */
  readonly changeLogEntries: number;
  /** Added to the nice value of the thread that parses and checks admin imports (src/control/import-pool.ts). */
  readonly importNice: number;
  /** Added to the control thread's nice value while it writes or publishes a bulk edit (src/runtime/priority.ts). */
  readonly bulkNice: number;
  /** Taken from the nice value of the delivery loops and their worker pools (src/runtime/priority.ts). */
  readonly deliveryNice: number;
  readonly importFile: string | null;
  readonly host: string;
  readonly port: number;
  /** Render pool worker threads, split among the delivery loops (each loop has its own share). */
  readonly threads: number;
  /** Delivery event loops (uWS apps) listening on the one port: the main thread and httpThreads - 1 more. */
  readonly httpThreads: number;
  readonly maxBodyBytes: number;
  readonly maxCombineIds: number;
  /** Items an OFREP bulk evaluation may hold (the whole environment); a larger one is refused (docs/openfeature.md). */
  readonly ofrepBulkMaxItems: number;
  /** Jobs accepted but not yet answered; beyond this the server answers 503 overloaded at once. */
  readonly maxPendingJobs: number;
  /**
   * One bound used twice: each worker thread's LRU of parsed content and compiled mappings, and the
   * front caches of rendered heads of all delivery loops together (each loop's is cacheBytes / httpThreads).
   */
  readonly cacheBytes: number;
  readonly adminHost: string;
  readonly adminEnabled: boolean;
  /** 0: any free port (printed at start). */
  readonly adminPort: number;
  readonly dataDir: string;
  readonly shutdownTimeoutMs: number;
  readonly seedDemo: boolean;
  /** HTTPS on the delivery listener when set (src/runtime/tls.ts); plain HTTP otherwise. */
  readonly tls: TlsFiles | null;
  /** HTTPS on the admin listener when set. */
  readonly adminTls: TlsFiles | null;
  /** Webhook delivery from the store's outbox (src/admin/server/webhooks.ts). */
  readonly webhooks: WebhookLimits;
  /** Scheduled changes (src/store/schedule/): how far ahead, and how many not settled yet in the whole store. */
  readonly scheduleMaxDays: number;
  readonly scheduleMaxPending: number;
  /** What stored content may nest and weigh, per text and per write (src/store/jsonc.ts). */
  readonly content: ContentLimits;
  /** Previews at a time (`preview?at=`): ops of pending changes one replays at most, and how many run at once. */
  readonly previewMaxOps: number;
  readonly previewConcurrency: number;
  /** How often the certificate files are checked for a change (which reloads them as SIGHUP does); 0: only on SIGHUP. */
  readonly tlsWatchMs: number;
  /**
   * Origins a browser page may call the delivery API from: null (CORS off), '*' (any), or a list of
   * exact origins (`scheme://host[:port]`).
   */
  readonly corsOrigins: '*' | readonly string[] | null;
  /** Answers at least this long are offered gzip/br (compressed once, when rendered or built). */
  readonly compressMinBytes: number;
  /** Open event streams per delivery loop; beyond it 503 too_many_streams. */
  readonly maxStreams: number;
  /** Open admin event streams (the console's live screens) on the admin listener; beyond it 503 too_many_streams. */
  readonly adminMaxStreams: number;
  /** A comment line on every open event stream this often (keeps proxies and NATs from closing it). */
  readonly streamHeartbeatMs: number;
  /** The window over which clients should spread their re-fetches after a change event. */
  readonly streamJitterMs: number;
  /** How long a stream token (for browsers: EventSource sends no headers) stays valid, in seconds. */
  readonly streamTokenTtlS: number;
  /** Serve Prometheus metrics on their own listener. */
  readonly metricsEnabled: boolean;
  readonly metricsHost: string;
  /** 0: any free port (printed at start). */
  readonly metricsPort: number;
  /** HTTPS on the metrics listener when set. */
  readonly metricsTls: TlsFiles | null;
  /** /readyz answers 503 store_unavailable once the store has been unreachable this long (the node cannot follow its changes). */
  readonly readyStoreOutageMs: number;
  readonly logLevel: LogLevel;
  /** Resolved at start: `pretty` when stdout is a terminal, `json` otherwise, unless set. */
  readonly logFormat: LogFormat;
  /** Share of content requests written to the access log (0: off); applied as 1 in round(1 / rate). */
  readonly accessLogRate: number;
  /** Access records a delivery loop holds between two reports; more are dropped (and counted). */
  readonly accessLogBuffer: number;
  /** Experiment exposures (docs/experiments.md "The flags"), null when off. */
  readonly exposures: ExposuresConfig | null;
}

/** The database (an absolute sqlite: path or a PostgreSQL URL), the attributes of `p` kept, the writer's row bound, each loop's filter slots (0: none). */
export type ExposuresConfig = { readonly url: string; readonly kind: 'sqlite' | 'postgres'; readonly dimensions: readonly string[]; readonly queue: number; readonly filterSlots: number };

/** The files of one listener, as configured (flags or environment). */
export interface TlsFiles {
  /** PEM: the server certificate, optionally followed by its intermediates (a "fullchain" file). */
  readonly certFile: string;
  /** PEM: the private key, PKCS#8, PKCS#1 or SEC1, optionally encrypted. */
  readonly keyFile: string;
  /** A file whose content (one trailing newline removed) is the key's passphrase. */
  readonly passphraseFile: string | null;
  /** PEM: intermediate certificates sent after the server certificate. */
  readonly chainFile: string | null;
  /** The flag names the messages use, e.g. "--tls-cert" / "--admin-tls-cert". */
  readonly flagPrefix: string;
}

export interface WebhookLimits {
  readonly attempts: number;
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  readonly attemptTimeoutMs: number;
  readonly concurrency: number;
  readonly deadLetters: number;
  /** Webhooks may target addresses that are not public: loopback, private, link-local (src/admin/server/webhook-target.ts). */
  readonly allowPrivateTargets: boolean;
}

/** One option: its flag, environment variable, default and parser. Order here is the --help order. */
export interface OptionSpec {
  readonly flag: string;
  readonly env: string;
  readonly help: string;
  readonly fallback: string;
}

export const SERVE_OPTIONS: readonly OptionSpec[] = [
  { flag: 'store', env: 'RCD_STORE', fallback: 'sqlite:./data/rcd.db', help: 'store URL: sqlite:PATH, memory: or postgres://user:password@host:port/database' },
  { flag: 'pg-pool-size', env: 'RCD_PG_POOL_SIZE', fallback: '4', help: 'PostgreSQL stores: connections of the store pool (1..100); each worker thread adds one, LISTEN one' },
  { flag: 'reject-ambiguous-framing', env: 'RCD_REJECT_AMBIGUOUS_FRAMING', fallback: 'true', help: 'close a connection whose request repeats Content-Length or has it beside Transfer-Encoding (true|false)' },
  { flag: 'propagation-timeout', env: 'RCD_PROPAGATION_TIMEOUT_MS', fallback: '2000', help: 'ms an admin write waits for every live node on the store to apply it (0..60000)' },
  { flag: 'change-log-entries', env: 'RCD_CHANGE_LOG_ENTRIES', fallback: '100000', help: 'change-log entries kept; a node further behind reloads a snapshot (1000..100000000)' },
  { flag: 'store-busy-timeout', env: 'RCD_STORE_BUSY_TIMEOUT_MS', fallback: '1000', help: 'ms a store write waits for a lock held elsewhere before 503 store_busy (0..60000)' },
  { flag: 'import', env: 'RCD_IMPORT', fallback: '', help: 'bundle file imported at start (idempotent)' },
  { flag: 'import-nice', env: 'RCD_IMPORT_NICE', fallback: '10', help: 'how much lower than the process\'s the CPU priority of the thread that parses and checks admin imports is (a nice increment, 0..19; 0: the same)' },
  { flag: 'bulk-nice', env: 'RCD_BULK_NICE', fallback: '10', help: 'how much lower than the process\'s the control thread\'s CPU priority is while it writes or publishes a bulk edit: an import, a sync, a change batch of 1000+ entries (a nice increment, 0..19; 0: the same). Linux, with CAP_SYS_NICE or an RLIMIT_NICE of 20; otherwise 0' },
  { flag: 'delivery-nice', env: 'RCD_DELIVERY_NICE', fallback: '10', help: 'how much higher than the rest of the process the CPU priority of the delivery loops and their worker pools is (a nice decrement, 0..39; 0: the same). Linux, with CAP_SYS_NICE or an RLIMIT_NICE of 20 + it; otherwise 0' },
  { flag: 'host', env: 'RCD_HOST', fallback: '0.0.0.0', help: 'delivery API host' },
  { flag: 'port', env: 'RCD_PORT', fallback: '8080', help: 'delivery API port (0: any free port)' },
  { flag: 'threads', env: 'RCD_THREADS', fallback: String(defaultThreads()), help: 'render pool worker threads, split among the delivery loops (1..64, at least --http-threads)' },
  { flag: 'http-threads', env: 'RCD_HTTP_THREADS', fallback: '', help: 'delivery event loops on the one port (1..64; default: a measured rule of the cores, at most --threads)' },
  { flag: 'max-body', env: 'RCD_MAX_BODY', fallback: '65536', help: 'request body limit in bytes (1..16777216)' },
  { flag: 'max-combine-ids', env: 'RCD_MAX_COMBINE_IDS', fallback: '100', help: 'ids per combine request (1..10000)' },
  { flag: 'ofrep-bulk-max-items', env: 'RCD_OFREP_BULK_MAX_ITEMS', fallback: '', help: 'content items an OpenFeature (OFREP) bulk evaluation may hold: a larger environment answers 400 ofrep_bulk_too_large (1..10000; default: --max-combine-ids, the same work per request)' },
  { flag: 'max-pending', env: 'RCD_MAX_PENDING', fallback: '20000', help: 'jobs in flight before 503 overloaded (1..1000000)' },
  { flag: 'cache-mb', env: 'RCD_CACHE_MB', fallback: '256', help: 'each worker thread\'s content cache, and all delivery loops\' front caches together, in MiB (1..65536)' },
  { flag: 'admin-host', env: 'RCD_ADMIN_HOST', fallback: '127.0.0.1', help: 'admin API host' },
  { flag: 'admin', env: 'RCD_ADMIN', fallback: 'true', help: 'run the admin API listener (true|false)' },
  { flag: 'admin-port', env: 'RCD_ADMIN_PORT', fallback: '8081', help: 'admin API port (0: any free port)' },
  { flag: 'data-dir', env: 'RCD_DATA_DIR', fallback: '', help: 'data directory (admin token, demo key); default: the SQLite file\'s folder, or ./data' },
  { flag: 'shutdown-timeout', env: 'RCD_SHUTDOWN_TIMEOUT_MS', fallback: '10000', help: 'ms to finish in-flight requests on SIGTERM (0..600000)' },
  { flag: 'seed-demo', env: 'RCD_SEED_DEMO', fallback: 'true', help: 'seed a demo environment into an empty store (true|false)' },
  { flag: 'tls-cert', env: 'RCD_TLS_CERT', fallback: '', help: 'PEM certificate (optionally followed by its chain): the delivery API serves HTTPS (with --tls-key)' },
  { flag: 'tls-key', env: 'RCD_TLS_KEY', fallback: '', help: 'PEM private key of --tls-cert' },
  { flag: 'tls-key-passphrase-file', env: 'RCD_TLS_KEY_PASSPHRASE_FILE', fallback: '', help: 'file holding the passphrase of an encrypted --tls-key' },
  { flag: 'tls-ca', env: 'RCD_TLS_CA', fallback: '', help: 'PEM intermediate certificates sent after --tls-cert' },
  { flag: 'admin-tls-cert', env: 'RCD_ADMIN_TLS_CERT', fallback: '', help: 'PEM certificate: the admin API serves HTTPS (with --admin-tls-key)' },
  { flag: 'admin-tls-key', env: 'RCD_ADMIN_TLS_KEY', fallback: '', help: 'PEM private key of --admin-tls-cert' },
  { flag: 'admin-tls-key-passphrase-file', env: 'RCD_ADMIN_TLS_KEY_PASSPHRASE_FILE', fallback: '', help: 'file holding the passphrase of an encrypted --admin-tls-key' },
  { flag: 'admin-tls-ca', env: 'RCD_ADMIN_TLS_CA', fallback: '', help: 'PEM intermediate certificates sent after --admin-tls-cert' },
  { flag: 'webhook-attempts', env: 'RCD_WEBHOOK_ATTEMPTS', fallback: '12', help: 'attempts of one webhook delivery before it is dead-lettered (1..100)' },
  { flag: 'webhook-retry-min', env: 'RCD_WEBHOOK_RETRY_MIN_MS', fallback: '1000', help: 'ms before the first webhook retry; doubles each time (10..3600000)' },
  { flag: 'webhook-retry-max', env: 'RCD_WEBHOOK_RETRY_MAX_MS', fallback: '600000', help: 'cap on one webhook retry delay, ms (10..86400000)' },
  { flag: 'webhook-timeout', env: 'RCD_WEBHOOK_TIMEOUT_MS', fallback: '10000', help: 'time limit of one webhook attempt, ms (100..120000)' },
  { flag: 'webhook-concurrency', env: 'RCD_WEBHOOK_CONCURRENCY', fallback: '4', help: 'webhook attempts running at once per process (1..64)' },
  { flag: 'webhook-dead-letters', env: 'RCD_WEBHOOK_DEAD_LETTERS', fallback: '1000', help: 'dead-lettered webhook deliveries kept; the oldest beyond go (1..1000000)' },
  { flag: 'webhook-allow-private', env: 'RCD_WEBHOOK_ALLOW_PRIVATE', fallback: 'false', help: 'let webhooks target addresses that are not public: loopback, private networks, link-local and other reserved ranges, written or resolved (true|false)' },
  { flag: 'schedule-max-days', env: 'RCD_SCHEDULE_MAX_DAYS', fallback: '366', help: 'how many days ahead a change may be scheduled (1..3660)' },
  { flag: 'schedule-max-pending', env: 'RCD_SCHEDULE_MAX_PENDING', fallback: '100000', help: 'scheduled changes not yet applied, in the whole store, before scheduling is refused with too_many_schedules (1..10000000)' },
  { flag: 'max-content-depth', env: 'RCD_MAX_CONTENT_DEPTH', fallback: String(DEFAULT_CONTENT_LIMITS.maxDepth), help: 'how deeply stored content may nest arrays and objects; a write past it answers 400 invalid_content (1..1000)' },
  { flag: 'max-content-bytes', env: 'RCD_MAX_CONTENT_BYTES', fallback: String(DEFAULT_CONTENT_LIMITS.maxBytes), help: 'bytes of one stored content text (content given as json: its indented text); a write past it answers 400 invalid_content (1..268435456)' },
  { flag: 'max-write-bytes', env: 'RCD_MAX_WRITE_BYTES', fallback: String(DEFAULT_CONTENT_LIMITS.maxWriteBytes), help: 'bytes of content text one import or scheduled change stores in all; past it 400 invalid_content / invalid_bundle (1..1073741824)' },
  { flag: 'preview-max-ops', env: 'RCD_PREVIEW_MAX_OPS', fallback: '20000', help: 'ops of pending changes one preview at a time (preview?at=) replays, before it is refused with preview_too_large (1..1000000)' },
  { flag: 'preview-concurrency', env: 'RCD_PREVIEW_CONCURRENCY', fallback: '2', help: 'previews at a time (preview?at=) running at once on this process; one more answers 503 overloaded (1..64)' },
  { flag: 'tls-watch-interval', env: 'RCD_TLS_WATCH_INTERVAL_MS', fallback: '60000', help: 'ms between checks of the certificate files for a change, which reloads them as SIGHUP does (0: SIGHUP only; 0..86400000)' },
  { flag: 'cors-origins', env: 'RCD_CORS_ORIGINS', fallback: '', help: 'origins browsers may call the delivery API from: comma-separated (https://game.example.com) or * (default: none, CORS off)' },
  { flag: 'compress-min-bytes', env: 'RCD_COMPRESS_MIN_BYTES', fallback: '1024', help: 'answers at least this long are sent gzip/br when the client accepts it (0..16777216)' },
  { flag: 'max-streams', env: 'RCD_MAX_STREAMS', fallback: '10000', help: 'open event streams per delivery loop before 503 too_many_streams (0..1000000)' },
  { flag: 'admin-max-streams', env: 'RCD_ADMIN_MAX_STREAMS', fallback: '100', help: 'open admin event streams (GET /admin/v1/events: the console\'s live screens) before 503 too_many_streams (0..10000)' },
  { flag: 'stream-heartbeat-ms', env: 'RCD_STREAM_HEARTBEAT_MS', fallback: '15000', help: 'ms between heartbeat comments on each event stream, delivery and admin (1000..300000)' },
  { flag: 'stream-jitter-ms', env: 'RCD_STREAM_JITTER_MS', fallback: '5000', help: 'window in ms over which clients are told to spread re-fetches after a change event (0..600000)' },
  { flag: 'metrics', env: 'RCD_METRICS', fallback: 'true', help: 'serve Prometheus metrics at /metrics on their own listener (true|false)' },
  { flag: 'metrics-host', env: 'RCD_METRICS_HOST', fallback: '127.0.0.1', help: 'metrics listener host' },
  { flag: 'metrics-port', env: 'RCD_METRICS_PORT', fallback: '9464', help: 'metrics listener port (0: any free port)' },
  { flag: 'metrics-tls-cert', env: 'RCD_METRICS_TLS_CERT', fallback: '', help: 'PEM certificate: /metrics is served over HTTPS (with --metrics-tls-key)' },
  { flag: 'metrics-tls-key', env: 'RCD_METRICS_TLS_KEY', fallback: '', help: 'PEM private key of --metrics-tls-cert' },
  { flag: 'metrics-tls-key-passphrase-file', env: 'RCD_METRICS_TLS_KEY_PASSPHRASE_FILE', fallback: '', help: 'file holding the passphrase of an encrypted --metrics-tls-key' },
  { flag: 'metrics-tls-ca', env: 'RCD_METRICS_TLS_CA', fallback: '', help: 'PEM intermediate certificates sent after --metrics-tls-cert' },
  { flag: 'ready-store-outage', env: 'RCD_READY_STORE_OUTAGE_MS', fallback: '30000', help: 'ms the store may be unreachable before /readyz answers 503 store_unavailable (0..86400000)' },
  { flag: 'log-level', env: 'RCD_LOG_LEVEL', fallback: 'info', help: 'lowest level logged: debug, info, warn or error' },
  { flag: 'access-log', env: 'RCD_ACCESS_LOG', fallback: '0', help: 'share of content requests written to the access log on stdout, 0..1 (0: off; 0.01: 1 in 100; 1: every one)' },
  { flag: 'access-log-buffer', env: 'RCD_ACCESS_LOG_BUFFER', fallback: '10000', help: 'access records a delivery loop holds between two reports (every 250 ms); more are dropped and counted (100..1000000)' },
  { flag: 'log-format', env: 'RCD_LOG_FORMAT', fallback: '', help: 'json (one JSON object a line) or pretty (plain lines); default: pretty on a terminal, json otherwise' },
  { flag: 'exposures', env: 'RCD_EXPOSURES', fallback: 'off', help: 'record experiment exposures (docs/experiments.md): off, sqlite:PATH (a file of its own, never the store\'s) or postgres://user:password@host:port/database' },
  { flag: 'exposure-dimensions', env: 'RCD_EXPOSURE_DIMENSIONS', fallback: '', help: 'top-level attributes of p kept with each exposure, comma-separated (at most 8 names of 1-64 characters A-Z a-z 0-9 _ . -; string values cut to 128 characters)' },
  { flag: 'exposure-queue', env: 'RCD_EXPOSURE_QUEUE', fallback: '200000', help: 'exposure rows the writer holds at most while its database is slow or down; more are dropped and counted in rcd_exposures_dropped_total (1..10000000)' },
  { flag: 'exposure-filter', env: 'RCD_EXPOSURE_FILTER', fallback: '65536', help: 'slots of each delivery loop\'s filter of repeat exposures, each holding one player\'s row (0: none; else a power of two, 1024..4194304)' },
  { flag: 'stream-token-ttl', env: 'RCD_STREAM_TOKEN_TTL_S', fallback: '300', help: 'seconds a stream token (browsers: EventSource sends no headers) stays valid (10..86400)' },
];

export function defaultThreads(): number {
  // The main thread does the network I/O; on small boxes it is the bottleneck, so the pool gets every core
  // (workers mostly sleep between batches).
  return Math.max(1, Math.min(availableParallelism(), 64));
}

/**
 * The default number of delivery loops for a box of `cores`: one per two cores (2 -> 1, 8 -> 4,
 * 32 -> 16, 64 -> 32). A loop per core competes with the kernel's network work, the pool share and
 * the control thread for the same cores; a loop per two cores leaves the other core to them.
 */
export function httpThreadsFor(cores: number): number {
  return Math.max(1, Math.min(64, Math.floor(cores / 2)));
}

/** A start-up failure the operator fixes (a port in use, a store that cannot be opened): one line, no stack. */
export class StartupError extends Error {}

/** `*`, a comma-separated list of origins, or "" (off). Each origin must be in its serialized form. */
function corsOrigins(raw: string): '*' | readonly string[] | null {
  const value = raw.trim();
  if (value === '') return null;
  if (value === '*') return '*';
  const out: string[] = [];
  for (const part of value.split(',')) {
    const origin = part.trim();
    const parsed = URL.canParse(origin) ? new URL(origin) : null;
    // The Origin header is compared as sent: only the exact serialized origin can ever match.
    if (parsed === null || parsed.origin === 'null' || parsed.origin !== origin) {
      throw new ConfigError(`--cors-origins: "${origin}" is not an origin such as https://game.example.com (scheme, host, optional port, no path or trailing slash)`);
    }
    out.push(origin);
  }
  return Object.freeze(out);
}

const [FILTER_SLOTS_MIN, FILTER_SLOTS_MAX] = [1024, 4_194_304];

/** --exposures and the flags beside it; null when off. */
function exposuresConfig(get: FlagValues, storeUrl: string): ExposuresConfig | null {
  const url = get('exposures').trim();
  const dimensions = checked('exposure-dimensions', () => parseDimensionNames(get('exposure-dimensions')));
  const queue = intIn(get, 'exposure-queue', 1, 10_000_000);
  const filterSlots = intIn(get, 'exposure-filter', 0, FILTER_SLOTS_MAX);
  if (filterSlots !== 0 && (filterSlots < FILTER_SLOTS_MIN || (filterSlots & (filterSlots - 1)) !== 0)) {
    throw new ConfigError(`--exposure-filter must be 0 or a power of two from ${FILTER_SLOTS_MIN} to ${FILTER_SLOTS_MAX}, got ${filterSlots}`);
  }
  const target = checked('exposures', () => parseExposuresUrl(url, storeUrl));
  if (target === null) return null;
  const { kind } = target;
  return Object.freeze({ url: target.url, kind, dimensions, queue, filterSlots });
}

/** Resolves each option: flag, then environment variable, then default. */
export function resolveOptions(
  specs: readonly OptionSpec[],
  flags: Readonly<Record<string, string | boolean | undefined>>,
  env: NodeJS.ProcessEnv,
): Map<string, string> {
  const out = new Map<string, string>();
  for (const spec of specs) {
    const f = flags[spec.flag];
    const v = typeof f === 'string' ? f : f === true ? 'true' : env[spec.env] ?? spec.fallback;
    out.set(spec.flag, v);
  }
  return out;
}

/** One listener's TLS files from its four options (prefix "tls", "admin-tls" or "metrics-tls"), or null without a certificate. */
function tlsFiles(prefix: string, get: FlagValues): TlsFiles | null {
  const cert = get(`${prefix}-cert`);
  const key = get(`${prefix}-key`);
  const passphraseFile = get(`${prefix}-key-passphrase-file`);
  const chainFile = get(`${prefix}-ca`);
  if (cert === '' && key === '') {
    const stray = passphraseFile !== '' ? 'key-passphrase-file' : chainFile !== '' ? 'ca' : null;
    if (stray !== null) throw new ConfigError(`--${prefix}-${stray} needs --${prefix}-cert and --${prefix}-key`);
    return null;
  }
  if (cert === '' || key === '') throw new ConfigError(`--${prefix}-cert and --${prefix}-key go together (got only --${prefix}-${cert === '' ? 'key' : 'cert'})`);
  return Object.freeze({
    certFile: resolve(cert),
    keyFile: resolve(key),
    passphraseFile: passphraseFile === '' ? null : resolve(passphraseFile),
    chainFile: chainFile === '' ? null : resolve(chainFile),
    flagPrefix: `--${prefix}`,
  });
}

/** The data directory: explicit, else beside the SQLite file, else ./data. */
export function dataDirFor(storeUrl: string, explicit: string): string {
  if (explicit !== '') return resolve(explicit);
  if (storeUrl.startsWith('sqlite:')) return resolve(dirname(storeUrl.slice('sqlite:'.length)));
  return resolve('data');
}

export function buildServeConfig(values: Map<string, string>): ServeConfig {
  const get = (k: string): string => values.get(k) ?? '';
  const storeUrl = get('store');
  const postgres = storeUrl.startsWith('postgres://') || storeUrl.startsWith('postgresql://');
  if (!storeUrl.startsWith('sqlite:') && storeUrl !== 'memory:' && !postgres) {
    throw new ConfigError(`--store must be sqlite:PATH, memory: or postgres://user:password@host:port/database, got "${storeUrl}"`);
  }
  const maxCombineIds = intIn(get, 'max-combine-ids', 1, 10_000);
  const ofrepBulkMaxItems = get('ofrep-bulk-max-items') === '' ? maxCombineIds : intIn(get, 'ofrep-bulk-max-items', 1, 10_000);
  const maxPendingJobs = intIn(get, 'max-pending', 1, 1_000_000);
  // A combine whose ids all miss the front cache needs one pool job per id, admitted together: with
  // fewer places than ids it could never run and would answer 503 forever. An OFREP bulk evaluation
  // is a combine of the whole environment: the same holds for its items.
  if (maxPendingJobs < maxCombineIds) {
    throw new ConfigError(
      `--max-pending (${maxPendingJobs}) must be at least --max-combine-ids (${maxCombineIds}): ` +
        'a combine request needs up to one pool job per id at once',
    );
  }
  if (maxPendingJobs < ofrepBulkMaxItems) {
    throw new ConfigError(
      `--max-pending (${maxPendingJobs}) must be at least --ofrep-bulk-max-items (${ofrepBulkMaxItems}): ` +
        'an OFREP bulk evaluation needs up to one pool job per item at once',
    );
  }
  const threads = intIn(get, 'threads', 1, 64);
  const httpThreads =
    get('http-threads') === '' ? Math.min(threads, httpThreadsFor(availableParallelism())) : intIn(get, 'http-threads', 1, 64);
  // Each loop renders its misses on its own share of the pool (a Piscina instance belongs to one thread).
  if (threads < httpThreads) {
    throw new ConfigError(
      `--threads (${threads}) must be at least --http-threads (${httpThreads}): each delivery loop renders its misses on its own share of the worker threads`,
    );
  }
  return Object.freeze({
    storeUrl,
    pgPoolSize: intIn(get, 'pg-pool-size', 1, 100),
    storeBusyTimeoutMs: intIn(get, 'store-busy-timeout', 0, 60_000),
    propagationTimeoutMs: intIn(get, 'propagation-timeout', 0, 60_000),
    rejectAmbiguousFraming: bool(get, 'reject-ambiguous-framing'),
    changeLogEntries: intIn(get, 'change-log-entries', 1000, 100_000_000),
    importFile: get('import') === '' ? null : get('import'),
    importNice: intIn(get, 'import-nice', 0, 19),
    bulkNice: intIn(get, 'bulk-nice', 0, 19),
    deliveryNice: intIn(get, 'delivery-nice', 0, 39),
    host: get('host'),
    port: intIn(get, 'port', 0, 65535),
    threads,
    httpThreads,
    maxBodyBytes: intIn(get, 'max-body', 1, 16 * 1024 * 1024),
    maxCombineIds,
    ofrepBulkMaxItems,
    maxPendingJobs,
    cacheBytes: intIn(get, 'cache-mb', 1, 65536) * 1024 * 1024,
    adminHost: get('admin-host'),
    adminEnabled: bool(get, 'admin'),
    adminPort: intIn(get, 'admin-port', 0, 65535),
    dataDir: dataDirFor(storeUrl, get('data-dir')),
    shutdownTimeoutMs: intIn(get, 'shutdown-timeout', 0, 600_000),
    seedDemo: bool(get, 'seed-demo'),
    tls: tlsFiles('tls', get),
    adminTls: tlsFiles('admin-tls', get),
    webhooks: Object.freeze({
      attempts: intIn(get, 'webhook-attempts', 1, 100),
      retryMinMs: intIn(get, 'webhook-retry-min', 10, 3_600_000),
      retryMaxMs: intIn(get, 'webhook-retry-max', 10, 86_400_000),
      attemptTimeoutMs: intIn(get, 'webhook-timeout', 100, 120_000),
      concurrency: intIn(get, 'webhook-concurrency', 1, 64),
      deadLetters: intIn(get, 'webhook-dead-letters', 1, 1_000_000),
      allowPrivateTargets: bool(get, 'webhook-allow-private'),
    }),
    scheduleMaxDays: intIn(get, 'schedule-max-days', 1, 3660),
    scheduleMaxPending: intIn(get, 'schedule-max-pending', 1, 10_000_000),
    content: Object.freeze({
      maxDepth: intIn(get, 'max-content-depth', 1, 1000),
      maxBytes: intIn(get, 'max-content-bytes', 1, 256 * 1024 * 1024),
      maxWriteBytes: intIn(get, 'max-write-bytes', 1, 1024 * 1024 * 1024),
    }),
    previewMaxOps: intIn(get, 'preview-max-ops', 1, 1_000_000),
    previewConcurrency: intIn(get, 'preview-concurrency', 1, 64),
    tlsWatchMs: intIn(get, 'tls-watch-interval', 0, 86_400_000),
    corsOrigins: corsOrigins(get('cors-origins')),
    compressMinBytes: intIn(get, 'compress-min-bytes', 0, 16 * 1024 * 1024),
    maxStreams: intIn(get, 'max-streams', 0, 1_000_000),
    adminMaxStreams: intIn(get, 'admin-max-streams', 0, 10_000),
    streamHeartbeatMs: intIn(get, 'stream-heartbeat-ms', 1000, 300_000),
    streamJitterMs: intIn(get, 'stream-jitter-ms', 0, 600_000),
    streamTokenTtlS: intIn(get, 'stream-token-ttl', 10, 86_400),
    metricsEnabled: bool(get, 'metrics'),
    metricsHost: get('metrics-host'),
    metricsPort: intIn(get, 'metrics-port', 0, 65535),
    metricsTls: tlsFiles('metrics-tls', get),
    readyStoreOutageMs: intIn(get, 'ready-store-outage', 0, 86_400_000),
    logLevel: oneOf(get, 'log-level', LOG_LEVELS),
    accessLogRate: fractionIn(get, 'access-log'),
    accessLogBuffer: intIn(get, 'access-log-buffer', 100, 1_000_000),
    exposures: exposuresConfig(get, storeUrl),
    logFormat: get('log-format') === '' ? (process.stdout.isTTY ? 'pretty' : 'json') : oneOf(get, 'log-format', ['json', 'pretty'] as const),
  });
}
