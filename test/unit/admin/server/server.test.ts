/**
 * The admin server in-process: real HTTP over loopback, the real memory store, the real admin
 * state. The e2e suites (test/e2e/admin-*.test.ts) cover the same API against the server process.
 */
import { Webhook } from 'standardwebhooks';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bearerToken, startAdminServer, type AdminServer } from '../../../../src/admin/server/server.js';
import { openAdminState } from '../../../../src/admin/server/open-state.js';
import type { AdminStateStore } from '../../../../src/admin/server/state.js';
import { openStore } from '../../../../src/store/index.js';
import { RcdError } from '../../../../src/runtime/errors.js';
import type { DirectorySnapshot, Store } from '../../../../src/store/types.js';
import { field, parseAnswer, type Answer } from '../../../helpers/answers.js';

const TOKEN = 'unit-test-admin-token';

interface Reply {
  status: number;
  headers: Headers;
  json: Answer;
}

let store: Store;
let state: AdminStateStore;
let server: AdminServer;
let base: string;
let live: DirectorySnapshot;
let changes: number;
let changeDelayMs: number;
/** When set, publishing a committed change fails with it (a store that failed just after the commit). */
let publishFailure: Error | null;
let logs: string[];

async function start(maxBodyBytes?: number): Promise<void> {
  server = await startAdminServer({
    host: '127.0.0.1',
    port: 0,
    token: TOKEN,
    store,
    state,
    onChange: async () => {
      if (changeDelayMs > 0) await new Promise((r) => setTimeout(r, changeDelayMs));
      if (publishFailure !== null) throw publishFailure;
      live = await store.loadDirectory();
      changes++;
      return null;
    },
    log: (line) => logs.push(line),
    maxBodyBytes,
    // The receivers are on loopback: allowed as --webhook-allow-private allows them.
    webhooks: { retryMinMs: 20, retryMaxMs: 100, allowPrivateTargets: true },
  });
  base = `http://127.0.0.1:${server.port}/admin/v1/`;
}

beforeEach(async () => {
  store = await openStore('memory:');
  state = openAdminState(store.readerUrl);
  live = await store.loadDirectory();
  changes = 0;
  changeDelayMs = 0;
  publishFailure = null;
  logs = [];
  await start();
});

afterEach(async () => {
  await server.close();
  await state.close();
  await store.close();
});

async function admin(method: string, path: string, body?: string | object, headers: Record<string, string> = {}): Promise<Reply> {
  const init: RequestInit = { method, headers: { authorization: `Bearer ${TOKEN}`, ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(base + path, init);
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: parseAnswer(text) };
}

function liveContent(env: string, id: string): DirectorySnapshot['contents'][number] | undefined {
  return live.contents.find((c) => c.envId === env && c.idLower === id.toLowerCase());
}

describe('authentication', () => {
  it('refuses a missing or wrong token with 401 unauthorized', async () => {
    const none = await fetch(base + 'environments');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Bearer');
    expect(await none.json()).toEqual({ error: { status: 401, code: 'unauthorized', message: expect.any(String) as string } });
    for (const auth of ['Bearer wrong', `Bearer ${TOKEN}x`, `Basic ${TOKEN}`, TOKEN]) {
      const res = await fetch(base + 'environments', { headers: { authorization: auth } });
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
    const wrongWrite = await fetch(base + 'environments/dev', { method: 'PUT', headers: { authorization: 'Bearer nope' } });
    expect(wrongWrite.status).toBe(401);
    expect((await admin('GET', 'environments')).json.environments).toEqual([]);
  });

  it('reads the bearer token with a case-insensitive scheme and the token trimmed', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('BEARER   abc  ')).toBe('abc');
    expect(bearerToken(' \tBearer abc\t')).toBe('abc');
    for (const none of [undefined, '', 'Bearer', 'Bearer ', 'Bearerabc', 'Basic abc', 'abc', 'Bearer\tabc']) {
      expect([none, bearerToken(none)]).toEqual([none, null]);
    }
  });

  it('answers unknown paths 404 and wrong methods 405 with Allow', async () => {
    expect((await admin('GET', 'nope')).json.error?.code).toBe('not_found');
    const r = await admin('POST', 'environments');
    expect(r.status).toBe(405);
    expect(r.json.error?.code).toBe('method_not_allowed');
    expect(r.headers.get('allow')).toBe('GET');
  });
});

