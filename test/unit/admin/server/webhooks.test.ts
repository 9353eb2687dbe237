/**
 * The webhook dispatcher against the real outbox of a store (an in-memory SQLite store and its
 * admin state) and a real receiver on loopback: what a write put in the outbox is posted signed,
 * retried with growing delays under one webhook-id, dead-lettered after the last attempt or a
 * final answer, and left due again when the dispatcher stops mid-attempt.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { openAdminState } from '../../../../src/admin/server/open-state.js';
import type { AdminStateStore, WebhookEvent } from '../../../../src/admin/server/state.js';
import { outboxEntries, WebhookDispatcher, type WebhookDispatcherOptions, type WebhookPayload } from '../../../../src/admin/server/webhooks.js';
import { openStore } from '../../../../src/store/index.js';
import type { Store } from '../../../../src/store/types.js';

interface Received {
  readonly body: string;
  readonly headers: Record<string, string>;
  readonly at: number;
}

const SECRET = 'whsec_' + Buffer.from('unit-test-key-bytes').toString('base64');

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A real receiver on loopback; `statuses` are answered in order, then 200. */
async function receiver(statuses: number[] = [], delayMs = 0): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers as Record<string, string>, at: Date.now() });
      setTimeout(() => {
        res.statusCode = statuses.shift() ?? 200;
        res.end('ok');
      }, delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

interface Rig {
  store: Store;
  state: AdminStateStore;
  d: WebhookDispatcher;
  logs: string[];
  /** A content write whose outbox entries announce `payloads`, released at once, as the server does. */
  write: (payloads: WebhookPayload[]) => Promise<void>;
}

async function rig(url: string, events: WebhookEvent[], opts: WebhookDispatcherOptions = {}): Promise<Rig> {
  const store = await openStore('memory:');
  const state = openAdminState('memory:');
  await store.putEnvironment('dev');
  await state.addWebhook(url, events, SECRET);
  const logs: string[] = [];
  // The receivers are on loopback: allowed as --webhook-allow-private allows them.
  const d = new WebhookDispatcher(store, state, { retryMinMs: 20, retryMaxMs: 200, allowPrivateTargets: true, log: (l) => logs.push(l), ...opts });
  cleanups.push(async () => {
    await d.close();
    await state.close();
    await store.close();
  });
  let n = 0;
  const write = async (payloads: WebhookPayload[]): Promise<void> => {
    const hooks = await state.listWebhookInfo();
    const ids: string[] = [];
    await store.putContent('dev', 'Settings', `{"n":${n++}}`, null, {
      holdMs: 60_000,
      build: () => {
        const entries = outboxEntries(hooks, payloads);
        ids.push(...entries.map((e) => e.id));
        return entries;
      },
    });
    await store.releaseOutbox(ids, Date.now());
    d.kick();
  };
  return { store, state, d, logs, write };
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const PAYLOAD: WebhookPayload = { event: 'content.updated', env: 'dev', id: 'Settings', hash: 'a'.repeat(32), at: '2026-01-01T00:00:00.000Z' };

describe('WebhookDispatcher over the store outbox', () => {
  it('posts {event, env, id, hash, at} signed per Standard Webhooks over the exact body, then removes it', async () => {
    const r = await receiver();
    const { d, store, write } = await rig(r.url, ['content.updated']);
    d.start();
    await write([PAYLOAD, { ...PAYLOAD, event: 'content.deleted' }]);
    await until(() => d.stats().delivered === 1);
    expect(r.received).toHaveLength(1);
    const got = r.received[0]!;
    expect(new Webhook(SECRET).verify(got.body, got.headers)).toEqual(PAYLOAD);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['x-rcd-event']).toBe('content.updated');
    expect(got.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    await until(async () => (await store.outboxCounts()).pending === 0);
    expect(await store.outboxCounts()).toEqual({ pending: 0, dead: 0 });
  });

  it('writes nothing to the outbox when the write fails', async () => {
    const r = await receiver();
    const { store, state } = await rig(r.url, ['content.updated']);
    const hooks = await state.listWebhookInfo();
    await expect(store.putContent('dev', 'Bad', '{not json', null, { holdMs: 0, build: () => outboxEntries(hooks, [PAYLOAD]) })).rejects.toMatchObject({ code: 'invalid_content' });
    await expect(store.putContent('nowhere', 'X', '{}', null, { holdMs: 0, build: () => outboxEntries(hooks, [PAYLOAD]) })).rejects.toMatchObject({ code: 'not_found' });
    expect(await store.outboxCounts()).toEqual({ pending: 0, dead: 0 });
  });

  it('retries after a 500 with growing delays, the same webhook-id and a fresh signature each time', async () => {
    const r = await receiver([500, 503]);
    const { d, write } = await rig(r.url, ['content.updated']);
    d.start();
    await write([PAYLOAD]);
    await until(() => d.stats().delivered === 1);
    expect(r.received).toHaveLength(3);
    expect(new Set(r.received.map((x) => x.headers['webhook-id'])).size).toBe(1);
    for (const x of r.received) expect(new Webhook(SECRET).verify(x.body, x.headers)).toEqual(PAYLOAD);
    const gap1 = r.received[1]!.at - r.received[0]!.at;
    const gap2 = r.received[2]!.at - r.received[1]!.at;
    expect(gap1).toBeGreaterThanOrEqual(15);
    expect(gap2).toBeGreaterThanOrEqual(30);
    expect(d.stats().retried).toBe(2);
  });

  it('sends a retry when it is due, not at the next poll (none runs here: the dispatcher is not started)', async () => {
    const r = await receiver([500]);
    const { d, write } = await rig(r.url, ['content.updated'], { retryMinMs: 300, retryMaxMs: 1000 });
    await write([PAYLOAD]);
    await until(() => d.stats().delivered === 1, 5000);
    expect(r.received).toHaveLength(2);
    // The backoff is 300 ms with ±20% jitter.
    expect(r.received[1]!.at - r.received[0]!.at).toBeGreaterThanOrEqual(235);
    expect(d.stats().retried).toBe(1);
  });

  it('dead-letters after the last attempt, with the attempts and the last error', async () => {
    const r = await receiver(new Array<number>(100).fill(500));
    const { d, store, logs, write } = await rig(r.url, ['content.updated'], { attempts: 3 });
    d.start();
    await write([PAYLOAD]);
    await until(() => d.stats().failed === 1);
    expect(r.received).toHaveLength(3);
    const dead = await store.listDeadLetters(10);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ id: r.received[0]!.headers['webhook-id'], hookId: expect.stringMatching(/^wh_/) as string, event: 'content.updated', attempts: 3, lastError: 'status 500' });
    expect(JSON.parse(dead[0]!.body)).toEqual(PAYLOAD);
    expect(await store.outboxCounts()).toEqual({ pending: 0, dead: 1 });
    expect(logs.some((l) => l.includes('giving up'))).toBe(true);
  });

  it('does not retry a 4xx other than 408/429: dead-lettered at once', async () => {
    const r = await receiver([404]);
    const { d, store, write } = await rig(r.url, ['content.updated']);
    d.start();
    await write([PAYLOAD]);
    await until(() => d.stats().failed === 1);
    await new Promise((res) => setTimeout(res, 100));
    expect(r.received).toHaveLength(1);
    expect((await store.listDeadLetters(10))[0]).toMatchObject({ attempts: 1, lastError: 'status 404 (final)' });
  });

  it('keeps at most --webhook-dead-letters dead letters, dropping the oldest', async () => {
    const r = await receiver(new Array<number>(100).fill(410));
    const { d, store, write } = await rig(r.url, ['content.updated'], { deadLetters: 2 });
    d.start();
    for (let i = 0; i < 4; i++) await write([{ ...PAYLOAD, id: `Item${i}` }]);
    await until(() => d.stats().failed === 4);
    const dead = await store.listDeadLetters(10);
    expect(dead.map((x) => (JSON.parse(x.body) as WebhookPayload).id).sort()).toEqual(['Item2', 'Item3']);
    expect(await store.outboxCounts()).toEqual({ pending: 0, dead: 2 });
  });

  it('close() aborts an attempt in flight promptly and leaves its row due again, not counted', async () => {
    const r = await receiver([], 5000); // never answers in time
    const { d, store, write } = await rig(r.url, ['content.updated']);
    d.start();
    await write([PAYLOAD]);
    await until(() => d.stats().inFlight === 1);
    const t = Date.now();
    await d.close();
    expect(Date.now() - t).toBeLessThan(1000);
    expect(d.stats().inFlight).toBe(0);
    const due = await store.claimOutbox(Date.now(), Date.now() + 1000, 10);
    expect(due).toHaveLength(1);
    expect(due[0]).toMatchObject({ attempts: 0, lastError: 'stopped before an answer' });
  });

  it('drops (and logs) the pending deliveries of a webhook deleted before they were sent', async () => {
    const r = await receiver();
    const { d, store, state, write } = await rig(r.url, ['content.updated']);
    await d.close(); // nothing is sent until the webhook is gone
    await write([PAYLOAD]);
    expect(await store.outboxCounts()).toEqual({ pending: 1, dead: 0 });
    await state.deleteWebhook((await state.listWebhookInfo())[0]!.id);
    const logs: string[] = [];
    const next = new WebhookDispatcher(store, state, { log: (l) => logs.push(l) });
    cleanups.push(() => next.close());
    next.start();
    await until(() => next.stats().dropped === 1);
    expect(r.received).toHaveLength(0);
    expect(await store.outboxCounts()).toEqual({ pending: 0, dead: 0 });
    expect(logs.some((l) => l.includes('was deleted'))).toBe(true);
  });

  it('a claim leases rows: a second claim before the lease ends takes nothing', async () => {
    const r = await receiver();
    const { d, store, write } = await rig(r.url, ['content.updated']);
    await d.close(); // this test claims by hand
    await write([PAYLOAD]);
    const now = Date.now();
    expect(await store.claimOutbox(now, now + 60_000, 10)).toHaveLength(1);
    expect(await store.claimOutbox(now + 1000, now + 60_000, 10)).toHaveLength(0);
    expect(await store.claimOutbox(now + 60_000, now + 120_000, 10)).toHaveLength(1);
  });
});
