/**
 * transaction() (src/store/postgres/transaction.ts) on a real PostgreSQL, with connections ended
 * under a running statement: by the server (pg_terminate_backend, as a shutdown does) and by the
 * network (a TCP relay that closes or resets the connection). The transaction rejects with the statement's own
 * error, nothing is thrown outside a promise (postgres.js would send its ROLLBACK from a
 * setImmediate with no socket), and the same one-connection pool serves the next statement.
 */
import postgres from 'postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OnLost, connect, isUnreachable, runOnPool, type Sql, type Tx } from '../../../../src/store/postgres/connection.js';
import { endsConnection, transaction } from '../../../../src/store/postgres/transaction.js';
import { createDatabase } from '../../../helpers/postgres.js';
import { startTcpRelay } from '../../../helpers/tcp-relay.js';
import { until } from '../../../helpers/until.js';

let url: string;
let drop: () => Promise<void>;
let admin: postgres.Sql;
const pools: Sql[] = [];
const thrown: unknown[] = [];
const onUncaught = (err: unknown): void => void thrown.push(err);

beforeEach(async () => {
  ({ url, drop } = await createDatabase());
  admin = postgres(url, { max: 1, onnotice: () => undefined });
  await admin.unsafe('CREATE TABLE t (id int PRIMARY KEY)');
  thrown.length = 0;
  process.on('uncaughtException', onUncaught);
});
afterEach(async () => {
  process.off('uncaughtException', onUncaught);
  for (const p of pools.splice(0)) await p.end({ timeout: 1 });
  await admin.end();
  await drop();
});

/** The store's own driver settings, one connection: the next statement reuses the one that ended. */
function pool(at = url): Sql {
  const sql = connect(at, { poolSize: 1, connectTimeoutMs: 1000 });
  pools.push(sql);
  return sql;
}

