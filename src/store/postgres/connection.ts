/**
 * Connections to PostgreSQL through postgres.js: its LISTEN connection reconnects by itself and
 * reports each (re)connection, which the change feed needs to catch up after an outage.
 *
 * Failures are sorted here: a connection that cannot be made or was lost (the database is down,
 * restarting, or out of reach) becomes store_unavailable; a lock held elsewhere past the busy
 * timeout becomes store_busy; anything else is re-thrown as it is.
 */
import { createRequire } from 'node:module';
import type postgres from 'postgres';
import { RcdError } from '../../runtime/errors.js';
import { redactPostgresUrl } from '../url.js';
import { DATABASE_STALLED, isStalled } from './silence.js';

export type Sql = postgres.Sql;
/** A transaction's statements (transaction.ts): everything a transaction runs goes through its unsafe(). */
export type Tx = Pick<postgres.TransactionSql, 'unsafe'>;

export interface PgOptions {
  /** Connections of the pool (the LISTEN connection comes on top). */
  readonly poolSize: number;
  /** How long opening a connection may take before the store counts as unreachable. */
  readonly connectTimeoutMs: number;
}

export const DEFAULT_PG_POOL_SIZE = 4;
/** A write during an outage must answer 503 within about a second, not after the driver's 30 s. */
export const DEFAULT_PG_CONNECT_TIMEOUT_MS = 1000;

/** Parses and checks the URL; throws invalid_request for a malformed one. */
export function checkPostgresUrl(url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new RcdError('invalid_request', `malformed PostgreSQL URL ${redactPostgresUrl(url)}: use postgres://user:password@host:port/database`);
  }
  if (u.hostname === '' || u.pathname.length <= 1) {
    throw new RcdError('invalid_request', `the PostgreSQL URL ${redactPostgresUrl(url)} needs a host and a database: postgres://user:password@host:port/database`);
  }
}

/** int8 columns (ids, sequence numbers, Unix ms) as numbers: they stay far below 2^53. */
const INT8_AS_NUMBER = {
  to: 20,
  from: [20],
  serialize: (x: number) => String(x),
  parse: (x: string) => Number(x),
};

/** 50 ms doubling to 500 ms, by failures in a row of the pool's connections. */
function reconnectDelaySeconds(failures: number): number {
  return Math.min(0.05 * 2 ** Math.max(0, failures - 1), 0.5);
}

/** The driver, loaded by the first connection: a process on a SQLite store never loads it. */
function driver(): typeof postgres {
  return createRequire(import.meta.url)('postgres') as typeof postgres;
}

export function connect(url: string, opts: PgOptions): Sql {
  checkPostgresUrl(url);
  return driver()(url, {
    max: opts.poolSize,
    connect_timeout: Math.max(1, Math.ceil(opts.connectTimeoutMs / 1000)),
    // Idle connections are closed after a while: a fleet of nodes does not pin the server's slots.
    idle_timeout: 60,
    // The driver waits this long before a connection that failed may connect again. Its default
    // grows with every failure of the pool (up to 20 s), so after an outage a query queued once the
    // database is back would wait for that timer. The store's probe does the backing off
    // (store.ts); the driver only spaces its own attempts.
    backoff: reconnectDelaySeconds,
    onnotice: () => undefined,
    types: { int8: INT8_AS_NUMBER },
    // Array parameters (`= ANY($1::bigint[])`) need the array types, read once per connection.
    fetch_types: true,
    connection: { application_name: 'rcd' },
  });
}

/** SQLSTATE classes and driver codes that mean "the database cannot be reached", not "the query is wrong". */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  DATABASE_STALLED,
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down)
  '53300', // too_many_connections
]);

export function isUnreachable(err: unknown): boolean {
  if (err === null || typeof err !== 'object') return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return UNREACHABLE_CODES.has(code) || code.startsWith('08');
}

/** The server ended the session (a shutdown or restart, or pg_terminate_backend): its transaction was rolled back. */
export function isSessionTerminated(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '57P01';
}

/** What runOnPool does when a statement's connection was lost (not when the server ended its session). */
export const enum OnLost {
  /** The statement may have run (a write: a connection lost during COMMIT may have committed). */
  Throw = 0,
  /** The statement may run twice (a read): once more. During a partition each try may wait for the connect timeout. */
  RetryOnce = 1,
}

/**
 * Runs a statement (or transaction) on a pool of `poolSize` connections, again where its failure says
 * nothing about the statement. A pooled connection that was idle while the database restarted, or
 * whose session the server ended, hands the shutdown's error (57P01) to its next statement: the
 * server rolled that session's transaction back, so the statement runs again on the next connection,
 * writes included, up to once per connection. A lost connection is tried once more as `onLost` says.
 * Throws the last failure as the driver gave it (pgFailure sorts it), once the lost connection closed.
 */
export async function runOnPool<T>(fn: () => Promise<T>, poolSize: number, onLost: OnLost): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      // Whatever follows a lost connection (this retry, or the caller's next statement) waits for it to close.
      if (isUnreachable(err)) await lostConnectionsClosed();
      if (isSessionTerminated(err) && attempt < poolSize) continue;
      // A call given up on stays given up on.
      if (onLost === OnLost.RetryOnce && isUnreachable(err) && !isStalled(err) && attempt === 0) continue;
      throw err;
    }
  }
}

/**
 * Resolves once the driver has seen the close of every connection lost so far. postgres.js hears
 * of a socket's error (ECONNRESET) a phase of the event loop before the socket's close, and until
 * then it still hands new statements to that connection, where they are never answered nor
 * rejected. A statement's failure that says its connection was lost is passed on only after this
 * (a timer runs after the loop's close callbacks), so nothing the failure sets off lands there.
 */
export function lostConnectionsClosed(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** lock_not_available: the write lock was held elsewhere past lock_timeout. */
const LOCK_TIMEOUT = '55P03';

/** The RcdError a failed PostgreSQL call becomes (RcdErrors pass through). */
export function pgFailure(err: unknown): unknown {
  if (err instanceof RcdError) return err;
  if (isUnreachable(err)) return new RcdError('store_unavailable', `the store is unreachable: ${describePgError(err)}`);
  const code = (err as { code?: unknown } | null)?.code;
  if (code === LOCK_TIMEOUT) {
    return new RcdError('store_busy', 'another node holds the store\'s write lock; retry shortly');
  }
  return err;
}

export function describePgError(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : String(err);
  return code === '' || message.includes(code) ? message : `${code}: ${message}`;
}