describe('environments', () => {
  it('creates, lists and deletes; refuses deleting one with content unless forced', async () => {
    const created = await admin('PUT', 'environments/dev');
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ id: 'dev', created: true });
    expect(live.environments).toContain('dev');
    expect((await admin('PUT', 'environments/dev')).json).toEqual({ id: 'dev', created: false });
    expect((await admin('GET', 'environments')).json.environments).toMatchObject([{ id: 'dev', contentCount: 0, keyCount: 0 }]);

    await admin('PUT', 'environments/dev/content/Settings', '{"a":1}');
    const refused = await admin('DELETE', 'environments/dev');
    expect(refused.status).toBe(409);
    expect(refused.json.error?.code).toBe('conflict');
    expect(liveContent('dev', 'settings')).toBeDefined();
    const forced = await admin('DELETE', 'environments/dev?force=true');
    expect(forced.status).toBe(200);
    expect(forced.json).toEqual({ id: 'dev', deleted: true, contentDeleted: 1 });
    expect(live.environments).not.toContain('dev');
    expect((await admin('DELETE', 'environments/dev')).status).toBe(404);
  });
});

describe('keys', () => {
  it('shows a key once, lists ids only, and revocation is live before the answer', async () => {
    await admin('PUT', 'environments/dev');
    const created = await admin('POST', 'environments/dev/keys');
    expect(created.status).toBe(201);
    const { id, key } = created.json as { id: string; key: string };
    expect(typeof id).toBe('string');
    expect(key.length).toBeGreaterThanOrEqual(16);
    expect(live.keys.map((k) => k.keyId)).toContain(id);

    const list = await admin('GET', 'environments/dev/keys');
    expect(list.json.keys).toEqual([{ id, createdAt: expect.any(String) as string, lastUsedAt: null, revokedAt: null }]);
    expect(JSON.stringify(list.json)).not.toContain(key);
    expect(JSON.stringify((await admin('GET', 'audit')).json)).not.toContain(key);

    const revoked = await admin('DELETE', `environments/dev/keys/${id}`);
    expect(revoked.json).toEqual({ id, revoked: true });
    expect(live.keys.map((k) => k.keyId)).not.toContain(id);
    const after = await admin('GET', 'environments/dev/keys');
    expect(after.json.keys?.[0]?.revokedAt).toEqual(expect.any(String));
  });
});

