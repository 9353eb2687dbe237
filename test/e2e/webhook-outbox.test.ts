/**
 * The durable webhook outbox, on both stores (a SQLite file and a PostgreSQL database), with the
 * real server process and a real receiver over HTTP: an event written with its change survives a
 * stop between the change and its delivery and arrives after the restart, signed so that the
 * Standard Webhooks library verifies it; a receiver that keeps failing ends in the dead-letter list
 * the CLI shows, after exactly the configured attempts.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import postgres from 'postgres';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../helpers/postgres.js';
import { BIN, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { until } from '../helpers/until.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const SECRET = 'whsec_' + Buffer.from('outbox-test-key-bytes-0123456789').toString('base64');

interface Hit {
  readonly body: string;
  readonly headers: Record<string, string>;
}

/** A receiver on loopback: `hold` keeps requests open unanswered; otherwise each gets `status`. */
class Receiver {
  readonly hits: Hit[] = [];
  hold = false;
  status = 204;
  private readonly held: ServerResponse[] = [];
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.hits.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers as Record<string, string> });
        if (this.hold) {
          this.held.push(res);
          return;
        }
        res.statusCode = this.status;
        res.end();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  async stop(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

async function admin(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, {
    method,
    headers: AUTH,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

function cli(srv: ServerProcess, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args, '--admin-url', srv.adminUrl!], { env: { ...process.env, RCD_ADMIN_TOKEN: 'test-admin-token' }, cwd: srv.dir }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : ((err as { code?: number }).code ?? 1), stdout, stderr }),
    );
  });
}

interface Backend {
  readonly name: string;
  /** A store URL in `dir` (or a fresh database), the outbox rows of it, and its removal. */
  open(dir: string): Promise<{ store: string | undefined; outboxRows: () => Promise<{ id: string; dead_at: string | null }[]>; drop: () => Promise<void> }>;
}

const BACKENDS: Backend[] = [
  {
    name: 'SQLite file',
    open: (dir) => {
      const require = createRequire(import.meta.url);
      const Database = require('better-sqlite3') as new (f: string, o: { readonly: boolean }) => { prepare(s: string): { all(): unknown[] }; close(): void };
      return Promise.resolve({
        store: undefined,
        outboxRows: () => {
          const db = new Database(join(dir, 'rcd.db'), { readonly: true });
          try {
            return Promise.resolve(db.prepare('SELECT id, dead_at FROM webhook_outbox').all() as { id: string; dead_at: string | null }[]);
          } finally {
            db.close();
          }
        },
        drop: () => Promise.resolve(),
      });
    },
  },
  {
    name: 'PostgreSQL',
    open: async () => {
      const db = await createDatabase();
      const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
      return {
        store: db.url,
        outboxRows: async () => [...(await sql.unsafe<{ id: string; dead_at: string | null }[]>('SELECT id, dead_at FROM webhook_outbox'))],
        drop: async () => {
          await sql.end();
          await db.drop();
        },
      };
    },
  },
];

