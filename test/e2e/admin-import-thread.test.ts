/**
 * Admin imports over 64 KiB are parsed and checked in a thread of their own at a lower CPU priority
 * than delivery (src/control/import-pool.ts), against the real `rcd serve` process: such a bundle is
 * imported whole and served at once, refused with the same codes and problem lists as a small one
 * (nothing written), the thread really runs at --import-nice, and a single write sent while a big
 * bundle is being checked does not wait for it.
 */
import { getPriority } from 'node:os';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';
import { parseAnswer, type Answer } from '../helpers/answers.js';
import { nices } from '../helpers/thread-nice.js';

const TOKEN = 'test-admin-token';
const NICE = 7;
const KEY = 'import-thread-key-0001';
let srv: ServerProcess;
let admin: string;

interface Reply {
  status: number;
  json: Answer;
}

async function adm(method: string, path: string, body?: string): Promise<Reply> {
  const res = await fetch(`${admin}/admin/v1/${path}`, { method, headers: { authorization: `Bearer ${TOKEN}` }, body });
  return { status: res.status, json: parseAnswer(await res.text()) };
}

/** `count` small items named `${prefix}00000`...: ~100 bytes each, so 2,000 make a body over 64 KiB. */
function items(prefix: string, count: number): Record<string, { json: unknown }> {
  const content: Record<string, { json: unknown }> = {};
  for (let i = 0; i < count; i++) content[`${prefix}${String(i).padStart(5, '0')}`] = { json: { index: i, name: `${prefix}-${i}`, enabled: i % 2 === 0 } };
  return content;
}

/** The nice value of each thread of a process (Linux /proc): field 19 of its stat line. */
beforeAll(async () => {
  srv = await startServer({ admin: true, args: ['--import-nice', String(NICE)] });
  if (srv.adminUrl === null) throw new Error(`no admin listener line in:\n${srv.stdout()}`);
  admin = srv.adminUrl;
  expect((await adm('POST', 'import', JSON.stringify({ environments: { other: { keys: ['owned-by-other-0001'] } } }))).status).toBe(200);
});

afterAll(async () => {
  await srv?.dispose();
});