describe('content', () => {
  beforeEach(async () => {
    await admin('PUT', 'environments/dev');
  });

  it('puts revisions, skips unchanged text, and makes each change live before answering', async () => {
    changeDelayMs = 50;
    const first = await admin('PUT', 'environments/dev/content/PlayerSettings', '{\n  // speed\n  "speed": 1\n}');
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ id: 'PlayerSettings', hash: expect.stringMatching(/^[0-9a-f]{32}$/) as string, revision: 1, changed: true });
    expect(liveContent('dev', 'PlayerSettings')?.revisions.at(-1)?.hash).toBe(first.json.hash);
    const before = changes;
    const same = await admin('PUT', 'environments/dev/content/playersettings', '{\n  // speed\n  "speed": 1\n}');
    expect(same.json).toMatchObject({ revision: 1, changed: false });
    expect(changes).toBe(before);

    const v2 = await admin('PUT', 'environments/dev/content/PlayerSettings?minAppVersion=2.0.0', '{"speed":2}');
    expect(v2.json).toMatchObject({ revision: 2, changed: true });
    const detail = (await admin('GET', 'environments/dev/content/PLAYERSETTINGS')).json;
    expect(detail.id).toBe('PlayerSettings');
    expect(detail.revisions?.map((r: { number: number; minAppVersion: string | null }) => [r.number, r.minAppVersion])).toEqual([[1, null], [2, '2.0.0']]);
    expect(detail.revisions?.[0]?.text).toContain('// speed');

    const list = (await admin('GET', 'environments/dev/content')).json.content;
    expect(list).toEqual([{ id: 'PlayerSettings', hash: v2.json.hash, revisionCount: 2, hasMapping: false, updatedAt: expect.any(String) as string }]);
  });

  it('refuses invalid JSONC with line and column and stores nothing', async () => {
    await admin('PUT', 'environments/dev/content/a', '{"ok":true}');
    const count = changes;
    const bad = await admin('PUT', 'environments/dev/content/a', '{\n  "x": 1,\n  "y": \n}');
    expect(bad.status).toBe(400);
    expect(bad.json.error?.code).toBe('invalid_content');
    expect(bad.json.error?.message).toMatch(/line 4/);
    const fresh = await admin('PUT', 'environments/dev/content/b', 'not json');
    expect(fresh.json.error?.code).toBe('invalid_content');
    expect(changes).toBe(count);
    expect((await admin('GET', 'environments/dev/content')).json.content?.map((c: { id: string; revisionCount: number }) => [c.id, c.revisionCount])).toEqual([['a', 1]]);
    expect((await admin('GET', 'environments/dev/content/b')).json.error?.code).toBe('content_not_found');
    expect((await admin('PUT', 'environments/dev/content/a?minAppVersion=1.2', '{}')).json.error?.code).toBe('invalid_query');
  });

  it('rolls back by copying an old revision as the newest', async () => {
    const r1 = (await admin('PUT', 'environments/dev/content/c', '{"v":1}')).json;
    await admin('PUT', 'environments/dev/content/c', '{"v":2}');
    const rolled = await admin('POST', 'environments/dev/content/c/rollback?to=1');
    expect(rolled.json).toEqual({ id: 'c', hash: r1.hash, revision: 3, changed: true });
    expect(liveContent('dev', 'c')?.revisions.at(-1)?.hash).toBe(r1.hash);
    expect((await admin('POST', 'environments/dev/content/c/rollback?to=9')).status).toBe(404);
    expect((await admin('POST', 'environments/dev/content/c/rollback')).json.error?.code).toBe('invalid_query');
  });

  it('deletes content', async () => {
    await admin('PUT', 'environments/dev/content/gone', '{}');
    expect((await admin('DELETE', 'environments/dev/content/GONE')).json).toEqual({ id: 'gone', deleted: true });
    expect(liveContent('dev', 'gone')).toBeUndefined();
    expect((await admin('DELETE', 'environments/dev/content/gone')).status).toBe(404);
  });

  it('stores valid mappings, refuses invalid ones with nothing stored, and removes them', async () => {
    await admin('PUT', 'environments/dev/content/m', '{"color":"red","size":1}');
    const mapping = { rules: [{ segment: 'vip', when: { tier: 'gold' }, patch: { color: 'gold' } }] };
    const ok = await admin('PUT', 'environments/dev/content/m/mapping', mapping);
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ id: 'm', ruleCount: 1 });
    expect(liveContent('dev', 'm')?.mappingRuleCount).toBe(1);
    const mappingId = liveContent('dev', 'm')?.mappingId;

    const bad = await admin('PUT', 'environments/dev/content/m/mapping', { rules: [{ segment: 'x', when: { a: { $bogus: 1 } }, patch: {} }] });
    expect(bad.status).toBe(400);
    expect(bad.json.error?.code).toBe('invalid_mapping');
    const notJson = await admin('PUT', 'environments/dev/content/m/mapping', '{"rules":');
    expect(notJson.json.error?.code).toBe('invalid_json');
    expect(liveContent('dev', 'm')?.mappingId).toBe(mappingId);
    expect((await admin('GET', 'environments/dev/content/m')).json.mapping).toEqual(mapping);

    expect((await admin('DELETE', 'environments/dev/content/m/mapping')).status).toBe(200);
    expect(liveContent('dev', 'm')?.mappingId).toBeNull();
    expect((await admin('GET', 'environments/dev/content/m')).json.mapping).toBeNull();
  });

  it('serialises concurrent writes: every one gets its own revision', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => admin('PUT', 'environments/dev/content/race', JSON.stringify({ i }))),
    );
    expect(results.map((r) => field(r.json.revision, 'revision')).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(liveContent('dev', 'race')?.revisions).toHaveLength(10);
  });
});