/** Ends the session of backend `pid` once it runs a statement (pg_sleep), as a shutdown would. */
async function terminateWhenBusy(pid: number): Promise<void> {
  await until('the statement running', async () => (await admin.unsafe<{ n: number }[]>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND query LIKE '%pg_sleep%'", [pid]))[0]!.n === 1, 5000);
  await admin.unsafe('SELECT pg_terminate_backend($1)', [pid]);
}

/** The transaction's failure, after giving a stray setImmediate time to throw. */
async function failureOf(p: Promise<unknown>): Promise<unknown> {
  const err = await p.then(
    () => new Error('the transaction committed'),
    (e: unknown) => e,
  );
  await new Promise((r) => setTimeout(r, 100));
  return err;
}

/** A statement on the pool as the store runs one (runOnPool: again where the failure says nothing about it). */
function nextStatement(sql: Sql): Promise<unknown> {
  return runOnPool(() => sql.unsafe('SELECT 1 AS one'), 1, OnLost.RetryOnce);
}

async function pidOf(tx: Tx): Promise<number> {
  return (await tx.unsafe<{ pid: number }[]>('SELECT pg_backend_pid() AS pid'))[0]!.pid;
}

describe('transaction() when the connection ends under a statement', () => {
  it('the server ends the session: rejects with the statement\'s error, nothing thrown outside a promise, the pool goes on', async () => {
    const sql = pool();
    let pid = 0;
    const tx = transaction(sql, async (t) => {
      pid = await pidOf(t);
      await t.unsafe('INSERT INTO t VALUES (1)');
      await t.unsafe('SELECT pg_sleep(10)');
    });
    await until('the backend pid', () => pid !== 0, 5000);
    await terminateWhenBusy(pid);
    const err = await failureOf(tx);
    expect(isUnreachable(err)).toBe(true);
    expect(thrown).toEqual([]);
    expect(await nextStatement(sql)).toEqual([{ one: 1 }]);
    expect(await admin.unsafe('SELECT id FROM t')).toEqual([]);
  });

  it('a callback that catches the failure and goes on: its next statement is refused with the same error, and nothing is committed', async () => {
    const sql = pool();
    let pid = 0;
    let next: unknown = null;
    const tx = transaction(sql, async (t) => {
      pid = await pidOf(t);
      await t.unsafe('INSERT INTO t VALUES (2)');
      try {
        await t.unsafe('SELECT pg_sleep(10)');
      } catch {
        await t.unsafe('INSERT INTO t VALUES (3)').catch((e: unknown) => (next = e));
      }
      return 'went on';
    });
    await until('the backend pid', () => pid !== 0, 5000);
    await terminateWhenBusy(pid);
    const err = await failureOf(tx);
    expect(isUnreachable(err)).toBe(true);
    expect(next).toBe(err);
    expect(thrown).toEqual([]);
    expect(await nextStatement(sql)).toEqual([{ one: 1 }]);
    expect(await admin.unsafe('SELECT id FROM t')).toEqual([]);
  });

  it.each(['close', 'reset'] as const)('the network breaks the connection (%s): rejects with an unreachable-class error, nothing thrown outside a promise, the pool goes on', async (how) => {
    const r = await startTcpRelay(url);
    try {
      const sql = pool(r.url);
      let started = false;
      const tx = transaction(sql, async (t) => {
        await t.unsafe('INSERT INTO t VALUES (4)');
        started = true;
        await t.unsafe('SELECT pg_sleep(10)');
      });
      await until('the statement sent', () => started, 5000);
      await new Promise((res) => setTimeout(res, 50));
      r[how]();
      const err = await failureOf(tx);
      expect(isUnreachable(err)).toBe(true);
      expect(thrown).toEqual([]);
      expect(await nextStatement(sql)).toEqual([{ one: 1 }]);
    } finally {
      await r.stop();
    }
  });
});

describe('transaction() on a connection that stays', () => {
  it('commits what the callback wrote and answers its value', async () => {
    const sql = pool();
    expect(await transaction(sql, async (t) => (await t.unsafe('INSERT INTO t VALUES (5) RETURNING id'))[0])).toEqual({ id: 5 });
    expect(await admin.unsafe('SELECT id FROM t')).toEqual([{ id: 5 }]);
  });

  it('rolls back on a failure that leaves the connection (a unique violation) and rejects with it', async () => {
    const sql = pool();
    await admin.unsafe('INSERT INTO t VALUES (6)');
    const err = await failureOf(
      transaction(sql, async (t) => {
        await t.unsafe('INSERT INTO t VALUES (7)');
        await t.unsafe('INSERT INTO t VALUES (6)');
      }),
    );
    expect((err as { code?: string }).code).toBe('23505');
    expect(await admin.unsafe('SELECT id FROM t ORDER BY id')).toEqual([{ id: 6 }]);
    expect(thrown).toEqual([]);
  });

  it('runs in the mode it is given', async () => {
    const sql = pool();
    const level = await transaction(sql, async (t) => (await t.unsafe<{ l: string }[]>("SELECT current_setting('transaction_isolation') AS l"))[0]!.l, 'ISOLATION LEVEL REPEATABLE READ READ ONLY');
    expect(level).toBe('repeatable read');
  });
});

describe('endsConnection', () => {
  it('names the failures after which a connection is gone, and no other', () => {
    expect(endsConnection({ code: '57P01', severity: 'FATAL' })).toBe(true);
    expect(endsConnection({ code: 'XX000', severity: 'PANIC' })).toBe(true);
    expect(endsConnection({ code: 'CONNECTION_CLOSED' })).toBe(true);
    expect(endsConnection({ code: 'ECONNRESET' })).toBe(true);
    expect(endsConnection({ code: 'EPIPE' })).toBe(true);
    expect(endsConnection({ code: '23505', severity: 'ERROR' })).toBe(false);
    expect(endsConnection({ code: '55P03', severity: 'ERROR' })).toBe(false);
    // The driver's own end: an ended connection refuses statements by itself.
    expect(endsConnection({ code: 'CONNECTION_DESTROYED' })).toBe(false);
    expect(endsConnection({ code: 'CONNECTION_ENDED' })).toBe(false);
    expect(endsConnection(new Error('boom'))).toBe(false);
    expect(endsConnection(null)).toBe(false);
  });
});
