/**
 * Transactions that never send a statement on a connection the database has closed.
 *
 * postgres.js (3.4.x) sends a statement issued on a transaction's connection after that connection
 * closed from a setImmediate with no socket: a TypeError thrown outside any promise, which ends the
 * thread that runs it (porsager/postgres#1066, #1154). Two statements get there: the driver's own
 * ROLLBACK (or COMMIT) once the transaction's callback settles, and a statement the callback issues
 * after catching a failure (a rehearsal's savepoint rollback, a parallel step's next call). A
 * database that stops or restarts under a write is enough.
 *
 * So once a statement of a transaction fails with an error that ends its connection (endsConnection),
 * the transaction's handle refuses every later statement with that error, and the callback's outcome
 * is held back from the driver, which then sends nothing more: it rejects the transaction itself
 * when the connection's close is reported, and `transaction` throws the statement's own error in
 * place of that report.
 */
import type postgres from 'postgres';
import type { Sql, Tx } from './connection.js';
import { givenUpReason, orGivenUp } from './silence.js';

/** Errors a socket reports before it closes: every one of them ends the connection. */
const SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/**
 * True when the error means the transaction's connection is gone or going: the server ended the
 * session (a FATAL or PANIC error, such as 57P01 at a shutdown), the socket failed, or the driver
 * found it closed. Not the driver's own end (CONNECTION_DESTROYED, CONNECTION_ENDED): an ended
 * connection refuses statements by itself.
 */
export function endsConnection(err: unknown): boolean {
  if (err === null || typeof err !== 'object') return false;
  const e = err as { code?: unknown; severity?: unknown };
  if (e.severity === 'FATAL' || e.severity === 'PANIC') return true;
  return e.code === 'CONNECTION_CLOSED' || (typeof e.code === 'string' && SOCKET_CODES.has(e.code));
}

/** What a transaction's statements found: the error that ended its connection, if one did; its caller's giving up, if it did. */
class ConnectionGuard {
  ended: Error | null = null;
  abandoned: Error | null = null;

  /** The handle `fn` gets: `tx`'s statements, refused once the connection ended or the caller gave up. */
  handleOf(tx: postgres.TransactionSql): Tx {
    return { unsafe: (query, parameters, options) => this.unsafe(tx, query, parameters, options) } as Tx;
  }

  private unsafe(tx: postgres.TransactionSql, query: string, parameters?: postgres.ParameterOrJSON<never>[], options?: postgres.UnsafeQueryOptions): ReturnType<Tx['unsafe']> {
    const refusal = this.ended ?? this.abandoned;
    if (refusal !== null) return Promise.reject(refusal) as unknown as ReturnType<Tx['unsafe']>;
    const pending = tx.unsafe(query, parameters, options);
    // Observing the statement starts it, as awaiting it does: the driver sends it a microtask later.
    pending.catch((err: unknown) => this.noteFailure(err));
    return pending;
  }

  private noteFailure(err: unknown): void {
    if (this.ended === null && endsConnection(err)) this.ended = err as Error;
  }
}

/** A promise that never settles: the driver's transaction is left to its connection's close. */
function heldBack(): Promise<never> {
  return new Promise<never>(() => undefined);
}

async function runGuarded<T>(tx: postgres.TransactionSql, guard: ConnectionGuard, fn: (tx: Tx) => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await fn(guard.handleOf(tx));
  } catch (err) {
    if (guard.ended !== null) return heldBack();
    throw err;
  }
  // A callback that caught the failure and returned would have the driver send COMMIT.
  if (guard.ended !== null) return heldBack();
  // Given up by its caller, who answered already: rolled back, never committed later.
  if (guard.abandoned !== null) throw guard.abandoned;
  return result;
}

/**
 * Runs `fn` in one transaction on `sql` (`mode`: BEGIN's options, such as an isolation level). `fn`
 * gets a handle whose statements run in the transaction; the transaction commits when `fn` resolves
 * and rolls back when it rejects, as postgres.js's begin() does, except on a connection that ended.
 *
 * `signal` lets the caller give up (a database that stopped answering, store.ts): the transaction
 * rejects at once with the signal's reason; `fn`'s later statements are refused with it, and the
 * transaction rolls back instead of committing whenever its connection answers again, or is ended.
 */
export async function transaction<T>(sql: Sql, fn: (tx: Tx) => Promise<T>, mode = '', signal?: AbortSignal): Promise<T> {
  if (signal?.aborted === true) throw givenUpReason(signal);
  const guard = new ConnectionGuard();
  const run = sql.begin(mode, (tx) => runGuarded(tx, guard, fn)) as Promise<T>;
  signal?.addEventListener('abort', () => (guard.abandoned = givenUpReason(signal)), { once: true });
  try {
    return await (signal === undefined ? run : orGivenUp(run, signal));
  } catch (err) {
    throw guard.ended ?? err;
  }
}