describe('sync, import and export', () => {
  it('copies content to another environment only when synced', async () => {
    await admin('PUT', 'environments/dev');
    await admin('PUT', 'environments/prod');
    await admin('PUT', 'environments/dev/content/one', '{"n":1}');
    await admin('PUT', 'environments/dev/content/two', '{"n":2}');
    expect(liveContent('prod', 'one')).toBeUndefined();

    const synced = await admin('POST', 'environments/dev/sync', { to: 'prod', ids: ['ONE'] });
    expect(synced.status).toBe(200);
    expect(synced.json).toMatchObject({ from: 'dev', to: 'prod', items: [{ id: 'one', action: 'created' }] });
    expect(liveContent('prod', 'one')?.revisions.at(-1)?.hash).toBe(liveContent('dev', 'one')?.revisions.at(-1)?.hash);
    expect(liveContent('prod', 'two')).toBeUndefined();

    const all = await admin('POST', 'environments/dev/sync', { to: 'prod' });
    expect(all.json.items?.map((i: { id: string; action: string }) => [i.id, i.action]).sort()).toEqual([['one', 'unchanged'], ['two', 'created']]);
    expect((await admin('POST', 'environments/dev/sync', { ids: ['one'] })).json.error?.code).toBe('invalid_body');
    expect((await admin('POST', 'environments/dev/sync', 'nope')).json.error?.code).toBe('invalid_json');
  });

  it('exports a bundle that imports into an empty store, idempotently', async () => {
    await admin('PUT', 'environments/dev');
    await admin('PUT', 'environments/dev/content/x', '{"x":1}');
    const bundle = (await admin('GET', 'export')).json;

    await server.close();
    await store.close();
    store = await openStore('memory:');
    await start();
    const first = await admin('POST', 'import', bundle);
    expect(first.status).toBe(200);
    expect(first.json).toMatchObject({ environmentsCreated: 1, revisionsAdded: 1 });
    expect(liveContent('dev', 'x')).toBeDefined();
    const again = await admin('POST', 'import', bundle);
    expect(again.json).toMatchObject({ environmentsCreated: 0, revisionsAdded: 0, mappingsChanged: 0 });
    const invalid = await admin('POST', 'import', { environments: { dev: { content: { y: { text: '{' } } } } });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error?.code).toBe('invalid_bundle');
    expect(liveContent('dev', 'y')).toBeUndefined();
  });

  it('refuses bodies over the limit with 413 payload_too_large', async () => {
    await server.close();
    await start(1024);
    await admin('PUT', 'environments/dev');
    const big = JSON.stringify({ pad: 'x'.repeat(2000) });
    const r = await admin('PUT', 'environments/dev/content/big', big);
    expect(r.status).toBe(413);
    expect(r.json.error?.code).toBe('payload_too_large');
    expect(liveContent('dev', 'big')).toBeUndefined();
    expect((await admin('PUT', 'environments/dev/content/small', '{}')).status).toBe(200);
  });
});

