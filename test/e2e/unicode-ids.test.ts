/**
 * Content ids under the one rule (docs/api.md, "Content ids": a canonical caseless match, key
 * NFC(toCasefold(NFD(id)))) through the real server: delivery (single and combine), the admin API,
 * sync, bundles, and the upgrade of a store written with the former toLowerCase keys.
 */
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { readRows, writeStoreV1 } from '../helpers/store-v1.js';
import { parseAnswer, parseBundle, type Answer } from '../helpers/answers.js';

const TOKEN = 'test-admin-token';
const PROD_KEY = 'key-unicode-prod';
const DEV_KEY = 'key-unicode-dev';
const BODY = '{"u":"player-1"}';

/** Every spelling of the item created as `Straße`. */
const STRASSE_SPELLINGS = ['Straße', 'STRASSE', 'strasse', 'STRAẞE', 'straẞe', 'Strasse'];
/** The item created as NFC `Crème` (è = U+00E8), in NFD (e + U+0300) and in capitals. */
const CREME_SPELLINGS = ['Cr\u00e8me', 'Cre\u0300me', 'CRE\u0300ME', 'CR\u00c8ME'];

let srv: ServerProcess;
let admin: string;

interface Reply {
  status: number;
  json: Answer;
}

async function adm(method: string, path: string, body?: string | object): Promise<Reply & { text: string }> {
  const init: RequestInit = { method, headers: { authorization: `Bearer ${TOKEN}` } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(`${admin}/admin/v1/${path}`, init);
  const text = await res.text();
  return { status: res.status, text, json: parseAnswer(text) };
}

function content(env: string, id: string): string {
  return `environments/${env}/content/${encodeURIComponent(id)}`;
}

async function deliver(id: string, key = PROD_KEY, dynamic = false): Promise<Reply> {
  const r = await call(srv.url, `/api/v1/config/${encodeURIComponent(id)}${dynamic ? '/dynamic' : ''}`, { key, body: BODY });
  return { status: r.status, json: parseAnswer(r.text) };
}

async function combine(ids: readonly string[], dynamic = false): Promise<{ status: number; json: Readonly<Record<string, Answer>>; missing: string | null }> {
  const q = `c=${encodeURIComponent(JSON.stringify(ids))}${dynamic ? '&dynamic=true' : ''}`;
  const r = await call(srv.url, `/api/v1/combine?${q}`, { key: PROD_KEY, body: BODY });
  return { status: r.status, json: JSON.parse(r.text) as Record<string, Answer>, missing: r.headers.get('x-missing-content') };
}

beforeAll(async () => {
  srv = await startServer({
    admin: true,
    bundle: { environments: { prod: { keys: [PROD_KEY] }, dev: { keys: [DEV_KEY] } } },
  });
  if (srv.adminUrl === null) throw new Error(`no admin listener line in:\n${srv.stdout()}`);
  admin = srv.adminUrl;
  expect((await adm('PUT', content('prod', 'Straße'), '{"street":"main"}')).status).toBe(200);
  expect((await adm('PUT', content('prod', 'Cr\u00e8me'), '{"dessert":true}')).status).toBe(200);
  expect((await adm('PUT', content('prod', 'Cafe\u0301'), '{"created":"nfd"}')).status).toBe(200);
});

afterAll(async () => {
  await srv?.dispose();
});

describe('delivery finds an item under every spelling of its id', () => {
  it('single requests, plain and dynamic', async () => {
    for (const id of STRASSE_SPELLINGS) {
      expect([id, await deliver(id)]).toEqual([id, { status: 200, json: { street: 'main' } }]);
      const dyn = await deliver(id, PROD_KEY, true);
      expect([id, dyn.status, dyn.json?.data]).toEqual([id, 200, { street: 'main' }]);
    }
    for (const id of CREME_SPELLINGS) expect([id, await deliver(id)]).toEqual([id, { status: 200, json: { dessert: true } }]);
    // Created in NFD, asked for in NFC.
    expect(await deliver('CAF\u00c9')).toEqual({ status: 200, json: { created: 'nfd' } });
  });

  it('ids that are not the same id stay apart', async () => {
    for (const id of ['Strase', 'Strasze', 'Creme', 'Café2']) {
      const r = await deliver(id);
      expect([id, r.status, r.json?.error?.code]).toEqual([id, 404, 'content_not_found']);
    }
  });

  it('combine: every spelling is an entry of its own, keyed as written, resolved under the rule', async () => {
    const ids = [...STRASSE_SPELLINGS, ...CREME_SPELLINGS, 'CAF\u00c9'];
    const r = await combine(ids);
    expect(r.status).toBe(200);
    expect(r.missing).toBeNull();
    expect(Object.keys(r.json)).toEqual(ids);
    for (const id of STRASSE_SPELLINGS) expect(r.json[id]).toEqual({ street: 'main' });
    for (const id of CREME_SPELLINGS) expect(r.json[id]).toEqual({ dessert: true });
    expect(r.json['CAF\u00c9']).toEqual({ created: 'nfd' });

    const dyn = await combine(['STRAẞE', 'Cre\u0300me', 'Strase'], true);
    expect(dyn.status).toBe(200);
    expect(dyn.json['STRAẞE']?.data).toEqual({ street: 'main' });
    expect(dyn.json['Cre\u0300me']?.data).toEqual({ dessert: true });
    expect(dyn.missing).toBe('Strase');
  });
});

describe('the admin API uses the same rule', () => {
  it('finds the item under every spelling and answers with the spelling it was created with', async () => {
    for (const id of STRASSE_SPELLINGS) {
      const r = await adm('GET', content('prod', id));
      expect([id, r.status, r.json?.id]).toEqual([id, 200, 'Straße']);
    }
    for (const id of CREME_SPELLINGS) expect((await adm('GET', content('prod', id))).json.id).toBe('Cr\u00e8me');
  });

  it('a PUT under another spelling adds a revision to the same item; the catalog lists it once', async () => {
    const put = await adm('PUT', content('prod', 'STRASSE'), '{"street":"high"}');
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ id: 'Straße', revision: 2, changed: true });
    expect(await deliver('straẞe')).toEqual({ status: 200, json: { street: 'high' } });
    const list = await adm('GET', 'environments/prod/content');
    expect(list.json.content?.map((c: { id: string }) => c.id).filter((id: string) => /stra/i.test(id))).toEqual(['Straße']);
    const catalog = await call(srv.url, '/api/v1/env/catalog', { method: 'GET', key: PROD_KEY });
    expect(Object.keys((catalog.json as { catalog: object }).catalog).sort()).toEqual(['Cafe\u0301', 'Cr\u00e8me', 'Straße']);
  });

  it('mapping, rollback and sync take any spelling', async () => {
    const mapping = { rules: [{ segment: 'all', when: {}, patch: { street: 'mapped' } }] };
    expect((await adm('PUT', `${content('prod', 'strasse')}/mapping`, mapping)).status).toBe(200);
    expect((await deliver('STRAẞE', PROD_KEY, true)).json.data).toEqual({ street: 'mapped' });
    expect((await adm('DELETE', `${content('prod', 'STRAẞE')}/mapping`)).status).toBe(200);
    const back = await adm('POST', `${content('prod', 'STRASSE')}/rollback?to=1`);
    expect(back.json).toMatchObject({ id: 'Straße', revision: 3 });
    expect(await deliver('Strasse')).toEqual({ status: 200, json: { street: 'main' } });

    const sync = await adm('POST', 'environments/prod/sync', { to: 'dev', ids: ['STRASSE', 'strasse', 'CRE\u0300ME'] });
    expect(sync.status).toBe(200);
    expect(sync.json.items?.map((i: { id: string; action: string }) => [i.id, i.action])).toEqual([
      ['Straße', 'created'],
      ['Cr\u00e8me', 'created'],
    ]);
    expect(await deliver('STRAẞE', DEV_KEY)).toEqual({ status: 200, json: { street: 'main' } });
    expect(await deliver('Cre\u0300me', DEV_KEY)).toEqual({ status: 200, json: { dessert: true } });
  });

  it('a DELETE under another spelling removes the item', async () => {
    expect((await adm('PUT', content('dev', 'Σίσυφος'), '{"x":1}')).status).toBe(200);
    expect((await deliver('ΣΊΣΥΦΟΣ', DEV_KEY)).status).toBe(200);
    // Non-final σ at the end: toLowerCase alone keeps it apart from ς.
    const del = await adm('DELETE', content('dev', 'σίσυφοσ'));
    expect(del).toMatchObject({ status: 200, json: { id: 'Σίσυφος', deleted: true } });
    const r = await deliver('Σίσυφος', DEV_KEY);
    expect(r.json?.error?.code).toBe('content_not_found');
  });
});

