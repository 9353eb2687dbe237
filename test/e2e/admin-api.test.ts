/**
 * The admin API against the real `rcd serve` process (SQLite file store, two worker threads),
 * checked through the delivery API a game client uses: a change answered 2xx is served by the very
 * next delivery request.
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, errorCode, startServer, type ServerProcess } from '../helpers/server-process.js';
import { parseAnswer, parseBundle, type Answer } from '../helpers/answers.js';

const TOKEN = 'test-admin-token';
let srv: ServerProcess;
let admin: string;

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: Answer;
}

async function adm(method: string, path: string, body?: string | object, token: string | null = TOKEN): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const init: RequestInit = { method, headers };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(`${admin}/admin/v1/${path}`, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: parseAnswer(text) };
}

/** One delivery request as a game client makes it (json typed loosely: the tests assert its shape). */
async function get(key: string, id: string, dynamic = false): Promise<Reply & { text: string }> {
  const r = await call(srv.url, `/api/v1/config/${id}${dynamic ? '/dynamic' : ''}`, { key, body: '{"u":"player-1","p":{"tier":"gold"}}' });
  return { status: r.status, headers: r.headers, text: r.text, json: parseAnswer(r.text) };
}

beforeAll(async () => {
  srv = await startServer({ admin: true, args: ['--webhook-allow-private', 'true'] });
  if (srv.adminUrl === null) throw new Error(`no admin listener line in:\n${srv.stdout()}`);
  admin = srv.adminUrl;
});

afterAll(async () => {
  await srv?.dispose();
  // The restart test reuses the first server's directory, which dispose() then leaves in place.
  if (srv !== undefined) rmSync(srv.dir, { recursive: true, force: true });
});

