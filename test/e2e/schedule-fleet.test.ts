/**
 * Scheduled changes on a fleet: real `rcd serve` processes on one real PostgreSQL database, on the
 * real clock. A change is invisible everywhere until its time and visible everywhere within a
 * second after it (content, ETag, catalog tag, change stream); the node applying changes is killed
 * just before one falls due and another applies it, once; the database is down across a due time
 * and the change applies once when it returns; the kill switch is live on every node when it answers.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { call, healthOf, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { createDatabase, startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { until } from '../helpers/until.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const running: ServerProcess[] = [];

afterEach(async () => {
  for (const s of running.splice(0).reverse()) await s.dispose();
});

async function adm<T = unknown>(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, {
    method,
    headers: AUTH,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function fleet(n: number, store: string, args: string[] = []): Promise<ServerProcess[]> {
  const dir = tempDir();
  const nodes: ServerProcess[] = [];
  for (let i = 0; i < n; i++) {
    const node = await startServer({ dir, admin: true, store, metrics: true, args });
    running.push(node);
    nodes.push(node);
  }
  return nodes;
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

interface Schedule {
  id: string;
  status: string;
  at: string;
  lateMs: number | null;
  error: { code: string } | null;
}

/** The environment `live` with a key and the item Shop, written through `a`. */
async function seed(a: ServerProcess): Promise<string> {
  await adm(a, 'PUT', 'environments/live');
  const { key } = await adm<{ key: string }>(a, 'POST', 'environments/live/keys');
  await adm(a, 'PUT', 'environments/live/content/Shop', '{"theme":"default"}');
  return key;
}

/** What a node serves of Shop: its body, ETag, and the catalog's ETag. */
async function observe(node: ServerProcess, key: string): Promise<{ theme: string; etag: string | null; catalog: string | null }> {
  const r = await call(node.url, '/api/v1/config/Shop', { key });
  const c = await call(node.url, '/api/v1/env/catalog', { method: 'GET', key });
  return { theme: (r.json as { theme: string }).theme, etag: r.headers.get('etag'), catalog: c.headers.get('etag') };
}

/** The change stream of one node: each `change` event with the time it arrived. */
function stream(node: ServerProcess, key: string): { events: { at: number; changed: string[] }[]; close: () => void } {
  const events: { at: number; changed: string[] }[] = [];
  const ac = new AbortController();
  void (async () => {
    const res = await fetch(`${node.url}/api/v1/env/events`, { headers: { 'x-api-key': key }, signal: ac.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (!block.includes('event: change')) continue;
        const data = JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as { changed?: string[] };
        events.push({ at: Date.now(), changed: data.changed ?? ['*'] });
      }
    }
  })().catch(() => undefined);
  return { events, close: () => ac.abort() };
}

async function metric(node: ServerProcess, name: string): Promise<number> {
  const text = await (await fetch(node.metricsUrl!)).text();
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m === null ? NaN : Number(m[1]);
}