describe('bundles', () => {
  it('refuses a bundle with two ids of one environment that are the same id (invalid_bundle), writing nothing', async () => {
    const bundle = {
      environments: {
        fresh: {
          content: {
            'Straße': { json: { a: 1 } },
            'STRASSE': { json: { b: 2 } },
            'Caf\u00e9': { json: { c: 3 } },
            'Cafe\u0301': { json: { d: 4 } },
            'Unique': { json: { e: 5 } },
          },
        },
      },
    };
    const r = await adm('POST', 'import', bundle);
    expect(r.status).toBe(400);
    expect(r.json.error?.code).toBe('invalid_bundle');
    expect((r.json.error?.details as { path: string }[] | undefined)?.map((p) => p.path)).toEqual([
      '/environments/fresh/content/STRASSE',
      '/environments/fresh/content/Cafe\u0301',
    ]);
    expect((await adm('GET', 'environments/fresh/content')).status).toBe(404);
  });

  it('an import under another spelling updates the existing item, and export lists it once', async () => {
    const r = await adm('POST', 'import', { environments: { prod: { content: { STRASSE: { json: { street: 'imported' } } } } } });
    expect(r.status).toBe(200);
    expect(r.json.revisionsAdded).toBe(1);
    expect(await deliver('straße')).toEqual({ status: 200, json: { street: 'imported' } });
    const exported = await adm('GET', 'export');
    expect(Object.keys(parseBundle(exported.text).environments.prod?.content ?? {}).sort()).toEqual(['Cafe\u0301', 'Cr\u00e8me', 'Straße']);
  });
});

