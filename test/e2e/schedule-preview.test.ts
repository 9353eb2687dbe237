/**
 * A preview of an item as it will be (`preview?at=`) is a read: on a real `rcd serve`, on a SQLite
 * file and on PostgreSQL, it answers while another connection holds the store's write lock, so it
 * takes none; on PostgreSQL, while a preview is held in the middle of its snapshot, an ordinary
 * write commits, a due change applies, and one preview more than --preview-concurrency answers
 * 503 overloaded at once. Scheduling with thousands of pending changes on the item still refuses
 * what the write would refuse at its time.
 */
import { createRequire } from 'node:module';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { parseAnswer, type Answer } from '../helpers/answers.js';
import { createDatabase } from '../helpers/postgres.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';
import { until } from '../helpers/until.js';
import { WRITE_LOCK } from '../../src/store/postgres/schema.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const running: ServerProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const s of running.splice(0).reverse()) await s.dispose();
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Reply {
  readonly status: number;
  readonly json: Answer & { readonly answer?: { readonly data?: unknown }; readonly status?: string };
}

async function adm(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<Reply> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, json: parseAnswer(await res.text()) };
}

async function ok(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<Reply['json']> {
  const r = await adm(srv, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

type Kind = 'sqlite' | 'postgres';

async function serve(kind: Kind, args: string[] = []): Promise<{ srv: ServerProcess; storeUrl: string }> {
  let store: string | undefined;
  if (kind === 'postgres') {
    const db = await createDatabase();
    cleanups.push(() => db.drop());
    store = db.url;
  }
  const srv = await startServer({ admin: true, args: ['--store-busy-timeout', '3000', ...args], ...(store === undefined ? {} : { store }) });
  running.push(srv);
  return { srv, storeUrl: srv.storeUrl };
}

/** An environment, an item with a mapping, and `changes` pending changes of `ops` content puts each on it, due in an hour. */
async function seed(srv: ServerProcess, changes: number, ops: number): Promise<string> {
  await ok(srv, 'PUT', 'environments/live');
  await ok(srv, 'PUT', 'environments/live/content/Game', '{"level":0,"color":"green"}');
  await ok(srv, 'PUT', 'environments/live/content/Other', '{"n":0}');
  await ok(srv, 'PUT', 'environments/live/content/Game/mapping', { rules: [{ segment: 'vip', when: { vip: true }, patch: { color: 'gold' } }] });
  for (let c = 0; c < changes; c++) {
    const list = Array.from({ length: ops }, (_, i) => ({ op: 'content.put', id: 'Game', json: { level: c * ops + i + 1, color: 'green' } }));
    await ok(srv, 'POST', 'environments/live/schedules', { at: isoIn(3_600_000 + c * 1000), ops: list });
  }
  return `environments/live/content/Game/preview?at=${encodeURIComponent(isoIn(7_200_000))}`;
}

/** Holds the store's write lock from a connection of the test's own until `release`. */
async function holdWriteLock(kind: Kind, storeUrl: string): Promise<() => Promise<void>> {
  if (kind === 'sqlite') {
    const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => { exec(sql: string): void; close(): void };
    const db = new Database(storeUrl.replace(/^sqlite:/, ''));
    db.exec('BEGIN IMMEDIATE');
    return () => {
      db.exec('ROLLBACK');
      db.close();
      return Promise.resolve();
    };
  }
  const sql = postgres(storeUrl, { max: 1, onnotice: () => undefined });
  const conn = await sql.reserve();
  await conn.unsafe('SELECT pg_advisory_lock($1)', [WRITE_LOCK]);
  return async () => {
    await conn.unsafe('SELECT pg_advisory_unlock($1)', [WRITE_LOCK]);
    conn.release();
    await sql.end({ timeout: 1 });
  };
}

describe.each(['sqlite', 'postgres'] as const)('a preview at a time on %s', (kind) => {
  it('takes no write lock: it answers while another connection holds the store\'s, and keeps nothing', async () => {
    const { srv, storeUrl } = await serve(kind);
    const path = await seed(srv, 3, 200);
    const release = await holdWriteLock(kind, storeUrl);
    let answer: Reply;
    try {
    answer = await adm(srv, 'POST', path, { u: 'p1', p: { vip: true } });
      // The lock is really held: a write waits for it, then answers store_busy.
      const write = await adm(srv, 'PUT', 'environments/live/content/Other', '{"n":1}');
      expect(write.json.error?.code).toBe('store_busy');
    } finally {
      await release();
    }
    expect(answer.status).toBe(200);
    expect(answer.json.answer?.data).toEqual({ level: 600, color: 'gold' });
    const now = await ok(srv, 'GET', 'environments/live/content/Game');
    expect(now.revisions).toHaveLength(1);
  }, 60_000);

  it('bounds what one preview replays: preview_too_large past --preview-max-ops, an earlier time still answers', async () => {
    const { srv } = await serve(kind, ['--preview-max-ops', '250']);
    const path = await seed(srv, 2, 200);
    const refused = await adm(srv, 'POST', path, { u: 'p1' });
    expect(refused.status).toBe(409);
    expect(refused.json.error?.code).toBe('preview_too_large');
    const earlier = await adm(srv, 'POST', `environments/live/content/Game/preview?at=${encodeURIComponent(isoIn(3_600_500))}`, { u: 'p1' });
    expect(earlier.status).toBe(200);
    expect(earlier.json.answer?.data).toEqual({ level: 200, color: 'green' });
  });

  it('refuses at scheduling what the write would refuse at its time, with thousands of changes pending on the item', async () => {
    const { srv } = await serve(kind);
    await ok(srv, 'PUT', 'environments/live');
    await ok(srv, 'PUT', 'environments/live/content/Game', '{"level":0}');
    const start = Date.now() + 3_600_000;
    // 2,000 pending puts (revisions 2..2001 at their times), then the mapping removed, then 500 puts more.
    const schedules = [
      ...Array.from({ length: 2000 }, (_, i) => ({ env: 'live', at: new Date(start + i * 1000).toISOString(), ops: [{ op: 'content.put', id: 'Game', json: { level: i + 1 } }] })),
      { env: 'live', at: new Date(start + 2000 * 1000).toISOString(), ops: [{ op: 'content.delete', id: 'Game' }] },
      ...Array.from({ length: 500 }, (_, i) => ({ env: 'live', at: new Date(start + (2001 + i) * 1000).toISOString(), ops: [{ op: 'content.put', id: 'Game', json: { level: i + 1 } }] })),
    ];
    expect((await ok(srv, 'POST', 'import', { environments: {}, schedules })).schedulesAdded).toBe(2501);
    const at = (s: number): string => new Date(start + s * 1000 + 500).toISOString();
    const create = (s: number, ops: unknown[]): Promise<Reply> => adm(srv, 'POST', 'environments/live/schedules', { at: at(s), ops });
    // Pinned revisions count the pending puts before it.
    expect((await create(1500, [{ op: 'content.put', id: 'Game', json: { x: 1 }, baseRevision: 1502 }])).status).toBe(201);
    expect((await create(1500, [{ op: 'content.put', id: 'Game', json: { x: 1 }, baseRevision: 1501 }])).json.error?.code).toBe('base_revision_changed');
    // A rollback to a revision only the pending puts before it create.
    expect((await create(1000, [{ op: 'content.rollback', id: 'Game', to: 900 }])).status).toBe(201);
    expect((await create(10, [{ op: 'content.rollback', id: 'Game', to: 900 }])).json.error?.code).toBe('not_found');
    // After the pending delete, the item is a new one: a rollback and a mapping of the old one are refused.
    expect((await create(2000, [{ op: 'content.rollback', id: 'Game', to: 5 }])).json.error?.code).toBe('content_not_found');
    expect((await create(2003, [{ op: 'content.rollback', id: 'Game', to: 3 }])).status).toBe(201);
    expect((await create(2003, [{ op: 'content.rollback', id: 'Game', to: 4 }])).json.error?.code).toBe('not_found');
    expect((await create(2501, [{ op: 'content.put', id: 'Game', json: { y: 1 }, baseRevision: 500 }])).status).toBe(201);
    // A plain put is accepted at any time, as the write would be.
    expect((await create(2000, [{ op: 'content.put', id: 'Game', json: { z: 1 } }])).status).toBe(201);
  }, 180_000);
});

describe('a preview held in the middle of its snapshot (PostgreSQL)', () => {
  it('holds up no writer: a write commits and a due change applies meanwhile, and one preview more answers 503 overloaded at once', async () => {
    const { srv, storeUrl } = await serve('postgres', ['--preview-concurrency', '1']);
    const path = await seed(srv, 2, 100);
    const due = await ok(srv, 'POST', 'environments/live/schedules', { at: isoIn(3000), ops: [{ op: 'content.put', id: 'Other', json: { n: 'due' } }] });
    // The preview's first read is of schedule_items, which nothing below writes: held there.
    const sql = postgres(storeUrl, { max: 2, onnotice: () => undefined });
    cleanups.push(() => sql.end({ timeout: 1 }));
    const holder = await sql.reserve();
    await holder.unsafe('BEGIN');
    await holder.unsafe('LOCK TABLE schedule_items IN ACCESS EXCLUSIVE MODE');
    const held = adm(srv, 'POST', path, { u: 'p1' });
    try {
      await until('the preview waits on its snapshot read', async () => {
        const rows = await sql.unsafe<{ n: number }[]>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%schedule_items%' AND pid <> pg_backend_pid()",
        );
        return rows[0]!.n === 1;
      }, 20_000);
      const second = await adm(srv, 'POST', path, { u: 'p1' });
      expect(second.status).toBe(503);
      expect(second.json.error?.code).toBe('overloaded');
      expect((await adm(srv, 'PUT', 'environments/live/content/Other', '{"n":1}')).status).toBe(200);
      await until('the due change applied', async () => (await ok(srv, 'GET', `environments/live/schedules/${due.id}`)).status === 'applied', 20_000);
      expect(await Promise.race([held.then(() => 'answered'), Promise.resolve('waiting')])).toBe('waiting');
    } finally {
      await holder.unsafe('COMMIT');
      holder.release();
    }
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.json.answer?.data).toEqual({ level: 200, color: 'green' });
  });
});