describe('admin imports in the import thread', () => {
  it('imports a bundle over 64 KiB whole, serves it at once, from a thread at --import-nice', async () => {
    const body = JSON.stringify({ environments: { big: { keys: [KEY], content: items('Item', 2000) } } });
    expect(body.length).toBeGreaterThan(64 * 1024);
    const r = await adm('POST', 'import', body);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ environmentsCreated: 1, keysAdded: 1, revisionsAdded: 2000, mappingsChanged: 0 });
    const served = await call(srv.url, '/api/v1/config/Item01999', { key: KEY, body: '{"u":"player-1"}' });
    expect(served.status).toBe(200);
    expect(served.json).toEqual({ index: 1999, name: 'Item-1999', enabled: false });
    // The same bundle again: idempotent through the thread too.
    expect((await adm('POST', 'import', body)).json).toEqual({ environmentsCreated: 0, keysAdded: 0, revisionsAdded: 0, mappingsChanged: 0, schedulesAdded: 0, rolloutsAdded: 0 });

    const pid = srv.child.pid as number;
    // The process's own nice value: the test's, which the server inherits (its delivery loops run above it).
    const base = getPriority(0);
    expect([...nices(pid).values()]).toContain(Math.min(19, base + NICE));
    expect(srv.stdout()).toContain(`admin imports are parsed and checked in a thread of their own at nice ${Math.min(19, base + NICE)}`);
  });

  it('refuses a big bundle with the same codes and problems as a small one, in bundle order, writing nothing', async () => {
    const content = items('Bad', 2000);
    content.Bad00005 = { text: '{"a":' } as unknown as { json: unknown };
    const body = JSON.stringify({ environments: { refused: { keys: ['short', 'owned-by-other-0001'], content } } });
    const r = await adm('POST', 'import', body);
    expect(r.status).toBe(400);
    expect(r.json.error?.code).toBe('invalid_bundle');
    const problems = r.json.error?.details as { path: string; reason: string }[];
    // The key's owner is checked in the control thread, the rest in the import thread: one list, in bundle order.
    expect(problems.map((p) => p.path)).toEqual([
      '/environments/refused/keys/0',
      '/environments/refused/keys/1',
      '/environments/refused/content/Bad00005/text',
    ]);
    expect(problems[1]?.reason).toContain('already belongs to environment "other"');
    expect((await adm('GET', 'environments')).json.environments!.map((e) => e.id)).not.toContain('refused');

    const notJson = await adm('POST', 'import', `{"environments": ${' '.repeat(70_000)}`);
    expect(notJson.status).toBe(400);
    expect(notJson.json.error?.code).toBe('invalid_json');
    const notUtf8 = await fetch(`${admin}/admin/v1/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: Buffer.concat([Buffer.from('{"note":"'), Buffer.alloc(70_000, 0xff), Buffer.from('"}')]),
    });
    expect(notUtf8.status).toBe(400);
    expect(parseAnswer(await notUtf8.text()).error?.code).toBe('invalid_json');
  });

  it('refuses imports beyond the 4 being checked with 503 overloaded and Retry-After, and writes the others', async () => {
    const body = JSON.stringify({ environments: { many: { content: items('Many', 10_000) } } });
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => fetch(`${admin}/admin/v1/import`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body })),
    );
    const refused = replies.filter((r) => r.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    expect(replies.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(4);
    expect(refused.length + replies.filter((r) => r.status === 200).length).toBe(8);
    for (const r of refused) {
      expect(r.headers.get('retry-after')).toBe('1');
      expect(parseAnswer(await r.text()).error?.code).toBe('overloaded');
    }
    expect((await adm('POST', 'import', body)).json).toEqual({ environmentsCreated: 0, keysAdded: 0, revisionsAdded: 0, mappingsChanged: 0, schedulesAdded: 0, rolloutsAdded: 0 });
  });

  it('a single write sent while a big bundle is being checked answers before the import does', async () => {
    // ~6 MiB: hundreds of ms of checking at nice +7 on any machine, against a few ms for one PUT.
    const body = JSON.stringify({ environments: { big: { content: items('Release', 60_000) } } });
    expect((await adm('PUT', 'environments/big/content/Banner', '{"v":0}')).status).toBe(200);
    const order: string[] = [];
    const importing = adm('POST', 'import', body).then((r) => {
      order.push('import');
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const put = await adm('PUT', 'environments/big/content/Banner', '{"v":1}');
    order.push('put');
    expect(put.status).toBe(200);
    expect((await importing).status).toBe(200);
    expect(order).toEqual(['put', 'import']);
    const served = await call(srv.url, '/api/v1/config/Banner', { key: KEY, body: '{"u":"player-1"}' });
    expect(served.json).toEqual({ v: 1 });
  });
});

// Last in the file: it stops the file's server, whose store holds no environment `late` before it.
describe('stopping during a big import', () => {
  it('SIGTERM while a bundle is checked in the import thread ends the process cleanly, with nothing half-written', async () => {
    const body = JSON.stringify({ environments: { late: { content: items('Late', 60_000) } } });
    const importing = fetch(`${admin}/admin/v1/import`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body }).then(
      (r) => r.status,
      () => 0,
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    const code = await srv.stop();
    expect(code).toBe(0);
    const status = await importing;
    // Answered before the stop completed (200), or cut with the admin listener (0): never an abort.
    expect([0, 200]).toContain(status);
    expect(srv.stderr()).not.toMatch(/Assertion|SIGABRT|core dumped/);
    // One transaction: every item of the bundle, or none of them.
    const db = new Database(srv.storeUrl.slice('sqlite:'.length), { readonly: true });
    try {
      const { n } = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM contents WHERE env_id = 'late'").get() as { n: number };
      expect(status === 200 ? [60_000] : [0, 60_000]).toContain(n);
    } finally {
      db.close();
    }
  });
});
