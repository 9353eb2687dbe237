/**
 * Webhooks from the real server process to a real receiver on loopback: signed bodies, retries
 * after a 500, and admin calls that stay fast while a receiver fails.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server-process.js';
import { field, parseAnswer, type Answer } from '../helpers/answers.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
/** The Standard Webhooks form: `whsec_` + base64 of the key. */
const SECRET = 'whsec_' + Buffer.from('receiver-shared-secret-bytes').toString('base64');

interface Hit {
  readonly body: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly at: number;
}

let srv: ServerProcess;
let receiver: Server;
let receiverUrl: string;
const hits: Hit[] = [];
/** Status codes answered in order; 204 once empty. */
const script: number[] = [];

async function adm(method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, {
    method,
    headers: AUTH,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const json = parseAnswer(await res.text());
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function waitFor(n: number, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (hits.length < n) {
    if (Date.now() > end) throw new Error(`expected ${n} webhook hits, got ${hits.length}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** What a receiver does: the maintained Standard Webhooks verifier (signature and a 5-minute timestamp window). */
function verify(hit: Hit): unknown {
  return new Webhook(SECRET).verify(hit.body, hit.headers as Record<string, string>);
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers, at: Date.now() });
      res.statusCode = script.shift() ?? 204;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/rcd`;
  // Retries from 250 ms instead of the default 1 s: the schedule (doubling, ±20% jitter) is the same,
  // a quarter of the wait.
  srv = await startServer({ admin: true, args: ['--webhook-allow-private', 'true', '--webhook-retry-min', '250'] });
});

afterAll(async () => {
  await srv?.dispose();
  receiver.closeAllConnections();
  await new Promise<void>((r) => receiver.close(() => r()));
});

describe('webhooks', () => {
  it('registers, lists without the secret, and delivers every subscribed event signed', async () => {
    const hook = await adm('POST', 'webhooks', {
      url: receiverUrl,
      events: ['content.updated', 'content.deleted', 'mapping.updated', 'environment.synced'],
      secret: SECRET,
    });
    expect(hook).toMatchObject({ id: expect.any(String) as string, url: receiverUrl, secret: SECRET });
    const listed = await adm('GET', 'webhooks');
    expect(listed.webhooks).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(SECRET);

    await adm('PUT', 'environments/dev');
    await adm('PUT', 'environments/prod');
    const put = await adm('PUT', 'environments/dev/content/Store', '{"sale":false}');
    await waitFor(1);
    expect(verify(hits[0]!)).toEqual({ event: 'content.updated', env: 'dev', id: 'Store', hash: put.hash, at: expect.any(String) as string });
    expect(hits[0]!.headers['content-type']).toBe('application/json');

    await adm('PUT', 'environments/dev/content/Store/mapping', { rules: [{ segment: 'all', patch: { sale: true } }] });
    await waitFor(2);
    expect(verify(hits[1]!)).toMatchObject({ event: 'mapping.updated', env: 'dev', id: 'Store', hash: put.hash });

    await adm('POST', 'environments/dev/sync', { to: 'prod' });
    await waitFor(3);
    expect(verify(hits[2]!)).toMatchObject({ event: 'environment.synced', env: 'prod', id: 'Store', hash: put.hash });

    await adm('DELETE', 'environments/prod/content/store');
    await waitFor(4);
    expect(verify(hits[3]!)).toMatchObject({ event: 'content.deleted', env: 'prod', id: 'Store', hash: put.hash });
  });

  it('retries after a 500 with the same body and signature, without delaying the admin call', async () => {
    hits.length = 0;
    script.push(500, 500);
    const t = Date.now();
    const put = await adm('PUT', 'environments/dev/content/Store', '{"sale":"maybe"}');
    expect(Date.now() - t).toBeLessThan(1000);
    await waitFor(3);
    expect(hits[0]!.body).toBe(hits[2]!.body);
    // One webhook-id for every attempt (receivers drop duplicates by it); each attempt signed afresh.
    expect(hits[0]!.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(hits[0]!.headers['webhook-id']).toBe(hits[2]!.headers['webhook-id']);
    expect(Number(hits[2]!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(Number(hits[0]!.headers['webhook-timestamp']));
    // A replay of a captured delivery outside the receiver's window is refused by the same verifier.
    const old = { ...(hits[0]!.headers as Record<string, string>), 'webhook-timestamp': String(Math.floor(Date.now() / 1000) - 3600) };
    expect(() => new Webhook(SECRET).verify(hits[0]!.body, old)).toThrow(WebhookVerificationError);
    // And a tampered body is refused.
    expect(() => new Webhook(SECRET).verify(hits[0]!.body.replace('Store', 'Stole'), hits[0]!.headers as Record<string, string>)).toThrow(WebhookVerificationError);
    expect(verify(hits[2]!)).toMatchObject({ event: 'content.updated', id: 'Store', hash: put.hash });
    // Exponential backoff from --webhook-retry-min (250 ms, less 20% jitter): the second wait is longer than the first.
    const gap1 = hits[1]!.at - hits[0]!.at;
    const gap2 = hits[2]!.at - hits[1]!.at;
    expect(gap1).toBeGreaterThanOrEqual(195);
    expect(gap2).toBeGreaterThan(gap1 * 1.2);
    await new Promise((r) => setTimeout(r, 300));
    expect(hits).toHaveLength(3);
  });

  it('stops delivering once removed', async () => {
    const hooks = field((await adm('GET', 'webhooks')).webhooks, 'webhooks');
    for (const h of hooks) await adm('DELETE', `webhooks/${h.id}`);
    hits.length = 0;
    await adm('PUT', 'environments/dev/content/Store', '{"sale":"no"}');
    await new Promise((r) => setTimeout(r, 500));
    expect(hits).toHaveLength(0);
    const audit = field((await adm('GET', 'audit?limit=1000')).entries, 'entries');
    expect(audit.filter((e) => e.action === 'webhook.add')).toHaveLength(1);
    expect(audit.filter((e) => e.action === 'webhook.delete')).toHaveLength(1);
  });
});
