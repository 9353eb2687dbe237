/**
 * Statements tried again after a lost connection, on a real PostgreSQL behind a TCP relay that
 * resets (RST) or closes the connection under a running statement: runOnPool's retry of a read
 * (src/store/postgres/connection.ts) and the worker's revision reader (reader.ts) answer through a
 * new connection, a write is not tried again, and the pool serves the next statement. postgres.js
 * hands a statement to a reset connection until it sees the socket close; one sent there would
 * never settle, so every wait here is bounded and fails with what was waited for.
 */
import postgres from 'postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../../../src/store/index.js';
import { OnLost, connect, isUnreachable, runOnPool, type Sql } from '../../../../src/store/postgres/connection.js';
import { PostgresRevisionSource } from '../../../../src/store/postgres/reader.js';
import { createDatabase } from '../../../helpers/postgres.js';
import { startTcpRelay, type TcpRelay } from '../../../helpers/tcp-relay.js';

let url: string;
let drop: () => Promise<void>;
let relay: TcpRelay;
const pools: Sql[] = [];

beforeEach(async () => {
  ({ url, drop } = await createDatabase());
  relay = await startTcpRelay(url);
});
afterEach(async () => {
  for (const p of pools.splice(0)) await p.end({ timeout: 1 });
  await relay.stop();
  await drop();
});

/** `p`'s outcome, or a failure naming `what` if it has not settled within 10 s. */
async function within<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within 10 s`)), 10_000)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

function pool(size: number): Sql {
  const sql = connect(relay.url, { poolSize: size, connectTimeoutMs: 1000 });
  pools.push(sql);
  return sql;
}

/** Every connection of the pool opened (each relayed). */
async function warm(sql: Sql, size: number): Promise<void> {
  await Promise.all(Array.from({ length: size }, () => sql.unsafe('SELECT pg_sleep(0.05)')));
}

describe('runOnPool after a lost connection', () => {
  for (const size of [1, 4]) {
    for (const how of ['reset', 'close'] as const) {
      it(`a read tried again answers through a new connection (pool of ${size}, connection ${how})`, async () => {
        const sql = pool(size);
        await warm(sql, size);
        let attempts = 0;
        const read = runOnPool(
          () => {
            attempts++;
            return sql.unsafe<{ one: number }[]>('SELECT 1 AS one, pg_sleep(0.3)');
          },
          size,
          OnLost.RetryOnce,
        );
        await new Promise((r) => setTimeout(r, 100));
        relay[how]();
        expect((await within('the read tried again', read)).map((r) => r.one)).toEqual([1]);
        expect(attempts).toBe(2);
        expect(await within('the next statement', sql.unsafe('SELECT 2 AS two'))).toEqual([{ two: 2 }]);
      });
    }
  }

  it('a write is not tried again: it rejects as unreachable, and the pool serves the next statement', async () => {
    const sql = pool(1);
    await warm(sql, 1);
    let attempts = 0;
    const write = runOnPool(
      () => {
        attempts++;
        return sql.unsafe('SELECT pg_sleep(0.3)');
      },
      1,
      OnLost.Throw,
    ).then(
      () => null,
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 100));
    relay.reset();
    expect(isUnreachable(await within('the write', write))).toBe(true);
    expect(attempts).toBe(1);
    expect(await within('the next statement', runOnPool(() => sql.unsafe('SELECT 2 AS two'), 1, OnLost.RetryOnce))).toEqual([{ two: 2 }]);
  });
});

describe("a worker's revision reader after a lost connection", () => {
  it('a batch whose connection is reset under it answers through a new connection', async () => {
    const store = await openStore(url);
    await store.close();
    const reader = new PostgresRevisionSource(relay.url);
    try {
      // A first batch prepares the statement, as a running worker's has.
      expect((await reader.readRevisions([9])).size).toBe(0);
      // A batch waiting on the server as the connection resets: a lock held elsewhere keeps it there.
      const admin = postgres(url, { max: 1, onnotice: () => undefined });
      try {
        const locked = admin.begin(async (tx) => {
          await tx.unsafe('LOCK TABLE revisions IN ACCESS EXCLUSIVE MODE');
          await new Promise((r) => setTimeout(r, 500));
        });
        await new Promise((r) => setTimeout(r, 100));
        const batch = reader.readRevisions([1, 2, 3]);
        await new Promise((r) => setTimeout(r, 100));
        relay.reset();
        expect((await within('the batch', batch)).size).toBe(0);
        await locked;
      } finally {
        await admin.end();
      }
      expect((await within('the next batch', reader.readMappings([2]))).size).toBe(0);
    } finally {
      await reader.close();
    }
  });
});
