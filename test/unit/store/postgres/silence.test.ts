/**
 * Giving up on a silent database (src/store/postgres/silence.ts): the plain pieces on their own,
 * then a given-up transaction on a real PostgreSQL (it answers at once and never commits later),
 * then the PostgreSQL store behind a TCP relay that goes silent (drops every byte, closes nothing):
 * its heartbeat is not answered within STALL_MS, every call in flight answers store_unavailable,
 * the store reports itself unavailable, and once the network heals it is available again, with its
 * change listener listening on a new connection.
 */
import postgres from 'postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../../src/store/index.js';
import { connect, isUnreachable, type Sql } from '../../../../src/store/postgres/connection.js';
import { answeredWithin, CallsInFlight, isStalled, orGivenUp, STALL_MS, stalledFor } from '../../../../src/store/postgres/silence.js';
import { transaction } from '../../../../src/store/postgres/transaction.js';
import { createDatabase } from '../../../helpers/postgres.js';
import { startTcpRelay, type TcpRelay } from '../../../helpers/tcp-relay.js';
import { until } from '../../../helpers/until.js';

const never = (): Promise<never> => new Promise<never>(() => undefined);

describe('the plain pieces', () => {
  it('orGivenUp answers with the work, or with the reason as soon as the signal aborts', async () => {
    const ac = new AbortController();
    expect(await orGivenUp(Promise.resolve(7), ac.signal)).toBe(7);
    const pending = orGivenUp(never(), ac.signal);
    ac.abort(stalledFor(10));
    const err = await pending.catch((e: unknown) => e);
    expect(isStalled(err)).toBe(true);
    // A work that fails after it was given up on goes unheard (no unhandled rejection).
    const late = new AbortController();
    late.abort(new Error('given up'));
    await expect(orGivenUp(new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 5)), late.signal)).rejects.toThrow('given up');
    await new Promise((r) => setTimeout(r, 20));
  });

  it('answeredWithin: the work if it answers in time, else a stall error counted as unreachable, heard by onSilent first', async () => {
    const heard: Error[] = [];
    expect(await answeredWithin(Promise.resolve('ok'), 50, (e) => heard.push(e))).toBe('ok');
    const err = await answeredWithin(never(), 30, (e) => heard.push(e)).catch((e: unknown) => e);
    expect(isStalled(err)).toBe(true);
    expect(isUnreachable(err)).toBe(true);
    expect(heard).toEqual([err]);
  });

  it('CallsInFlight gives up every call waiting, and none that finished', async () => {
    const calls = new CallsInFlight();
    expect(await calls.run(() => Promise.resolve(1))).toBe(1);
    const a = calls.run(() => never()).catch((e: unknown) => e);
    const b = calls.run((signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('saw the abort'))))).catch((e: unknown) => e);
    const reason = stalledFor(STALL_MS);
    calls.giveUp(reason);
    expect(await a).toBe(reason);
    expect(await b).toBe(reason);
  });
});

