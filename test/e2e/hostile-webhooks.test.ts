/**
 * Webhook targets an admin token should not be able to aim at the server's own network (docs/security.md,
 * "Webhook targets"), against the real server: every spelling of loopback and the other internal
 * ranges refused at registration; a name that resolves to loopback when a delivery is made is
 * dead-lettered with one stable reason, whether a port listens there or not; credentials in a URL
 * refused; and `--webhook-allow-private` allowing such receivers on purpose.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAnswer, type Answer } from '../helpers/answers.js';
import { freePort } from '../helpers/free-port.js';
import { startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { until } from '../helpers/until.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const ALLOW = ['--webhook-allow-private', 'true'];

interface DeadLetters {
  readonly pending: number;
  readonly dead: number;
  readonly deadLetters: readonly { readonly hookId: string; readonly attempts: number; readonly lastError: string }[];
}

let receiver: Server;
let port: number;
let hits = 0;

async function adm(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; json: Answer; text: string }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: parseAnswer(text), text };
}

/** The loopback receiver's port written every way the URL parser reads as 127.0.0.1 (or its IPv6 forms). */
function loopbackSpellings(p: number): string[] {
  return [
    `http://127.0.0.1:${p}/hook`,
    `http://127.1:${p}/hook`,
    `http://2130706433:${p}/hook`,
    `http://0x7f.0.0.1:${p}/hook`,
    `http://017700000001:${p}/hook`,
    `http://[::ffff:127.0.0.1]:${p}/hook`,
    `http://localhost:${p}/hook`,
  ];
}

/** The other ranges that are not public, each in one spelling. */
const INTERNAL = [
  'http://[::1]/hook',
  'http://0.0.0.0/hook',
  'http://0/hook',
  'http://[::]/hook',
  'http://10.1.2.3/hook',
  'http://172.16.0.1/hook',
  'http://192.168.0.1/hook',
  'http://100.64.0.1/hook',
  'http://169.254.169.254/latest/meta-data/',
  'http://[fe80::1]/hook',
  'http://[fd00::1]/hook',
  'http://224.0.0.1/hook',
  'http://[ff02::1]/hook',
  'http://[::ffff:10.0.0.1]/hook',
  'http://[64:ff9b::169.254.169.254]/hook',
  'http://[2002:7f00:1::]/hook',
];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  port = (receiver.address() as AddressInfo).port;
});

afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise<void>((r) => receiver.close(() => r()));
});

describe('without --webhook-allow-private (the default)', () => {
  let srv: ServerProcess;
  beforeAll(async () => {
    srv = await startServer({ admin: true });
  });
  afterAll(async () => {
    await srv?.dispose();
  });

  it('refuses loopback in every spelling and every other internal range: 400 webhook_target_refused, nothing registered or audited', async () => {
    for (const url of [...loopbackSpellings(port), ...INTERNAL]) {
      const r = await adm(srv, 'POST', 'webhooks', { url, events: ['content.updated'] });
      expect([url, r.status, r.json.error?.code]).toEqual([url, 400, 'webhook_target_refused']);
    }
    expect((await adm(srv, 'GET', 'webhooks')).json.webhooks).toEqual([]);
    const audit = await adm(srv, 'GET', 'audit');
    expect(audit.json.entries?.filter((e) => e.action === 'webhook.add')).toEqual([]);
  });

  it('refuses credentials in the URL (they would be listed and audited), and keeps them out of the audit', async () => {
    for (const url of ['http://user:pw-secret-1@hooks.example/x', 'https://user@hooks.example/x', 'https://:pw-secret-2@hooks.example/x']) {
      const r = await adm(srv, 'POST', 'webhooks', { url, events: ['content.updated'] });
      expect([url, r.status, r.json.error?.code]).toEqual([url, 400, 'invalid_body']);
    }
    expect((await adm(srv, 'GET', 'webhooks')).json.webhooks).toEqual([]);
    expect((await adm(srv, 'GET', 'audit')).text).not.toMatch(/pw-secret/);
  });
});