describe('scheduled changes on a fleet of nodes on one PostgreSQL database', () => {
  let db: { url: string; drop: () => Promise<void> };
  beforeEach(async () => {
    db = await createDatabase();
  });
  afterEach(async () => {
    for (const s of running.splice(0).reverse()) await s.dispose();
    await db.drop();
  });

  it('is invisible on every node before its time and visible on every node within a second after it', async () => {
    const nodes = await fleet(3, db.url);
    const key = await seed(nodes[0]!);
    const before = await Promise.all(nodes.map((n) => observe(n, key)));
    const streams = nodes.map((n) => stream(n, key));
    await new Promise((r) => setTimeout(r, 300));
    // Scheduled through the node that does not hold the lease, 2 s ahead.
    const sch = await adm<Schedule>(nodes[2]!, 'POST', 'environments/live/schedules', { at: isoIn(2000), ops: [{ op: 'content.put', id: 'Shop', json: { theme: 'halloween' } }] });
    const due = Date.parse(sch.at);
    const seenAt = new Map<number, number>();
    const early: string[] = [];
    await until(
      'the change on every node',
      async () => {
        const seen = await Promise.all(nodes.map((n) => observe(n, key)));
        const answered = Date.now();
        seen.forEach((s, i) => {
          const changed = s.theme !== 'default' || s.etag !== before[i]!.etag || s.catalog !== before[i]!.catalog;
          // Answers that all arrived before the due time and show anything new would be early.
          if (changed && answered < due) early.push(`node ${i} at ${due - answered} ms before: ${JSON.stringify(s)}`);
          if (changed && s.theme === 'halloween' && s.etag !== before[i]!.etag && s.catalog !== before[i]!.catalog && !seenAt.has(i)) seenAt.set(i, Date.now());
        });
        return seenAt.size === nodes.length;
      },
      10_000,
    );
    expect(early).toEqual([]);
    for (const [i, at] of seenAt) expect(at - due, `node ${i}`).toBeLessThan(1000);
    // The change stream said nothing before the time, then named the item on every node.
    await until('the stream events', () => streams.every((s) => s.events.some((e) => e.changed.includes('Shop'))), 5000);
    for (const s of streams) {
      expect(s.events.every((e) => e.at >= due)).toBe(true);
      s.close();
    }
    const after = await adm<Schedule>(nodes[0]!, 'GET', `environments/live/schedules/${sch.id}`);
    expect(after.status).toBe('applied');
    expect(after.lateMs).toBeLessThan(1000);
    const audit = await adm<{ entries: { action: string; actor: string; detail: { schedule?: { id: string } } }[] }>(nodes[1]!, 'GET', 'audit?limit=50');
    expect(audit.entries.filter((e) => e.detail?.schedule?.id === sch.id).map((e) => e.action)).toEqual(['content.put']);
  }, 60_000);

  it('the node holding the lease dies a second before a change falls due: another node applies it, once', async () => {
    const nodes = await fleet(3, db.url);
    const key = await seed(nodes[0]!);
    const holder = nodes.findIndex((n) => /this node applies them/.test(n.stdout()));
    expect(holder).toBeGreaterThanOrEqual(0);
    const survivors = nodes.filter((_, i) => i !== holder);
    const sch = await adm<Schedule>(survivors[0]!, 'POST', 'environments/live/schedules', { at: isoIn(2500), ops: [{ op: 'content.put', id: 'Shop', json: { theme: 'winter' } }] });
    await new Promise((r) => setTimeout(r, Date.parse(sch.at) - Date.now() - 1000));
    nodes[holder]!.child.kill('SIGKILL');
    await until('the change on the surviving nodes', async () => (await Promise.all(survivors.map((n) => observe(n, key)))).every((s) => s.theme === 'winter'), 15_000);
    const done = await adm<Schedule>(survivors[1]!, 'GET', `environments/live/schedules/${sch.id}`);
    expect(done.status).toBe('applied');
    // Taken over within the lease's 3 s (and a renewal period), not more.
    expect(done.lateMs).toBeLessThan(5000);
    // Audited once the survivors stopped waiting for the dead node (--propagation-timeout), once.
    let audited = 0;
    await until('the audit entry', async () => {
      const audit = await adm<{ entries: { detail: { schedule?: { id: string } } }[] }>(survivors[0]!, 'GET', 'audit?limit=50');
      audited = audit.entries.filter((e) => e.detail?.schedule?.id === sch.id).length;
      return audited > 0;
    }, 10_000);
    expect(audited).toBe(1);
    const detail = await adm<{ revisions: unknown[] }>(survivors[0]!, 'GET', 'environments/live/content/Shop');
    expect(detail.revisions).toHaveLength(2);
    expect(survivors.some((n) => /this node applies them/.test(n.stdout()))).toBe(true);
  }, 60_000);

  it('the kill switch answers once every node serves the mapping without the rule, and cancels the item\'s pending changes', async () => {
    const nodes = await fleet(2, db.url);
    const key = await seed(nodes[0]!);
    await adm(nodes[0]!, 'PUT', 'environments/live/content/Shop/mapping', { rules: [{ segment: 'everyone', patch: { theme: 'risky' } }, { segment: 'eu', when: { region: 'eu' }, patch: { eu: true } }] });
    const pending = await adm<Schedule>(nodes[0]!, 'POST', 'environments/live/schedules', { at: isoIn(60_000), ops: [{ op: 'content.put', id: 'Shop', json: { theme: 'later' } }] });
    const dyn = async (n: ServerProcess): Promise<{ data: { theme: string; eu?: boolean }; meta: { seg: { n: string }[] } }> =>
      (await call(n.url, '/api/v1/config/Shop/dynamic', { key, body: '{"u":"p1","p":{"region":"eu"}}' })).json as never;
    for (const n of nodes) expect((await dyn(n)).data.theme).toBe('risky');
    const res = await fetch(`${nodes[1]!.adminUrl}/admin/v1/environments/live/content/Shop/kill`, { method: 'POST', headers: AUTH, body: '{"rule":0,"segment":"everyone"}' });
    expect(res.status).toBe(200);
    expect(res.headers.get('rcd-propagation')).toBe('2/2');
    const answer = (await res.json()) as { cancelled: string[] };
    expect(answer.cancelled).toEqual([pending.id]);
    for (const n of nodes) {
      const r = await dyn(n);
      expect(r.data).toEqual({ theme: 'default', eu: true });
      expect(r.meta.seg.map((s) => s.n)).toEqual(['eu']);
    }
    expect((await adm<Schedule>(nodes[0]!, 'GET', `environments/live/schedules/${pending.id}`)).status).toBe('cancelled');
  }, 60_000);
});