describe('a transaction given up on', () => {
  let url: string;
  let drop: () => Promise<void>;
  let admin: postgres.Sql;
  let sql: Sql;
  beforeEach(async () => {
    ({ url, drop } = await createDatabase());
    admin = postgres(url, { max: 1, onnotice: () => undefined });
    await admin.unsafe('CREATE TABLE t (id int PRIMARY KEY)');
    sql = connect(url, { poolSize: 1, connectTimeoutMs: 1000 });
  });
  afterEach(async () => {
    await sql.end({ timeout: 1 });
    await admin.end();
    await drop();
  });

  for (const after of ['returns', 'writes again'] as const) {
    it(`answers at once, and rolls back when its statement answers later (the callback then ${after})`, async () => {
      const ac = new AbortController();
      const started = Date.now();
      let refused: unknown = null;
      const tx = transaction(
        sql,
        async (t) => {
          await t.unsafe('INSERT INTO t VALUES (1)');
          await t.unsafe('SELECT pg_sleep(0.5)');
          if (after === 'writes again') await t.unsafe('INSERT INTO t VALUES (2)').catch((e: unknown) => ((refused = e), undefined));
          return 'done';
        },
        '',
        ac.signal,
      );
      setTimeout(() => ac.abort(stalledFor(100)), 100);
      const err = await tx.catch((e: unknown) => e);
      expect(isStalled(err)).toBe(true);
      expect(Date.now() - started).toBeLessThan(450);
      // The statement answers; the transaction rolls back instead of committing, and the connection serves on.
      await until('the connection free again', async () => (await sql.unsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM t'))[0]!.n === 0, 5000);
      await new Promise((r) => setTimeout(r, 300));
      expect(await admin.unsafe('SELECT id FROM t')).toEqual([]);
      if (after === 'writes again') expect(refused).toBe(err);
    });
  }

  it('a signal that aborted already: nothing runs', async () => {
    const ac = new AbortController();
    ac.abort(stalledFor(1));
    let ran = false;
    const err = await transaction(sql, () => Promise.resolve(void (ran = true)), '', ac.signal).catch((e: unknown) => e);
    expect(isStalled(err)).toBe(true);
    expect(ran).toBe(false);
  });
});

/** The backends of `url`'s database whose last statement was a LISTEN. */
async function listeners(url: string): Promise<number[]> {
  const probe = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    return (await probe.unsafe<{ pid: number }[]>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'listen%'")).map((r) => r.pid);
  } finally {
    await probe.end();
  }
}

describe('the PostgreSQL store when its database goes silent', () => {
  let url: string;
  let drop: () => Promise<void>;
  let relay: TcpRelay;
  const stores: Store[] = [];
  beforeEach(async () => {
    ({ url, drop } = await createDatabase());
    stores.push(await openStore(url));
    relay = await startTcpRelay(url);
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    await relay.stop();
    await drop();
  });

  it('gives up on every call in flight, says so, and is available again with its listener once the network heals', async () => {
    expect(await listeners(url)).toEqual([]);
    const store = await openStore(relay.url);
    stores.push(store);
    const node = { nodeId: 'n1', pid: 1, host: 'h', startedAt: new Date().toISOString(), heartbeatMs: Date.now(), appliedSeq: 0 };
    await store.registerNode(node);
    await store.heartbeat('n1', 0, Date.now());
    const watch = await store.watchCommits(() => undefined, () => undefined);
    try {
      let before: number[] = [];
      await until('listening', async () => (before = await listeners(url)).length === 1, 5000);
      relay.freeze();
      const frozenAt = Date.now();
      const read = store.listEnvironments().catch((e: unknown) => e);
      const beat = store.heartbeat('n1', 0, Date.now()).catch((e: unknown) => e);
      const [readErr, beatErr] = await Promise.all([read, beat]);
      expect((readErr as { code?: string }).code).toBe('store_unavailable');
      expect((beatErr as { code?: string }).code).toBe('store_unavailable');
      expect(Date.now() - frozenAt).toBeLessThan(STALL_MS + 2000);
      expect(store.unavailableReason()).toMatch(/no answer from the database/);
      // A call now answers at once.
      const quick = Date.now();
      expect(((await store.listEnvironments().catch((e: unknown) => e)) as { code?: string }).code).toBe('store_unavailable');
      expect(Date.now() - quick).toBeLessThan(100);

      relay.thaw();
      await until('the store available again', () => store.unavailableReason() === null, 10_000);
      expect(await store.listEnvironments()).toEqual([]);
      // Its listener listens again, on a new connection (the silent one was ended with its pool).
      await until('a new LISTEN connection', async () => {
        const now = await listeners(url);
        return now.length === 1 && now[0] !== before[0];
      }, 10_000);
    } finally {
      watch.stop();
    }
  }, 40_000);
});