describe.each(BACKENDS)('webhook outbox ($name)', (backend) => {
  const receiver = new Receiver();
  const dir = tempDir();
  let ctx: Awaited<ReturnType<Backend['open']>>;
  let srv: ServerProcess | null = null;

  beforeAll(async () => {
    await receiver.start();
    ctx = await backend.open(dir);
  });

  afterAll(async () => {
    await srv?.stop();
    await receiver.stop();
    await ctx?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('an event written with its change survives a stop before the receiver accepts, and arrives verified after the restart', async () => {
    const args = ['--webhook-allow-private', 'true', '--webhook-retry-min', '200', '--webhook-retry-max', '1000'];
    srv = await startServer({ admin: true, dir, store: ctx.store, args });
    expect((await admin(srv, 'PUT', 'environments/live')).status).toBe(201);
    const hook = await admin(srv, 'POST', 'webhooks', { url: receiver.url, events: ['content.updated'], secret: SECRET });
    expect(hook.status).toBe(201);

    receiver.hold = true;
    const put = await admin(srv, 'PUT', 'environments/live/content/Store', '{"price": 5}');
    expect(put.status).toBe(200);
    await until('the first attempt reaches the receiver', () => receiver.hits.length === 1, 30_000);
    // The receiver has not answered: the delivery is in the store's outbox, committed with the change.
    const pending = await ctx.outboxRows();
    expect(pending).toEqual([{ id: receiver.hits[0]!.headers['webhook-id'], dead_at: null }]);

    expect(await srv.stop()).toBe(0);
    srv = null;
    // Still there with the server gone.
    expect(await ctx.outboxRows()).toEqual(pending);

    receiver.hold = false;
    const before = receiver.hits.length;
    srv = await startServer({ admin: true, dir, store: ctx.store, args });
    await until('the delivery after the restart', () => receiver.hits.length > before, 30_000);
    const hit = receiver.hits[receiver.hits.length - 1]!;
    // The maintained Standard Webhooks verifier: signature, and a timestamp within its tolerance.
    expect(new Webhook(SECRET).verify(hit.body, hit.headers)).toMatchObject({ event: 'content.updated', env: 'live', id: 'Store', hash: put.json.hash });
    // One delivery, one id across the process boundary: the receiver can drop the repeat.
    expect(hit.headers['webhook-id']).toBe(receiver.hits[0]!.headers['webhook-id']);
    expect(hit.body).toBe(receiver.hits[0]!.body);
    await until('the outbox empties', async () => (await ctx.outboxRows()).length === 0, 30_000);
    const dead = await admin(srv, 'GET', 'webhooks/dead-letters');
    expect(dead.json).toEqual({ pending: 0, dead: 0, deadLetters: [] });
  }, 90_000);

  it('a process killed mid-attempt (SIGKILL) leaves the delivery leased; the next process sends it once the lease ends', async () => {
    await srv?.stop();
    // Lease = the attempt's time limit + 5 s.
    const args = ['--webhook-allow-private', 'true', '--webhook-timeout', '1000', '--webhook-retry-min', '200'];
    srv = await startServer({ admin: true, dir, store: ctx.store, args });
    receiver.hold = true;
    const before = receiver.hits.length;
    const put = await admin(srv, 'PUT', 'environments/live/content/Store', '{"price": 7}');
    expect(put.status).toBe(200);
    await until('the attempt reaches the receiver', () => receiver.hits.length === before + 1, 30_000);
    const first = receiver.hits[before]!;
    srv.child.kill('SIGKILL');
    await srv.stop();
    srv = null;
    expect(await ctx.outboxRows()).toEqual([{ id: first.headers['webhook-id'], dead_at: null }]);

    receiver.hold = false;
    srv = await startServer({ admin: true, dir, store: ctx.store, args });
    await until('the delivery once the lease ended', () => receiver.hits.length > before + 1, 60_000);
    const hit = receiver.hits[receiver.hits.length - 1]!;
    expect(hit.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(new Webhook(SECRET).verify(hit.body, hit.headers)).toMatchObject({ id: 'Store', hash: put.json.hash });
    await until('the outbox empties', async () => (await ctx.outboxRows()).length === 0, 30_000);
  }, 90_000);

  it('a receiver that keeps failing ends in the dead-letter list the CLI shows, after exactly --webhook-attempts attempts', async () => {
    await srv?.stop();
    srv = await startServer({ admin: true, dir, store: ctx.store, args: ['--webhook-allow-private', 'true', '--webhook-attempts', '3', '--webhook-retry-min', '50', '--webhook-retry-max', '100'] });
    receiver.status = 500;
    const before = receiver.hits.length;
    const put = await admin(srv, 'PUT', 'environments/live/content/Store', '{"price": 6}');
    expect(put.status).toBe(200);

    let listed: { pending: number; dead: number; deadLetters: { id: string; hookId: string; event: string; payload: unknown; attempts: number; lastError: string }[] } | null = null;
    await until('the dead letter', async () => {
      const r = await cli(srv!, ['webhook', 'dead-letters', '--json']);
      expect(r.code).toBe(0);
      listed = JSON.parse(r.stdout) as NonNullable<typeof listed>;
      return listed.dead === 1;
    }, 30_000);
    const letters = listed!;
    expect(letters.pending).toBe(0);
    const ours = receiver.hits.slice(before);
    expect(ours).toHaveLength(3);
    expect(letters.deadLetters[0]).toMatchObject({
      id: ours[0]!.headers['webhook-id'],
      event: 'content.updated',
      payload: { event: 'content.updated', env: 'live', id: 'Store', hash: put.json.hash },
      attempts: 3,
      lastError: 'status 500',
    });
    for (const h of ours) expect(new Webhook(SECRET).verify(h.body, h.headers)).toMatchObject({ hash: put.json.hash });
    // The human form names it too.
    const human = await cli(srv, ['webhook', 'dead-letters']);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('0 pending, 1 dead-lettered');
    expect(human.stdout).toContain(letters.deadLetters[0]!.id);
    expect(human.stdout).toContain('status 500');
    // No attempt after the last one, and the row stays a dead letter.
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.hits.length - before).toBe(3);
    expect((await ctx.outboxRows()).filter((r) => r.dead_at !== null)).toHaveLength(1);
  }, 90_000);
});