describe('scheduled changes across an outage of the database', () => {
  let pg: RunningPostgres;
  let storeUrl: string;
  beforeAll(async () => {
    pg = await startPostgres();
    storeUrl = (await createDatabase(pg.url)).url;
  }, 60_000);
  afterAll(async () => {
    for (const s of running.splice(0).reverse()) await s.dispose();
    await pg.destroy();
  });

  it('a change due while the database is down applies once when it returns, and says how late', async () => {
    const nodes = await fleet(2, storeUrl, ['--propagation-timeout', '5000']);
    const key = await seed(nodes[0]!);
    const sch = await adm<Schedule>(nodes[1]!, 'POST', 'environments/live/schedules', { at: isoIn(2000), ops: [{ op: 'content.put', id: 'Shop', json: { theme: 'spring' } }] });
    // Each node has rendered the item once: through the outage it serves it from its caches.
    for (const n of nodes) expect((await observe(n, key)).theme).toBe('default');
    await new Promise((r) => setTimeout(r, 1000));
    await pg.stop();
    await new Promise((r) => setTimeout(r, Date.parse(sch.at) - Date.now() + 2000));
    // Down across the due time: every node still serves the old state.
    for (const n of nodes) expect((await observe(n, key)).theme).toBe('default');
    await pg.start();
    await until('the change on both nodes', async () => (await Promise.all(nodes.map((n) => observe(n, key)))).every((s) => s.theme === 'spring'), 30_000);
    // A node follows changes on its reader connections; its admin API answers 503 store_unavailable
    // until its own reconnection probe (backing off up to a second) finds the database again.
    await until('both nodes to report the store available', async () => (await Promise.all(nodes.map(healthOf))).every((h) => h.status === 'ok'), 10_000);
    const done = await adm<Schedule>(nodes[0]!, 'GET', `environments/live/schedules/${sch.id}`);
    expect(done.status).toBe('applied');
    expect(done.lateMs).toBeGreaterThanOrEqual(2000);
    // The audit entry is appended once the change is live on the fleet (runWrite waits for the nodes
    // first): a moment after the schedule reads applied.
    type Audit = { entries: { action: string; detail: { schedule?: { id: string; lateMs: number } } }[] };
    const auditOf = async (): Promise<Audit['entries']> => (await adm<Audit>(nodes[0]!, 'GET', 'audit?limit=50')).entries.filter((e) => e.detail?.schedule?.id === sch.id);
    await until('the audit entry of the change', async () => (await auditOf()).length > 0, 10_000);
    const entries = await auditOf();
    expect(entries).toHaveLength(1);
    expect(entries[0]!.detail.schedule!.lateMs).toBe(done.lateMs);
    const detail = await adm<{ revisions: unknown[] }>(nodes[1]!, 'GET', 'environments/live/content/Shop');
    expect(detail.revisions).toHaveLength(2);
    const applied = await Promise.all(nodes.map((n) => metric(n, 'rcd_schedule_applied_total')));
    expect(applied.reduce((a, b) => a + b, 0)).toBe(1);
  }, 90_000);
});
