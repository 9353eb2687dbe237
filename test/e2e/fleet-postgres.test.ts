/**
 * A fleet: three real `rcd serve` processes on one PostgreSQL database. An edit through any node's
 * admin API answers once every node applied it (rcd-propagation 3/3), and all three serve it at
 * that moment; a node that joins later starts from the shared state; the audit log is shared.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { createDatabase } from '../helpers/postgres.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const running: ServerProcess[] = [];
let db: { url: string; drop: () => Promise<void> };

beforeEach(async () => {
  db = await createDatabase();
});
afterEach(async () => {
  for (const s of running.splice(0).reverse()) await s.dispose();
  await db.drop();
});

async function adm(srv: ServerProcess, method: string, path: string, body?: string): Promise<{ propagation: string | null; json: unknown }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  const json: unknown = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return { propagation: res.headers.get('rcd-propagation'), json };
}

async function fleet(n: number): Promise<ServerProcess[]> {
  // One data directory: the nodes share the webhook key file, as docs/fleet.md asks.
  const dir = tempDir();
  const nodes: ServerProcess[] = [];
  for (let i = 0; i < n; i++) {
    const node = await startServer({ dir, admin: true, store: db.url });
    running.push(node);
    nodes.push(node);
  }
  return nodes;
}

describe('a fleet of nodes on one PostgreSQL database', () => {
  it('an edit through any node is served by every node when its admin write answers', async () => {
    const nodes = await fleet(3);
    const [a] = nodes as [ServerProcess];
    await adm(a, 'PUT', 'environments/fleet');
    const key = ((await adm(a, 'POST', 'environments/fleet/keys')).json as { key: string }).key;
    const stale: string[] = [];
    for (let i = 0; i < 60; i++) {
      const writer = nodes[i % 3]!;
      const put = await adm(writer, 'PUT', 'environments/fleet/content/Counter', `{"n":${i}}`);
      if (put.propagation !== '3/3') stale.push(`edit ${i}: propagation ${put.propagation}`);
      const seen = await Promise.all(nodes.map(async (s) => (await call(s.url, '/api/v1/config/counter', { key })).json as { n?: number }));
      seen.forEach((v, j) => {
        if (v.n !== i) stale.push(`edit ${i} through node ${i % 3}: node ${j} served ${JSON.stringify(v)}`);
      });
    }
    expect(stale).toEqual([]);
    // One audit log for the fleet: every node lists every node's writes.
    const audit = (await adm(nodes[2]!, 'GET', 'audit?limit=500')).json as { entries: { action: string }[] };
    expect(audit.entries.filter((e) => e.action === 'content.put')).toHaveLength(60);
  }, 120_000);

  it('a node that joins later serves the shared state at once, and is waited for by writers', async () => {
    const [a] = (await fleet(1)) as [ServerProcess];
    await adm(a, 'PUT', 'environments/fleet');
    const key = ((await adm(a, 'POST', 'environments/fleet/keys')).json as { key: string }).key;
    await adm(a, 'PUT', 'environments/fleet/content/Before', '{"x":1}');
    const late = await startServer({ dir: tempDir(), admin: true, store: db.url });
    running.push(late);
    expect((await call(late.url, '/api/v1/config/before', { key })).json).toEqual({ x: 1 });
    const put = await adm(late, 'PUT', 'environments/fleet/content/After', '{"y":2}');
    expect(put.propagation).toBe('2/2');
    expect((await call(a.url, '/api/v1/config/after', { key })).json).toEqual({ y: 2 });
  }, 60_000);
});
