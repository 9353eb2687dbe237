/**
 * The console's two read-only admin routes against the real server process: the mapping preview
 * answers byte for byte what the delivery API answers the same user context, and a sync plan
 * (dryRun) predicts the real sync's actions while writing nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, errorCode, startServer, type ServerProcess } from '../helpers/server-process.js';
import { userMod, userUid } from '../../src/shared/identity.js';

const TOKEN = 'test-admin-token';
let srv: ServerProcess;
let key: string;

interface Json {
  [k: string]: unknown;
}

async function adm(method: string, path: string, body?: string | object): Promise<{ status: number; json: Json }> {
  const init: RequestInit = { method, headers: { authorization: `Bearer ${TOKEN}` } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, init);
  return { status: res.status, json: (await res.json()) as Json };
}

function userIn(lo: number, hi: number, prefix: string): string {
  for (let i = 0; ; i++) {
    const u = `${prefix}-${i}`;
    const mod = userMod(userUid(u));
    if (mod >= lo && mod <= hi) return u;
  }
}

const MAPPING = {
  rules: [
    { segment: 'gold', when: { tier: 'gold' }, patch: { coins: 500 }, info: 'gold tier' },
    {
      segment: 'theme-test',
      variants: [
        { name: 'dark', mod: [0, 299], patch: { theme: 'dark' } },
        { name: 'blue', mod: [500, 999], patch: [{ op: 'replace', path: '/theme', value: 'blue' }] },
      ],
    },
    { segment: 'new-app', appVersion: '>=2.0.0', patch: { banner: 'v2' } },
  ],
};

beforeAll(async () => {
  srv = await startServer({ admin: true });
  expect((await adm('PUT', 'environments/staging')).status).toBe(201);
  expect((await adm('PUT', 'environments/prod')).status).toBe(201);
  key = (await adm('POST', 'environments/staging/keys')).json.key as string;
  await adm('PUT', 'environments/staging/content/Shop', '{ // first\n "theme": "light", "coins": 10 }');
  await adm('PUT', 'environments/staging/content/Shop?minAppVersion=3.0.0', '{ "theme": "light", "coins": 20 }');
  expect((await adm('PUT', 'environments/staging/content/Shop/mapping', MAPPING)).status).toBe(200);
});

afterAll(async () => {
  await srv?.dispose();
});

describe('POST /environments/:env/content/:id/preview', () => {
  const contexts = [
    { u: userIn(0, 299, 'a'), p: { tier: 'gold' }, v: '2.1.0' },
    { u: userIn(500, 999, 'b'), p: {}, v: '3.0.0' },
    { u: userIn(300, 499, 'c'), p: { tier: 'silver' } },
    { u: userIn(500, 999, 'd'), p: { tier: 'gold' }, v: '1.0.0' },
    {},
  ];

  it('answers exactly what the delivery API answers the same context', async () => {
    for (const ctx of contexts) {
      const preview = await adm('POST', 'environments/staging/content/shop/preview', ctx);
      expect(preview.status).toBe(200);
      const delivered = await call(srv.url, '/api/v1/config/Shop/dynamic', { key, body: JSON.stringify(ctx) });
      expect(delivered.status).toBe(200);
      expect(preview.json.answerText).toBe(delivered.text);
      expect(preview.json.answer).toEqual(JSON.parse(delivered.text));
    }
  });

  it('names the user mod, the revision and which rule chose which variant', async () => {
    const u = userIn(0, 299, 'x');
    const r = await adm('POST', 'environments/staging/content/Shop/preview', { u, p: { tier: 'gold' }, v: '2.0.0' });
    expect(r.json.mod).toBe(userMod(userUid(u)));
    expect(r.json.uid).toBe(userUid(u));
    expect(r.json.revision).toBe(1);
    expect(r.json.rules).toEqual([
      { index: 0, segment: 'gold', applied: true, variant: null, disabled: false },
      { index: 1, segment: 'theme-test', applied: true, variant: 'dark', disabled: false },
      { index: 2, segment: 'new-app', applied: true, variant: null, disabled: false },
    ]);
    const outside = await adm('POST', 'environments/staging/content/Shop/preview', { u: userIn(300, 499, 'y') });
    expect((outside.json.rules as { applied: boolean }[]).map((x) => x.applied)).toEqual([false, false, false]);
    expect(outside.json.seg).toEqual([]);
  });

  it('refuses what delivery refuses, with the same codes', async () => {
    expect(errorCode(toReply(await adm('POST', 'environments/staging/content/Shop/preview', { p: [] })))).toBe('invalid_body');
    expect(errorCode(toReply(await adm('POST', 'environments/staging/content/Shop/preview', { v: '1.2' })))).toBe('invalid_body');
    expect(errorCode(toReply(await adm('POST', 'environments/staging/content/Shop/preview', 'nope')))).toBe('invalid_json');
    expect(errorCode(toReply(await adm('POST', 'environments/staging/content/Nope/preview', {})))).toBe('content_not_found');
    const old = await adm('PUT', 'environments/staging/content/Future?minAppVersion=9.0.0', '{}');
    expect(old.status).toBe(200);
    const tooOld = await adm('POST', 'environments/staging/content/Future/preview', { v: '1.0.0' });
    expect(tooOld.status).toBe(404);
    const delivered = await call(srv.url, '/api/v1/config/Future/dynamic', { key, body: '{"v":"1.0.0"}' });
    expect(errorCode(toReply(tooOld))).toBe(errorCode(delivered));
  });

  it('is a read: nothing is audited', async () => {
    const before = (await adm('GET', 'audit?limit=1')).json.entries as { id: number }[];
    await adm('POST', 'environments/staging/content/Shop/preview', { u: 'z' });
    expect((await adm('GET', 'audit?limit=1')).json.entries).toEqual(before);
  });
});

describe('POST /environments/:from/sync with dryRun', () => {
  it('predicts each item the sync then reports, shows both sides, and writes nothing', async () => {
    const plan = await adm('POST', 'environments/staging/sync', { to: 'prod', ids: ['Shop'], dryRun: true });
    expect(plan.status).toBe(200);
    expect(plan.json.dryRun).toBe(true);
    const [item] = plan.json.items as { id: string; action: string; from: { text: string; mapping: unknown }; to: unknown }[];
    expect(item?.action).toBe('created');
    expect(item?.to).toBeNull();
    expect(item?.from.text).toBe('{ "theme": "light", "coins": 20 }');
    expect(item?.from.mapping).toEqual(MAPPING);
    // Nothing written: prod is still empty and the audit log has no sync.
    expect((await adm('GET', 'environments/prod/content')).json.content).toEqual([]);
    const audit = (await adm('GET', 'audit')).json.entries as { action: string }[];
    expect(audit.some((e) => e.action === 'environment.sync')).toBe(false);

    const real = await adm('POST', 'environments/staging/sync', { to: 'prod', ids: ['Shop'] });
    expect((real.json.items as { action: string }[]).map((i) => i.action)).toEqual(['created']);
    const again = await adm('POST', 'environments/staging/sync', { to: 'prod', dryRun: true });
    const actions = Object.fromEntries((again.json.items as { id: string; action: string }[]).map((i) => [i.id, i.action]));
    expect(actions).toEqual({ Future: 'created', Shop: 'unchanged' });

    await adm('PUT', 'environments/staging/content/Shop', '{ "theme": "light", "coins": 30 }');
    await adm('DELETE', 'environments/staging/content/Shop/mapping');
    const changed = await adm('POST', 'environments/staging/sync', { to: 'prod', ids: ['shop'], dryRun: true });
    const [upd] = changed.json.items as { id: string; action: string; to: { text: string; mapping: unknown } }[];
    expect(upd?.action).toBe('updated');
    expect(upd?.to.text).toBe('{ "theme": "light", "coins": 20 }');
    expect(upd?.to.mapping).toEqual(MAPPING);
    const done = await adm('POST', 'environments/staging/sync', { to: 'prod', ids: ['shop'] });
    expect((done.json.items as { action: string }[])[0]?.action).toBe('updated');
  });

  it('refuses unknown ids, environments and a non-boolean dryRun as the sync does', async () => {
    expect(errorCode(toReply(await adm('POST', 'environments/staging/sync', { to: 'prod', ids: ['Missing'], dryRun: true })))).toBe('content_not_found');
    expect(errorCode(toReply(await adm('POST', 'environments/staging/sync', { to: 'nowhere', dryRun: true })))).toBe('not_found');
    expect(errorCode(toReply(await adm('POST', 'environments/staging/sync', { to: 'prod', dryRun: 'yes' })))).toBe('invalid_body');
  });
});

function toReply(r: { status: number; json: Json }): { status: number; headers: Headers; text: string; json: unknown } {
  return { status: r.status, headers: new Headers(), text: '', json: r.json };
}