describe('audit and webhooks', () => {
  it('records who did what and when, newest first', async () => {
    await admin('PUT', 'environments/dev', undefined, { 'x-rcd-actor': 'cli' });
    await admin('PUT', 'environments/dev/content/a', '{}');
    await admin('PUT', 'environments/dev/content/a', '{}'); // unchanged: not a change
    await admin('PUT', 'environments/dev/content/a', '{'); // refused: not a change
    const entries = (await admin('GET', 'audit')).json.entries;
    expect(entries?.map((e: { action: string }) => e.action)).toEqual(['content.put', 'environment.create']);
    expect(entries?.[1]).toMatchObject({ actor: 'cli', env: 'dev', target: null });
    expect(entries?.[0]).toMatchObject({ actor: expect.stringMatching(/^token:[0-9a-f]{8}$/) as string, env: 'dev', target: 'a', detail: { revision: 1 } });
    expect(entries?.[0]?.tokenId).toBe(entries?.[1]?.tokenId);
    expect((await admin('GET', 'audit?limit=1')).json.entries).toHaveLength(1);
    expect((await admin('GET', `audit?before=${entries?.[0]?.id}`)).json.entries?.map((e: { action: string }) => e.action)).toEqual(['environment.create']);
    expect((await admin('GET', 'audit?limit=0')).json.error?.code).toBe('invalid_query');
  });

  it('audits a committed change whose publication failed, and answers with the failure', async () => {
    await admin('PUT', 'environments/dev');
    publishFailure = new RcdError('store_unavailable', 'the store is unreachable (read ECONNRESET); retrying in the background');
    const put = await admin('PUT', 'environments/dev/content/a', '{"x":1}');
    expect(put.status).toBe(503);
    expect(put.json.error?.code).toBe('store_unavailable');
    publishFailure = null;
    // Committed: the nodes apply it from the change log; its audit entry is there, once.
    expect((await store.loadDirectory()).contents.some((c) => c.envId === 'dev' && c.idLower === 'a')).toBe(true);
    const entries = (await admin('GET', 'audit')).json.entries;
    expect(entries?.map((e: { action: string; target: string | null }) => `${e.action} ${e.target}`)).toEqual(['content.put a', 'environment.create null']);
  });

  it('delivers signed events to a registered receiver without slowing the call', async () => {
    const received: { body: string; headers: Record<string, string> }[] = [];
    let answered = 0;
    const receiver: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ body: Buffer.concat(chunks).toString(), headers: req.headers as Record<string, string> });
        // The first delivery fails: it must be retried.
        res.statusCode = answered++ === 0 ? 500 : 204;
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/rcd`;
      const added = await admin('POST', 'webhooks', { url, events: ['content.updated', 'environment.synced'], secret: 'shh' });
      expect(added.status).toBe(201);
      expect(added.json).toMatchObject({ id: expect.any(String) as string, url, events: ['content.updated', 'environment.synced'], secret: 'shh' });
      const listed = (await admin('GET', 'webhooks')).json.webhooks;
      expect(listed).toEqual([{ id: added.json.id, url, events: ['content.updated', 'environment.synced'], createdAt: expect.any(String) as string }]);

      await admin('PUT', 'environments/dev');
      const put = (await admin('PUT', 'environments/dev/content/Cfg', '{"a":1}')).json;
      await admin('DELETE', 'environments/dev/content/Cfg'); // content.deleted: not subscribed
      const deadline = Date.now() + 5000;
      while (server.webhookStats().delivered < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(received).toHaveLength(2);
      expect(received[0]!.body).toBe(received[1]!.body);
      const body = JSON.parse(received[1]!.body) as unknown;
      expect(body).toEqual({ event: 'content.updated', env: 'dev', id: 'Cfg', hash: put.hash, at: expect.any(String) as string });
      expect(new Webhook(Buffer.from('shh'), { format: 'raw' }).verify(received[1]!.body, received[1]!.headers)).toEqual(body);

      expect((await admin('POST', 'webhooks', { url: 'ftp://x', events: ['content.updated'] })).json.error?.code).toBe('invalid_body');
      expect((await admin('POST', 'webhooks', { url, events: ['content.exploded'] })).json.error?.code).toBe('invalid_body');
      const generated = await admin('POST', 'webhooks', { url, events: ['content.deleted'] });
      // Generated secrets are in the Standard Webhooks form: whsec_ + base64 of 32 random bytes.
      expect(generated.json.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect((await admin('DELETE', `webhooks/${added.json.id}`)).json).toEqual({ id: added.json.id, deleted: true });
      expect((await admin('GET', 'webhooks')).json.webhooks?.map((w: { id: string }) => w.id)).toEqual([generated.json.id]);
      expect((await admin('DELETE', `webhooks/${added.json.id}`)).status).toBe(404);
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });

  it('announces what an import changed: content.updated for new and changed items, mapping.updated for a changed mapping, nothing for the rest', async () => {
    const bodies: string[] = [];
    const receiver: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(Buffer.concat(chunks).toString());
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      await admin('PUT', 'environments/dev');
      await admin('PUT', 'environments/dev/content/Same', '{"s":1}');
      await admin('PUT', 'environments/dev/content/Changed', '{"c":1}');
      await admin('PUT', 'environments/dev/content/Mapped', '{"m":1}');
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/rcd`;
      await admin('POST', 'webhooks', { url, events: ['content.updated', 'mapping.updated'], secret: 's' });
      const bundle = {
        environments: {
          dev: {
            content: {
              // The same text as stored: no new revision, no event.
              SAME: { text: '{"s":1}' },
              changed: { json: { c: 2 } },
              Mapped: { text: '{"m":1}', mapping: { rules: [{ segment: 'all', patch: { m: 2 } }] } },
              Fresh: { json: { f: 1 } },
            },
          },
        },
      };
      expect((await admin('POST', 'import', bundle)).status).toBe(200);
      const deadline = Date.now() + 5000;
      while (server.webhookStats().delivered < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 100));
      const events = bodies
        .map((b) => JSON.parse(b) as { event: string; id: string })
        .map((e) => `${e.event} ${e.id}`)
        .sort();
      expect(events).toEqual(['content.updated Changed', 'content.updated Fresh', 'mapping.updated Mapped']);
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });

  it('answers quickly while a webhook receiver hangs', async () => {
    const hanging: Server = createServer(() => undefined);
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/`;
      await admin('POST', 'webhooks', { url, events: ['content.updated'], secret: 's' });
      await admin('PUT', 'environments/dev');
      const t = Date.now();
      for (let i = 0; i < 5; i++) expect((await admin('PUT', 'environments/dev/content/h', JSON.stringify({ i }))).status).toBe(200);
      expect(Date.now() - t).toBeLessThan(2000);
    } finally {
      hanging.closeAllConnections();
      await new Promise<void>((r) => hanging.close(() => r()));
    }
  });
});
