/**
 * Several `rcd serve` processes on one SQLite file are nodes of one store: an edit through either
 * is served by both when the admin write answers, the answer says how many nodes applied it, a node
 * that stops heartbeating drops out of the wait, and a node that was stopped catches up.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { BIN, call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const running: ServerProcess[] = [];

afterEach(async () => {
  for (const s of running.splice(0).reverse()) {
    if (s.child.signalCode === 'SIGSTOP') s.child.kill('SIGCONT');
    await s.dispose();
  }
});

interface Answer {
  status: number;
  propagation: string | null;
  json: { hash?: string; propagation?: { nodes: number; applied: number; missed: string[] } };
}

async function adm(srv: ServerProcess, method: string, path: string, body?: string): Promise<Answer> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  const json = (await res.json()) as Answer['json'];
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return { status: res.status, propagation: res.headers.get('rcd-propagation'), json };
}

async function twoNodes(extra: string[] = []): Promise<[ServerProcess, ServerProcess, string]> {
  const dir = tempDir();
  const a = await startServer({ dir, admin: true, args: extra });
  running.push(a);
  const b = await startServer({ dir, admin: true, args: extra });
  running.push(b);
  await adm(a, 'PUT', 'environments/fleet');
  const key = ((await (await fetch(`${a.adminUrl}/admin/v1/environments/fleet/keys`, { method: 'POST', headers: AUTH })).json()) as { key: string }).key;
  return [a, b, key];
}

async function served(srv: ServerProcess, key: string, id: string): Promise<unknown> {
  return (await call(srv.url, `/api/v1/config/${id}`, { key })).json;
}

describe('nodes of one store', () => {
  it('1,000 write-then-read cycles alternating the writing process: both serve every write when it answers', async () => {
    const [a, b, key] = await twoNodes();
    const stale: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const writer = i % 2 === 0 ? a : b;
      const put = await adm(writer, 'PUT', 'environments/fleet/content/Counter', `{"n":${i}}`);
      if (put.propagation !== '2/2') stale.push(`cycle ${i}: propagation ${put.propagation}`);
      const [onA, onB] = await Promise.all([served(a, key, 'counter'), served(b, key, 'COUNTER')]);
      if ((onA as { n?: number }).n !== i || (onB as { n?: number }).n !== i) stale.push(`cycle ${i}: A ${JSON.stringify(onA)} B ${JSON.stringify(onB)}`);
    }
    expect(stale).toEqual([]);
  }, 240_000);

  it('two processes writing at once: every write lands, and both serve the final state', async () => {
    const [a, b, key] = await twoNodes();
    await Promise.all([
      (async () => {
        for (let i = 0; i < 40; i++) await adm(a, 'PUT', `environments/fleet/content/FromA${i % 5}`, `{"i":${i}}`);
      })(),
      (async () => {
        for (let i = 0; i < 40; i++) await adm(b, 'PUT', `environments/fleet/content/FromB${i % 5}`, `{"i":${i}}`);
      })(),
    ]);
    for (const srv of [a, b]) {
      for (let k = 0; k < 5; k++) {
        expect(await served(srv, key, `FromA${k}`)).toEqual({ i: 35 + k });
        expect(await served(srv, key, `FromB${k}`)).toEqual({ i: 35 + k });
      }
    }
  }, 60_000);

  it('an import into the store file by `rcd import --store` is served by running nodes without a restart', async () => {
    const [a, b, key] = await twoNodes();
    const file = `${a.dir}/extra.json`;
    writeFileSync(file, JSON.stringify({ environments: { fleet: { content: { Imported: { json: { from: 'cli' } } } } } }));
    const r = spawnSync(process.execPath, [BIN, 'import', file, '--store', a.storeUrl], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    for (const srv of [a, b]) await expect.poll(() => served(srv, key, 'Imported'), { timeout: 2000 }).toEqual({ from: 'cli' });
  });

  it('a node killed with SIGKILL is waited for at most --propagation-timeout, then drops out once its heartbeat lapses', async () => {
    const [a, b, key] = await twoNodes(['--propagation-timeout', '300']);
    const first = await adm(a, 'PUT', 'environments/fleet/content/Item', '{"v":1}');
    expect(first.json.propagation).toMatchObject({ nodes: 2, applied: 2, missed: [] });
    b.child.kill('SIGKILL');
    await new Promise((r) => b.child.once('exit', r));

    const started = Date.now();
    const during = await adm(a, 'PUT', 'environments/fleet/content/Item', '{"v":2}');
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(during.json.propagation).toMatchObject({ nodes: 2, applied: 1 });
    expect(during.json.propagation?.missed).toHaveLength(1);
    await expect.poll(() => a.stderr()).toMatch(/not applied within 300 ms/);
    expect(await served(a, key, 'Item')).toEqual({ v: 2 });

    // After the liveness bound (5 s without a heartbeat) the dead node no longer counts.
    await new Promise((r) => setTimeout(r, 5_500));
    const after = await adm(a, 'PUT', 'environments/fleet/content/Item', '{"v":3}');
    expect(after.json.propagation).toEqual({ seq: expect.any(Number) as unknown, nodes: 1, applied: 1, missed: [] });
  }, 30_000);

  it('a stopped node catches up when it runs again, and a restarted one starts from the store', async () => {
    const [a, b, key] = await twoNodes(['--propagation-timeout', '200']);
    b.child.kill('SIGSTOP');
    const bundle = { environments: { fleet: { content: Object.fromEntries(Array.from({ length: 1200 }, (_, i) => [`Bulk${i}`, { json: { i } }])) } } };
    const imported = await adm(a, 'POST', 'import', JSON.stringify(bundle));
    expect(imported.json.propagation).toMatchObject({ nodes: 2, applied: 1 });
    await adm(a, 'PUT', 'environments/fleet/content/Bulk7', '{"i":"seven"}');
    b.child.kill('SIGCONT');
    // Caught up: the import's last item and the edit after it, each answered by whichever delivery loop
    // takes the request (every loop applies the same updates, each on its own turn).
    const deadline = Date.now() + 5000;
    const caughtUp = async (): Promise<boolean> =>
      JSON.stringify(await served(b, key, 'Bulk7')) === '{"i":"seven"}' && JSON.stringify(await served(b, key, 'bulk1199')) === '{"i":1199}';
    while (Date.now() < deadline && !(await caughtUp())) await new Promise((r) => setTimeout(r, 20));
    expect(await served(b, key, 'Bulk7')).toEqual({ i: 'seven' });
    expect(await served(b, key, 'bulk1199')).toEqual({ i: 1199 });

    await b.stop();
    await adm(a, 'PUT', 'environments/fleet/content/Bulk8', '{"i":"eight"}');
    const b2 = await startServer({ dir: a.dir, admin: true });
    running.push(b2);
    expect(await served(b2, key, 'Bulk8')).toEqual({ i: 'eight' });
    const both = await adm(b2, 'PUT', 'environments/fleet/content/Bulk9', '{"i":"nine"}');
    expect(both.propagation).toBe('2/2');
    expect(await served(a, key, 'Bulk9')).toEqual({ i: 'nine' });
  }, 30_000);
});
