import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { WebhookRegistration } from '../../../../src/admin/server/state.js';
import { Webhook } from 'standardwebhooks';
import { WebhookDispatcher, type WebhookPayload } from '../../../../src/admin/server/webhooks.js';

interface Received {
  readonly body: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly at: number;
}

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
      received.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers, at: Date.now() });
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

function hook(url: string, events: WebhookRegistration['events'], secret = 'top-secret'): WebhookRegistration {
  return { id: 'wh_test', url, events, createdAt: new Date().toISOString(), secret };
}

function dispatcher(hooks: WebhookRegistration[], opts: ConstructorParameters<typeof WebhookDispatcher>[1] = {}): { d: WebhookDispatcher; logs: string[] } {
  const logs: string[] = [];
  const d = new WebhookDispatcher(() => Promise.resolve(hooks), { initialDelayMs: 20, maxDelayMs: 200, log: (l) => logs.push(l), ...opts });
  cleanups.push(() => d.close());
  return { d, logs };
}

async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const PAYLOAD: WebhookPayload = { event: 'content.updated', env: 'dev', id: 'Settings', hash: 'a'.repeat(32), at: '2026-01-01T00:00:00.000Z' };

describe('WebhookDispatcher', () => {
  it('posts {event, env, id, hash, at} signed per Standard Webhooks over the exact body', async () => {
    const r = await receiver();
    const { d } = dispatcher([hook(r.url, ['content.updated'])]);
    d.emit([PAYLOAD]);
    await until(() => r.received.length === 1);
    const got = r.received[0]!;
    expect(JSON.parse(got.body)).toEqual(PAYLOAD);
    expect(new Webhook(Buffer.from('top-secret'), { format: 'raw' }).verify(got.body, got.headers as Record<string, string>)).toEqual(PAYLOAD);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['x-rcd-event']).toBe('content.updated');
    await until(() => d.stats().delivered === 1);
  });

  it('only sends events a hook subscribed to', async () => {
    const r = await receiver();
    const { d } = dispatcher([hook(r.url, ['content.deleted'])]);
    d.emit([PAYLOAD, { ...PAYLOAD, event: 'content.deleted' }]);
    await until(() => d.stats().delivered === 1);
    expect(r.received.map((x) => (JSON.parse(x.body) as WebhookPayload).event)).toEqual(['content.deleted']);
  });

  it('retries after a 500 with growing delays and the same delivery id', async () => {
    const r = await receiver([500, 503]);
    const { d } = dispatcher([hook(r.url, ['content.updated'])]);
    d.emit([PAYLOAD]);
    await until(() => d.stats().delivered === 1);
    expect(r.received).toHaveLength(3);
    const ids = new Set(r.received.map((x) => x.headers['webhook-id']));
    expect(r.received[0]!.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(ids.size).toBe(1);
    const gap1 = r.received[1]!.at - r.received[0]!.at;
    const gap2 = r.received[2]!.at - r.received[1]!.at;
    expect(gap1).toBeGreaterThanOrEqual(15);
    expect(gap2).toBeGreaterThanOrEqual(30);
    expect(r.received.every((x) => x.body === r.received[0]!.body)).toBe(true);
  });

  it('gives up once the total retry time is spent', async () => {
    const r = await receiver(new Array<number>(100).fill(500));
    const { d, logs } = dispatcher([hook(r.url, ['content.updated'])], { maxRetryMs: 150 });
    d.emit([PAYLOAD]);
    await until(() => d.stats().failed === 1);
    expect(d.stats()).toMatchObject({ queued: 0, inFlight: 0, delivered: 0 });
    expect(r.received.length).toBeGreaterThan(1);
    expect(r.received.length).toBeLessThan(10);
    expect(logs.some((l) => l.includes('giving up'))).toBe(true);
  });

  it('does not retry a 4xx other than 408/429', async () => {
    const r = await receiver([404]);
    const { d } = dispatcher([hook(r.url, ['content.updated'])]);
    d.emit([PAYLOAD]);
    await until(() => d.stats().failed === 1);
    await new Promise((res) => setTimeout(res, 100));
    expect(r.received).toHaveLength(1);
  });

  it('retries an unreachable receiver and bounds the queue', async () => {
    const dead = await receiver();
    const url = dead.url;
    await cleanups.pop()!(); // stop the receiver: connections are refused from now on
    const { d, logs } = dispatcher([hook(url, ['content.updated'])], { maxQueue: 3, initialDelayMs: 1000 });
    const started = Date.now();
    d.emit([PAYLOAD, PAYLOAD, PAYLOAD, PAYLOAD, PAYLOAD]);
    expect(Date.now() - started).toBeLessThan(50);
    await until(() => d.stats().dropped === 2);
    await until(() => d.stats().queued === 3 && d.stats().inFlight === 0);
    expect(logs.some((l) => l.includes('queue full'))).toBe(true);
  });

  it('close() stops pending retries and in-flight attempts promptly', async () => {
    const r = await receiver([], 5000); // never answers in time
    const { d } = dispatcher([hook(r.url, ['content.updated'])]);
    d.emit([PAYLOAD]);
    await until(() => d.stats().inFlight === 1);
    const t = Date.now();
    await d.close();
    expect(Date.now() - t).toBeLessThan(1000);
    expect(d.stats().inFlight).toBe(0);
    d.emit([PAYLOAD]);
    expect(d.stats().queued).toBe(0);
  });
});
