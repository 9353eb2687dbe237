/**
 * Hostile: a write raced against the revocation of its token. The request's head (and so its token)
 * arrives, the body is held back on a raw socket, the token is revoked, then the body is sent: the
 * write must be refused with the code of a revoked token (401 unauthorized) and leave nothing
 * written: no revision, no pending scheduled change under the revoked token's id, no audit entry.
 * On a SQLite file and on PostgreSQL, the revocation made through the same node and through another
 * node of the store (two processes on the file, two nodes of a fleet), where the writer's own write
 * queue does not see it.
 */
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../helpers/postgres.js';
import { responsesIn } from '../helpers/raw.js';
import { startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { field, parseAnswer, type Answer } from '../helpers/answers.js';

const BOOTSTRAP = 'test-admin-token';
/** Long enough for the server to have read the head and checked the token before it is revoked. */
const HEAD_SETTLES_MS = 400;

interface Reply {
  status: number;
  json: Answer;
}

async function admin(srv: ServerProcess, method: string, path: string, body?: string, token = BOOTSTRAP): Promise<Reply> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: { authorization: `Bearer ${token}` }, body });
  const text = await res.text();
  return { status: res.status, json: parseAnswer(text) };
}

/** A request whose head is sent now and whose body is sent by `finish`, which resolves with the answer. */
async function heldWrite(srv: ServerProcess, method: string, path: string, token: string, body: string): Promise<{ finish(): Promise<Reply> }> {
  const url = new URL(`${srv.adminUrl}/admin/v1/${path}`);
  const socket: Socket = connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const received: Buffer[] = [];
  socket.on('data', (d: Buffer) => received.push(d));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    `${method} ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`,
  );
  await new Promise((r) => setTimeout(r, HEAD_SETTLES_MS));
  return {
    async finish(): Promise<Reply> {
      socket.write(body);
      await closed;
      const [answer] = responsesIn(Buffer.concat(received));
      if (answer === undefined) throw new Error(`no answer to the held ${method} ${path}`);
      return { status: answer.status, json: parseAnswer(answer.body.toString('utf8')) };
    },
  };
}

function inAnHour(): string {
  return new Date(Date.now() + 3_600_000).toISOString();
}

interface Backend {
  readonly name: string;
  /** Two nodes of one store. */
  nodes(): Promise<{ a: ServerProcess; b: ServerProcess; cleanup: () => Promise<void> }>;
}

const BACKENDS: Backend[] = [
  {
    name: 'SQLite file',
    async nodes() {
      const dir = tempDir();
      const a = await startServer({ dir, admin: true });
      const b = await startServer({ dir, admin: true });
      return { a, b, cleanup: async () => { await b.dispose(); await a.dispose(); } };
    },
  },
  {
    name: 'PostgreSQL',
    async nodes() {
      const db = await createDatabase();
      const dir = tempDir();
      const a = await startServer({ dir, admin: true, store: db.url });
      const b = await startServer({ dir, admin: true, store: db.url });
      return { a, b, cleanup: async () => { await b.dispose(); await a.dispose(); await db.drop(); } };
    },
  },
];

describe.each(BACKENDS)('a write raced against its token\'s revocation ($name)', (backend) => {
  let a: ServerProcess;
  let b: ServerProcess;
  let cleanup: () => Promise<void>;
  let tokens = 0;

  beforeAll(async () => {
    ({ a, b, cleanup } = await backend.nodes());
    expect((await admin(a, 'PUT', 'environments/live')).status).toBe(201);
    expect((await admin(a, 'PUT', 'environments/live/content/x', '{"v":1}')).status).toBe(200);
  }, 60_000);
  afterAll(async () => cleanup());

  async function editor(): Promise<{ name: string; id: string; token: string }> {
    const name = `editor-${++tokens}`;
    const r = await admin(a, 'POST', 'tokens', JSON.stringify({ name, role: 'editor', environments: ['live'] }));
    expect(r.status).toBe(201);
    return { name, id: field(r.json.id, 'id'), token: (r.json as { token: string }).token };
  }

  async function revisions(): Promise<number> {
    return field((await admin(a, 'GET', 'environments/live/content/x')).json.revisions, 'revisions').length;
  }

  async function openSchedulesOf(tokenId: string): Promise<unknown[]> {
    // A token's id is not in the schedule view; its audit entries are, and a change it made would be listed pending.
    const list = await admin(a, 'GET', 'environments/live/schedules?status=pending,paused');
    const audit = await admin(a, 'GET', 'audit?limit=1000');
    const byToken = field(audit.json.entries, 'entries').filter((e) => e.tokenId === tokenId && e.action !== 'token.create');
    return [...(list.json as { schedules: unknown[] }).schedules, ...byToken];
  }

  for (const via of ['the same node', 'another node'] as const) {
    it(`a content write whose body arrives after the token was revoked through ${via} is refused and writes nothing`, async () => {
      const t = await editor();
      const before = await revisions();
      const held = await heldWrite(a, 'PUT', 'environments/live/content/x', t.token, '{"v":"from a revoked token"}');
      expect((await admin(via === 'the same node' ? a : b, 'DELETE', `tokens/${t.name}`)).status).toBe(200);
      const r = await held.finish();
      expect(r.status).toBe(401);
      expect(r.json.error?.code).toBe('unauthorized');
      expect(await revisions()).toBe(before);
      expect(await openSchedulesOf(t.id)).toEqual([]);
    }, 30_000);

    it(`a scheduled change whose body arrives after the token was revoked through ${via} is refused and nothing is pending`, async () => {
      const t = await editor();
      const body = JSON.stringify({ at: inAnHour(), ops: [{ op: 'content.put', id: 'x', json: { v: 'a year later' } }] });
      const held = await heldWrite(a, 'POST', 'environments/live/schedules', t.token, body);
      expect((await admin(via === 'the same node' ? a : b, 'DELETE', `tokens/${t.name}`)).status).toBe(200);
      const r = await held.finish();
      expect(r.status).toBe(401);
      expect(r.json.error?.code).toBe('unauthorized');
      expect(await openSchedulesOf(t.id)).toEqual([]);
    }, 30_000);
  }

  it('a token created by an admin token revoked while its body was held back is not created', async () => {
    const r0 = await admin(a, 'POST', 'tokens', JSON.stringify({ name: 'admin-1', role: 'admin', environments: '*' }));
    const t = { name: 'admin-1', token: (r0.json as { token: string }).token };
    const held = await heldWrite(a, 'POST', 'tokens', t.token, JSON.stringify({ name: 'persist', role: 'admin', environments: '*' }));
    expect((await admin(b, 'DELETE', `tokens/${t.name}`)).status).toBe(200);
    const r = await held.finish();
    expect(r.status).toBe(401);
    expect(r.json.error?.code).toBe('unauthorized');
    const list = await admin(a, 'GET', 'tokens');
    expect((list.json as { tokens: { name: string }[] }).tokens.map((x) => x.name)).not.toContain('persist');
  }, 30_000);

  it('a write whose token stays live is made as before', async () => {
    const t = await editor();
    const before = await revisions();
    const held = await heldWrite(a, 'PUT', 'environments/live/content/x', t.token, `{"v":${before + 1}}`);
    const r = await held.finish();
    expect(r.status).toBe(200);
    expect(await revisions()).toBe(before + 1);
  }, 30_000);
});