describe('admin API against the server process', () => {
  it('listens on its own port, never on the public one', async () => {
    expect(new URL(admin).port).not.toBe(new URL(srv.url).port);
    const onPublic = await fetch(`${srv.url}/admin/v1/environments`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(onPublic.status).toBe(404);
  });

  it('refuses calls without a token or with a wrong one', async () => {
    for (const token of [null, 'wrong-token', TOKEN.toUpperCase()]) {
      const r = await adm('GET', 'environments', undefined, token);
      expect(r.status).toBe(401);
      expect(r.json.error).toMatchObject({ status: 401, code: 'unauthorized' });
      const w = await adm('PUT', 'environments/intruder', undefined, token);
      expect(w.status).toBe(401);
    }
    expect((await adm('GET', 'environments')).json.environments!.map((e: { id: string }) => e.id)).not.toContain('intruder');
  });

  it('shows a key once; the key works at once and is refused right after revocation', async () => {
    expect((await adm('PUT', 'environments/keys-env')).status).toBe(201);
    await adm('PUT', 'environments/keys-env/content/Cfg', '{"a":1}');
    const created = await adm('POST', 'environments/keys-env/keys');
    expect(created.status).toBe(201);
    const { id, key } = created.json as { id: string; key: string };
    expect((await get(key, 'cfg')).json).toEqual({ a: 1 });

    const listed = await adm('GET', 'environments/keys-env/keys');
    expect(listed.json.keys?.map((k: { id: string }) => k.id)).toEqual([id]);
    expect(JSON.stringify(listed.json)).not.toContain(key);
    expect(JSON.stringify((await adm('GET', 'export')).json)).not.toContain(key);
    expect(JSON.stringify((await adm('GET', 'audit?limit=1000')).json)).not.toContain(key);
    expect(srv.stdout() + srv.stderr()).not.toContain(key);

    expect((await adm('DELETE', `environments/keys-env/keys/${id}`)).status).toBe(200);
    const refused = await get(key, 'cfg');
    expect(refused.status).toBe(401);
    expect(errorCode(refused)).toBe('invalid_api_key');
    expect((await adm('DELETE', 'environments/keys-env/keys/no-such-key')).status).toBe(404);
  });

  it('content edits are served at once; rollback restores an old revision', async () => {
    await adm('PUT', 'environments/content-env');
    const key = (await adm('POST', 'environments/content-env/keys')).json.key as string;
    const missing = await get(key, 'Settings');
    expect(missing.status).toBe(404);

    const r1 = (await adm('PUT', 'environments/content-env/content/Settings', '{\n  // v1\n  "level": 1\n}')).json;
    expect(r1).toMatchObject({ id: 'Settings', revision: 1, changed: true });
    const first = await get(key, 'settings', true);
    expect(first.json).toMatchObject({ data: { level: 1 }, hash: r1.hash });

    const r2 = (await adm('PUT', 'environments/content-env/content/Settings', '{"level":2}')).json;
    expect((await get(key, 'Settings')).json).toEqual({ level: 2 });
    const catalog = await call(srv.url, '/api/v1/env/catalog', { method: 'GET', key });
    expect(catalog.json).toEqual({ catalog: { Settings: { h: r2.hash, d: false } } });

    const rolled = await adm('POST', 'environments/content-env/content/Settings/rollback?to=1');
    expect(rolled.json).toEqual({ id: 'Settings', hash: r1.hash, revision: 3, changed: true, propagation: { seq: expect.any(Number) as unknown, nodes: 1, applied: 1, missed: [] } });
    // One node on this store: the write reached it.
    expect(rolled.headers.get('rcd-propagation')).toBe('1/1');
    expect((await get(key, 'Settings', true)).json).toMatchObject({ data: { level: 1 }, hash: r1.hash });

    const detail = (await adm('GET', 'environments/content-env/content/settings')).json;
    expect(detail.revisions?.map((r: { number: number; hash: string }) => [r.number, r.hash])).toEqual([[1, r1.hash], [2, r2.hash], [3, r1.hash]]);
    expect(detail.revisions?.[2]?.text).toContain('// v1');
    const list = (await adm('GET', 'environments/content-env/content')).json.content;
    expect(list).toEqual([{ id: 'Settings', hash: r1.hash, revisionCount: 3, hasMapping: false, updatedAt: expect.any(String) as string }]);

    expect((await adm('DELETE', 'environments/content-env/content/settings')).status).toBe(200);
    expect((await get(key, 'Settings')).status).toBe(404);
  });

  it('refuses invalid JSONC and invalid mappings with nothing stored; the previous state keeps serving', async () => {
    await adm('PUT', 'environments/refuse-env');
    const key = (await adm('POST', 'environments/refuse-env/keys')).json.key as string;
    const good = (await adm('PUT', 'environments/refuse-env/content/Shop', '{"price":10,"color":"red"}')).json;

    const bad = await adm('PUT', 'environments/refuse-env/content/Shop', '{"price": 11,\n "color": }');
    expect(bad.status).toBe(400);
    expect(bad.json.error?.code).toBe('invalid_content');
    expect(bad.json.error?.message).toMatch(/line 2/);
    // The store's app-version rule, 9-digit parts included: refused by the admin API with one code.
    for (const v of ['1.2.1234567890', '1.2', '01.2.3']) {
      const badVersion = await adm('PUT', `environments/refuse-env/content/Shop?minAppVersion=${v}`, '{"price":12}');
      expect(badVersion.status, v).toBe(400);
      expect(badVersion.json.error?.code, v).toBe('invalid_query');
    }
    const newBad = await adm('PUT', 'environments/refuse-env/content/Other', '// only a comment');
    expect(newBad.json.error?.code).toBe('invalid_content');
    expect((await adm('GET', 'environments/refuse-env/content')).json.content?.map((c: { id: string; revisionCount: number }) => [c.id, c.revisionCount])).toEqual([['Shop', 1]]);
    expect((await get(key, 'Shop', true)).json).toMatchObject({ data: { price: 10, color: 'red' }, hash: good.hash });

    const invalidMappings = [
      { rules: [{ segment: 'x', when: { tier: { $nope: 1 } }, patch: { price: 1 } }] },
      { rules: [{ segment: 'x', patch: { price: 1 }, variants: [{ name: 'A', mod: [0, 999], patch: {} }] }] },
      { rules: [{ segment: 'ab', variants: [{ name: 'A', mod: [0, 600], patch: {} }, { name: 'B', mod: [500, 999], patch: {} }] }] },
      { rules: [{ segment: 'p', patch: [{ op: 'replace', path: '/missing/deep', value: 1 }] }] },
    ];
    for (const m of invalidMappings) {
      const r = await adm('PUT', 'environments/refuse-env/content/Shop/mapping', m);
      expect(r.status, JSON.stringify(m)).toBe(400);
      expect(r.json.error?.code).toBe('invalid_mapping');
    }
    expect((await adm('GET', 'environments/refuse-env/content/Shop')).json.mapping).toBeNull();
    expect((await get(key, 'Shop', true)).json.meta?.seg).toEqual([]);

    const mapping = { rules: [{ segment: 'gold', when: { tier: 'gold' }, patch: { color: 'gold' } }] };
    const ok = await adm('PUT', 'environments/refuse-env/content/Shop/mapping', mapping);
    expect(ok.json).toMatchObject({ id: 'Shop', ruleCount: 1 });
    const mapped = (await get(key, 'Shop', true)).json;
    expect(mapped.data).toEqual({ price: 10, color: 'gold' });
    expect(mapped.meta?.seg).toEqual([{ n: 'gold', v: null }]);
    expect(mapped.hash).toBe(good.hash);
    const catalog = await call(srv.url, '/api/v1/env/catalog', { method: 'GET', key });
    expect(catalog.json).toEqual({ catalog: { Shop: { h: good.hash, d: true } } });

    expect((await adm('DELETE', 'environments/refuse-env/content/Shop/mapping')).status).toBe(200);
    expect((await get(key, 'Shop', true)).json).toMatchObject({ data: { color: 'red' }, meta: { seg: [] } });
  });

  it('sync: content is readable in the target environment only after it is synchronised', async () => {
    await adm('PUT', 'environments/stage');
    await adm('PUT', 'environments/live');
    const stageKey = (await adm('POST', 'environments/stage/keys')).json.key as string;
    const liveKey = (await adm('POST', 'environments/live/keys')).json.key as string;
    await adm('PUT', 'environments/stage/content/Prices', '{"gem":5}');
    await adm('PUT', 'environments/stage/content/Events', '{"xmas":true}');
    await adm('PUT', 'environments/stage/content/Prices/mapping', { rules: [{ segment: 'gold', when: { tier: 'gold' }, patch: { gem: 4 } }] });

    expect((await get(stageKey, 'Prices')).json).toEqual({ gem: 5 });
    expect((await get(liveKey, 'Prices')).status).toBe(404);

    const one = await adm('POST', 'environments/stage/sync', { to: 'live', ids: ['prices'] });
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ from: 'stage', to: 'live', items: [{ id: 'Prices', action: 'created' }] });
    expect((await get(liveKey, 'Prices', true)).json).toMatchObject({ data: { gem: 4 }, meta: { seg: [{ n: 'gold', v: null }] } });
    expect((await get(liveKey, 'Events')).status).toBe(404);

    await adm('PUT', 'environments/stage/content/Prices', '{"gem":6}');
    expect((await get(stageKey, 'Prices')).json).toEqual({ gem: 6 });
    expect((await get(liveKey, 'Prices')).json).toEqual({ gem: 5 });

    const all = await adm('POST', 'environments/stage/sync', { to: 'live' });
    const actions = Object.fromEntries(all.json.items!.map((i: { id: string; action: string }) => [i.id, i.action]));
    expect(actions).toEqual({ Prices: 'updated', Events: 'created' });
    expect((await get(liveKey, 'Prices')).json).toEqual({ gem: 6 });
    expect((await get(liveKey, 'Events')).json).toEqual({ xmas: true });
    // Keys stay per environment.
    expect((await call(srv.url, '/api/v1/env/catalog', { method: 'GET', key: stageKey })).json).toHaveProperty('catalog.Events');
    expect((await adm('POST', 'environments/stage/sync', { to: 'nowhere' })).status).toBe(404);
  });

  it('environments: deletion is refused while content exists unless forced', async () => {
    await adm('PUT', 'environments/doomed');
    const key = (await adm('POST', 'environments/doomed/keys')).json.key as string;
    await adm('PUT', 'environments/doomed/content/X', '{}');
    const refused = await adm('DELETE', 'environments/doomed');
    expect(refused.status).toBe(409);
    expect(refused.json.error?.code).toBe('conflict');
    expect((await get(key, 'X')).status).toBe(200);
    expect((await adm('DELETE', 'environments/doomed?force=true')).status).toBe(200);
    expect((await get(key, 'X')).status).toBe(401);
    expect((await adm('GET', 'environments')).json.environments!.map((e: { id: string }) => e.id)).not.toContain('doomed');
  });

  it('import and export bundles; an invalid bundle changes nothing', async () => {
    const bundle = {
      environments: {
        imported: { keys: ['imported-key-0123456789abcdef'], content: { Welcome: { text: '{"msg":"hi"} // c' } } },
      },
    };
    const first = await adm('POST', 'import', bundle);
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ environmentsCreated: 1, keysAdded: 1, revisionsAdded: 1, mappingsChanged: 0, schedulesAdded: 0, rolloutsAdded: 0, propagation: { seq: expect.any(Number) as unknown, nodes: 1, applied: 1, missed: [] } });
    expect((await get('imported-key-0123456789abcdef', 'welcome')).json).toEqual({ msg: 'hi' });
    expect((await adm('POST', 'import', bundle)).json).toEqual({ environmentsCreated: 0, keysAdded: 0, revisionsAdded: 0, mappingsChanged: 0, schedulesAdded: 0, rolloutsAdded: 0 });

    const broken = await adm('POST', 'import', { environments: { imported: { content: { Welcome: { text: '{"msg":' } } } } });
    expect(broken.status).toBe(400);
    expect(broken.json.error?.code).toBe('invalid_bundle');
    expect((await get('imported-key-0123456789abcdef', 'welcome')).json).toEqual({ msg: 'hi' });

    const exported = parseBundle((await adm('GET', 'export')).text);
    expect(exported.environments.imported?.content?.Welcome).toBeDefined();
    expect(JSON.stringify(exported)).not.toContain('imported-key-0123456789abcdef');
  });

  it('keeps an audit log of every change: who, what, when', async () => {
    await fetch(`${admin}/admin/v1/environments/audited`, { method: 'PUT', headers: { authorization: `Bearer ${TOKEN}`, 'x-rcd-actor': 'cli' } });
    await adm('PUT', 'environments/audited/content/A', '{}');
    const entries = (await adm('GET', 'audit?limit=2')).json.entries;
    expect(entries).toHaveLength(2);
    expect(entries?.[0]).toMatchObject({ action: 'content.put', env: 'audited', target: 'A', actor: expect.stringMatching(/^token:[0-9a-f]{8}$/) as string });
    expect(entries?.[1]).toMatchObject({ action: 'environment.create', env: 'audited', actor: 'cli' });
    expect(Date.parse(entries![0]!.at)).toBeGreaterThanOrEqual(Date.parse(entries![1]!.at));
  });

  it('answers 404, 405 and 413 with the error envelope', async () => {
    expect((await adm('GET', 'nothing-here')).json.error?.code).toBe('not_found');
    const m = await adm('PATCH', 'environments');
    expect(m.status).toBe(405);
    expect(m.headers.get('allow')).toBe('GET');
    const big = await adm('PUT', 'environments/audited/content/Huge', JSON.stringify({ pad: 'x'.repeat(11 * 1024 * 1024) }));
    expect(big.status).toBe(413);
    expect(big.json.error?.code).toBe('payload_too_large');
  });

  it('keeps webhooks and the audit log across a restart', async () => {
    await adm('POST', 'webhooks', { url: 'http://127.0.0.1:9/never', events: ['content.deleted'], secret: 'x' });
    const before = (await adm('GET', 'audit?limit=1000')).json.entries!.length;
    await srv.stop();
    const dir = srv.dir;
    srv = await startServer({ admin: true, dir, args: ['--webhook-allow-private', 'true'] });
    admin = srv.adminUrl!;
    expect((await adm('GET', 'webhooks')).json.webhooks?.map((w: { url: string }) => w.url)).toEqual(['http://127.0.0.1:9/never']);
    expect((await adm('GET', 'audit?limit=1000')).json.entries!.length).toBe(before);
    const stillThere = (await adm('GET', 'environments/stage/content')).json.content?.map((c: { id: string }) => c.id).sort();
    expect(stillThere).toEqual(['Events', 'Prices']);
  });
});