describe('a store written with the former toLowerCase keys', () => {
  it('is upgraded at start: the old item is delivered under every spelling', async () => {
    const dir = tempDir();
    try {
      writeStoreV1(join(dir, 'rcd.db'), [{ env: 'prod', id: 'Straße', text: '{"old":true}' }], { prod: PROD_KEY });
      const old = await startServer({ dir });
      try {
        for (const id of STRASSE_SPELLINGS) {
          const r = await call(old.url, `/api/v1/config/${encodeURIComponent(id)}`, { key: PROD_KEY, body: BODY });
          expect([id, r.status, r.json]).toEqual([id, 200, { old: true }]);
        }
      } finally {
        await old.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is refused at start when two of its ids became one: exit 1, the ids named, the file untouched', async () => {
    const dir = tempDir();
    try {
      writeStoreV1(join(dir, 'rcd.db'), [
        { env: 'prod', id: 'STRASSE', text: '{"a":1}' },
        { env: 'prod', id: 'Straße', text: '{"b":2}' },
      ], { prod: PROD_KEY });
      let failure = '';
      try {
        const started = await startServer({ dir });
        await started.stop();
      } catch (err) {
        failure = (err as Error).message;
      }
      expect(failure).toMatch(/server exited with 1 before listening/);
      expect(failure).toContain('content_id_conflict');
      expect(failure).toContain('"STRASSE", "Straße"');
      expect(failure).not.toMatch(/\n\s+at /); // one clear message, no stack trace
      expect(readRows<{ version: number }>(join(dir, 'rcd.db'), 'SELECT version FROM schema_version')).toEqual([{ version: 1 }]);
      expect(readRows<{ id_lower: string }>(join(dir, 'rcd.db'), 'SELECT id_lower FROM contents ORDER BY content_pk')).toEqual([
        { id_lower: 'strasse' },
        { id_lower: 'straße' },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
