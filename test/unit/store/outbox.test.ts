/**
 * The webhook outbox of every store (a SQLite file, an in-memory SQLite database, a real PostgreSQL
 * database): entries exist exactly when their write committed, held until released, claimed under
 * a lease by one claimer at a time, and settled as delivered, due again or dead (bounded).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../../src/store/index.js';
import type { NewOutboxEntry, OutboxOf } from '../../../src/store/types.js';
import { STORE_KINDS, openStoreOfKind } from './kinds.js';

let n = 0;
function entry(event = 'content.updated'): NewOutboxEntry {
  n++;
  return { id: `msg_${String(n).padStart(32, '0')}`, hookId: 'wh_1', event, body: `{"n":${n}}` };
}

function outbox<R>(entries: NewOutboxEntry[], holdMs = 0): OutboxOf<R> {
  return { holdMs, build: () => entries };
}

describe.concurrent.each(STORE_KINDS)('webhook outbox (%s)', (kind) => {
  let store: Store;
  let cleanup: () => Promise<void> | void = () => undefined;

  beforeEach(async () => {
    ({ store, cleanup } = await openStoreOfKind(kind));
    await store.putEnvironment('dev');
  });

  afterEach(async () => {
    await store.close();
    await cleanup();
  });

  it.sequential('adds the entries of a committed write, and none of a refused one', async () => {
    await store.putContent('dev', 'A', '{"a":1}', null, outbox([entry()]));
    await expect(store.putContent('dev', 'B', '{not json', null, outbox([entry()]))).rejects.toMatchObject({ code: 'invalid_content' });
    await expect(store.deleteEnvironment('dev', false, outbox([entry()]))).rejects.toMatchObject({ code: 'conflict' });
    await expect(store.putMapping('dev', 'A', { rules: 'no' }, outbox([entry()]))).rejects.toMatchObject({ code: 'invalid_mapping' });
    await expect(store.sync('dev', 'nowhere', undefined, outbox([entry()]))).rejects.toMatchObject({ code: 'not_found' });
    // A build that throws rolls the change back with it.
    await expect(store.putContent('dev', 'C', '{"c":1}', null, { holdMs: 0, build: () => { throw new Error('boom'); } })).rejects.toThrow('boom');
    expect((await store.listContent('dev')).map((c) => c.id)).toEqual(['A']);
    expect(await store.outboxCounts()).toEqual({ pending: 1, dead: 0 });
  });

  it.sequential('builds from the write result and the state after it, read in the same transaction', async () => {
    const seen: unknown[] = [];
    await store.importBundle(
      { environments: { dev: { content: { Cfg: { revisions: [{ text: '{"x":1}' }] } } } } },
      {
        holdMs: 0,
        contents: [{ seq: 0, kind: 'content', envId: 'dev', target: 'cfg' }],
        build: (report, after) => {
          seen.push(report.revisionsAdded, after.map((c) => c.meta?.revisions.length));
          return [];
        },
      },
    );
    expect(seen).toEqual([1, [1]]);
  });

  it.sequential('holds entries until released, then one claimer at a time leases them, oldest first', async () => {
    const now = Date.now();
    const [a, b, c] = [entry(), entry(), entry()];
    await store.putContent('dev', 'A', '{"a":1}', null, outbox([a, b], 60_000));
    await store.putContent('dev', 'A', '{"a":2}', null, outbox([c], 60_000));
    expect(await store.claimOutbox(now + 1000, now + 2000, 10)).toEqual([]);
    await store.releaseOutbox([a.id, b.id, c.id], now);
    // Two claims at once take disjoint rows.
    const [one, two] = await Promise.all([store.claimOutbox(now, now + 30_000, 2), store.claimOutbox(now, now + 30_000, 2)]);
    const ids = [...one, ...two].map((e) => e.id);
    expect(ids.sort()).toEqual([a.id, b.id, c.id].sort());
    expect((one.length === 2 ? one : two).map((e) => e.id)).toEqual([a.id, b.id]);
    expect(one[0]).toMatchObject({ hookId: 'wh_1', event: 'content.updated', attempts: 0, lastError: null, deadAt: null });
    // Leased: nothing until the lease ends, then all three again.
    expect(await store.claimOutbox(now + 1000, now + 2000, 10)).toEqual([]);
    expect(await store.claimOutbox(now + 30_000, now + 60_000, 10)).toHaveLength(3);
  });

  it.sequential('settles: delivered removes, retry counts or not, dead keeps the newest N', async () => {
    const es = [entry(), entry(), entry(), entry()];
    await store.putContent('dev', 'A', '{"a":1}', null, outbox(es));
    const now = Date.now();
    await store.claimOutbox(now, now + 1000, 10);
    await store.settleOutbox(es[0]!.id, { kind: 'delivered' });
    await store.settleOutbox(es[1]!.id, { kind: 'retry', atMs: now, error: 'status 500', counted: true });
    await store.settleOutbox(es[1]!.id, { kind: 'retry', atMs: now, error: 'stopped', counted: false });
    const again = await store.claimOutbox(now, now + 1000, 10);
    expect(again.map((e) => [e.id, e.attempts, e.lastError])).toEqual([[es[1]!.id, 1, 'stopped']]);
    for (const e of [es[1]!, es[2]!, es[3]!]) {
      await store.settleOutbox(e.id, { kind: 'dead', error: 'status 404 (final)', keepDead: 2 });
      await new Promise((r) => setTimeout(r, 5)); // distinct dead_at times
    }
    const dead = await store.listDeadLetters(10);
    expect(dead.map((e) => e.id)).toEqual([es[3]!.id, es[2]!.id]);
    expect(dead[0]).toMatchObject({ attempts: 1, lastError: 'status 404 (final)', deadAt: expect.any(String) as string });
    expect(await store.listDeadLetters(1)).toHaveLength(1);
    expect(await store.outboxCounts()).toEqual({ pending: 0, dead: 2 });
    // Dead letters are never claimed.
    expect(await store.claimOutbox(now + 10_000_000, now + 20_000_000, 10)).toEqual([]);
  });
});