describe('with --webhook-allow-private', () => {
  it('accepts the loopback spellings, as the parser normalises them, and delivers to them', async () => {
    const srv = await startServer({ admin: true, args: ALLOW });
    try {
      for (const url of [`http://127.1:${port}/hook`, `http://[::ffff:127.0.0.1]:${port}/hook`, 'http://169.254.169.254/latest/meta-data/']) {
        const r = await adm(srv, 'POST', 'webhooks', { url, events: ['content.deleted'] });
        expect([url, r.status]).toEqual([url, 201]);
      }
      expect((await adm(srv, 'GET', 'webhooks')).json.webhooks?.map((w) => w.url)).toEqual([
        `http://127.0.0.1:${port}/hook`,
        `http://[::ffff:7f00:1]:${port}/hook`,
        'http://169.254.169.254/latest/meta-data/',
      ]);
      // Credentials stay refused: the flag is about addresses.
      expect((await adm(srv, 'POST', 'webhooks', { url: `http://u:p@127.0.0.1:${port}/hook`, events: ['content.updated'] })).json.error?.code).toBe('invalid_body');
      const delivered = await adm(srv, 'POST', 'webhooks', { url: `http://2130706433:${port}/hook`, events: ['content.updated'] });
      expect(delivered.status).toBe(201);
      const before = hits;
      await adm(srv, 'PUT', 'environments/dev');
      expect((await adm(srv, 'PUT', 'environments/dev/content/Shop', '{"price":1}')).status).toBe(200);
      await until('the delivery to 2130706433', () => hits > before, 15_000);
    } finally {
      await srv.dispose();
    }
  });
});

describe('at delivery time', () => {
  it('a name that resolves to loopback when the delivery is made is dead-lettered at once, with the same reason whether a port listens or not', async () => {
    const dir = tempDir();
    const closed = await freePort();
    // Registered while the operator allowed it; the server then runs without the flag. The names are
    // resolved again at each delivery, as they are after a DNS change (rebinding).
    const allowed = await startServer({ dir, admin: true, args: ALLOW });
    const ids: string[] = [];
    try {
      for (const url of [`http://localhost:${port}/hook`, `http://localhost:${closed}/hook`, `http://127.1:${port}/hook`]) {
        const r = await adm(allowed, 'POST', 'webhooks', { url, events: ['content.updated'] });
        expect(r.status).toBe(201);
        ids.push(r.json.id!);
      }
      await adm(allowed, 'PUT', 'environments/dev');
    } finally {
      await allowed.dispose();
    }
    const srv = await startServer({ dir, admin: true });
    try {
      const before = hits;
      expect((await adm(srv, 'PUT', 'environments/dev/content/Shop', '{"price":2}')).status).toBe(200);
      let letters: DeadLetters | undefined;
      await until('three dead letters', async () => {
        letters = JSON.parse((await adm(srv, 'GET', 'webhooks/dead-letters')).text) as DeadLetters;
        return letters.dead === 3;
      }, 15_000);
      expect(letters!.pending).toBe(0);
      // Final at the first attempt (a refusal is this server's rule, not a failing receiver), and one
      // reason for the open port, the closed port and the address written in the URL.
      expect(letters!.deadLetters.map((l) => l.hookId).sort()).toEqual([...ids].sort());
      expect(letters!.deadLetters.map((l) => l.attempts)).toEqual([1, 1, 1]);
      const reasons = new Set(letters!.deadLetters.map((l) => l.lastError));
      expect(reasons.size).toBe(1);
      expect([...reasons][0]).toMatch(/^target refused/);
      expect([...reasons][0]).not.toMatch(new RegExp(`${port}|${closed}|127|localhost|::1|ECONN`));
      expect(hits).toBe(before);
    } finally {
      await srv.dispose();
    }
  });
});
