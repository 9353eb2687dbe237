/**
 * The OpenAPI documents, served by the admin listener of the real server: both pass an OpenAPI 3.1
 * validator; every endpoint's real answers (successes, 304s and every documented error code but the
 * three that need a broken store, see UNPROVOKED) match the document; a client generated from the
 * delivery document compiles and talks to the server; the reference page and its files are served
 * from the admin listener (openapi-page.test.ts renders it in Chromium, in the slow part).
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { rawCall, type RawReply } from '../helpers/http-raw.js';
import { ROOT, startServer, type ServerProcess } from '../helpers/server-process.js';
import { KeyCreateBody, SyncBody, TokenBody, WebhookBody } from '../../src/openapi/schemas.js';
import { ADMIN_ROUTES } from '../../src/admin/server/handlers.js';

const KEY = 'openapi-key-1';
const OTHER_KEY = 'openapi-key-2';
const AUTH = { authorization: 'Bearer test-admin-token' };
const BUNDLE = {
  environments: {
    live: {
      keys: [KEY],
      content: {
        Settings: { json: { difficulty: 'normal' } },
        Promo: { json: { banner: 'none' }, mapping: { rules: [{ segment: 'vip', when: { vip: true }, patch: { banner: 'gold' } }] } },
        Split: { json: { a: 0 }, mapping: { rules: [{ segment: 'ab', variants: [{ name: 'A', mod: [0, 499], patch: { a: 1 } }, { name: 'B', mod: [500, 999], patch: { a: 2 } }] }] } },
        ...Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`Many${i}`, { json: { i, blob: 'y'.repeat(20_000) } }])),
      },
    },
    other: { keys: [OTHER_KEY], content: { Old: { json: { a: 1 } } } },
  },
};

/**
 * Documented codes no request can provoke on a healthy server that has started; failures.test.ts and
 * store-faults.test.ts cover the first three, readiness.test.ts `starting`.
 */
const UNPROVOKED = new Set(['internal', 'store_busy', 'store_unavailable', 'starting']);

type Doc = { paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }>; 'x-error-codes'?: string[] }> }>> };

interface Observed {
  doc: 'delivery' | 'admin';
  method: string;
  template: string;
  status: number;
  code?: string;
}

let srv: ServerProcess;
/** --max-streams 0, --max-pending 1: the overload and stream-limit answers. */
let tight: ServerProcess;
const docs: Record<'delivery' | 'admin', Doc> = {} as Record<'delivery' | 'admin', Doc>;
const raw: Record<'delivery' | 'admin', unknown> = {} as Record<'delivery' | 'admin', unknown>;
const observed: Observed[] = [];

beforeAll(async () => {
  srv = await startServer({ admin: true, bundle: BUNDLE, args: ['--max-body', '2000', '--stream-jitter-ms', '0', '--schedule-max-pending', '6', '--preview-max-ops', '1', '--admin-max-streams', '1'] });
  tight = await startServer({ bundle: BUNDLE, args: ['--max-streams', '0', '--max-pending', '1', '--max-combine-ids', '1', '--threads', '1'] });
  for (const name of ['delivery', 'admin'] as const) {
    // No token: the reference is public on the admin listener.
    const res = await fetch(`${srv.adminUrl}/openapi/${name}.json`);
    expect(res.status).toBe(200);
    raw[name] = await res.json();
    docs[name] = (await SwaggerParser.dereference(structuredClone(raw[name]) as never)) as unknown as Doc;
  }
});

afterAll(async () => {
  await srv?.dispose();
  await tight?.dispose();
});

/** The document's path template a concrete path belongs to. */
function templateOf(doc: Doc, path: string): string {
  for (const t of Object.keys(doc.paths)) {
    const re = new RegExp('^' + t.replace(/\{[^}]+\}/g, '[^/]+') + '$');
    if (re.test(path)) return t;
  }
  throw new Error(`no documented path for ${path}`);
}

/** Checks one real answer against the document and records it. */
async function check(docName: 'delivery' | 'admin', method: string, res: Response, path: string): Promise<void> {
  const doc = docs[docName];
  const template = templateOf(doc, path);
  const op = doc.paths[template]![method.toLowerCase()];
  expect(op, `${method} ${template} is documented`).toBeDefined();
  const documented = op!.responses[String(res.status)];
  const text = res.status === 304 || (res.headers.get('content-type') ?? '').startsWith('text/event-stream') ? '' : await res.text();
  expect(documented, `${method} ${path} answered ${res.status}, not documented: ${text.slice(0, 200)}`).toBeDefined();
  let code: string | undefined;
  const media = documented!.content?.['application/json'];
  if (media !== undefined) {
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body: unknown = JSON.parse(text);
    const result = z.fromJSONSchema(media.schema as never).safeParse(body);
    expect(result.success, `${method} ${path} ${res.status}: ${JSON.stringify(result.error?.issues ?? []).slice(0, 500)}`).toBe(true);
    code = (body as { error?: { code?: string } }).error?.code;
    if (code !== undefined) expect(documented!['x-error-codes'], `${method} ${template} documents ${code}`).toContain(code);
  } else if (documented!.content?.['text/event-stream'] !== undefined) {
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  } else {
    expect(text).toBe('');
  }
  observed.push({ doc: docName, method, template, status: res.status, code });
}

async function delivery(method: string, path: string, opts: { key?: string | null; body?: string; headers?: Record<string, string>; base?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
  if (opts.key !== null) headers['x-api-key'] = opts.key ?? KEY;
  const res = await fetch((opts.base ?? srv.url) + path, { method, headers, body: method === 'GET' ? undefined : (opts.body ?? '{"u":"a","p":{"vip":true}}') });
  await check('delivery', method, res, path.split('?')[0]!);
  return res;
}

async function admin(method: string, path: string, body?: string | Buffer, headers: Record<string, string> = AUTH): Promise<Response> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers, body });
  const clone = res.clone();
  await check('admin', method, res, `/admin/v1/${path.split('?')[0]!}`);
  return clone;
}

describe('OpenAPI documents', () => {
  it('every admin route of the router is documented, with the 403 codes its role and scope allow', () => {
    for (const route of ADMIN_ROUTES) {
      const template = '/admin/v1/' + route.pattern.replace(/:([A-Za-z]+)/g, '{$1}');
      const op = docs.admin.paths[template]?.[route.method.toLowerCase()];
      expect(op, `${route.method} ${template}`).toBeDefined();
      const codes = op!.responses['403']?.['x-error-codes'] ?? [];
      expect(codes.includes('forbidden_role'), `${route.method} ${template} forbidden_role`).toBe(route.role !== 'read');
      expect(codes.includes('forbidden_scope'), `${route.method} ${template} forbidden_scope`).toBe(route.scope !== 'own');
    }
  });

  it('both pass OpenAPI 3.1 validation', async () => {
    for (const name of ['delivery', 'admin'] as const) {
      const api = (await SwaggerParser.validate(structuredClone(raw[name]) as never)) as { openapi: string };
      expect(api.openapi).toBe('3.1.0');
    }
  });

  it('real answers of every delivery endpoint, and every documented error, match the delivery document', async () => {
    const tag = (await delivery('POST', '/api/v1/config/Promo/dynamic')).headers.get('etag')!;
    await delivery('POST', '/api/v1/config/Promo/dynamic', { headers: { 'if-none-match': tag } });
    await delivery('POST', '/api/v1/config/Promo/dynamic?responseType=serialized');
    const plain = (await delivery('POST', '/api/v1/config/Settings')).headers.get('etag')!;
    await delivery('POST', '/api/v1/config/Settings', { headers: { 'if-none-match': plain } });
    const c = `/api/v1/combine?c=${encodeURIComponent('["Settings","Promo","Nope"]')}&dynamic=true`;
    const ctag = (await delivery('POST', c)).headers.get('etag')!;
    await delivery('POST', c, { headers: { 'if-none-match': ctag } });
    const ktag = (await delivery('GET', '/api/v1/env/catalog')).headers.get('etag')!;
    await delivery('GET', '/api/v1/env/catalog', { headers: { 'if-none-match': ktag } });
    await delivery('POST', '/api/v1/env/events/token');
    const abort = new AbortController();
    const stream = await fetch(`${srv.url}/api/v1/env/events`, { headers: { 'x-api-key': KEY }, signal: abort.signal });
    await check('delivery', 'GET', stream, '/api/v1/env/events');
    abort.abort();
    const health = await fetch(`${srv.url}/healthz`);
    await check('delivery', 'GET', health, '/healthz');

    await delivery('POST', '/api/v1/config/Settings', { key: null });
    await delivery('POST', '/api/v1/config/Settings', { key: 'not-a-key-at-all' });
    await delivery('POST', '/api/v1/config/Settings', { headers: { 'content-type': 'text/plain' } });
    await delivery('POST', '/api/v1/config/Settings', { body: '{' });
    await delivery('POST', '/api/v1/config/Settings', { body: '{"p":[]}' });
    await delivery('POST', '/api/v1/config/Settings', { body: JSON.stringify({ u: 'x'.repeat(3000) }) });
    await delivery('POST', '/api/v1/config/Settings?responseType=serialized');
    await delivery('POST', '/api/v1/config/Nope');
    await delivery('GET', '/api/v1/env/events?token=forged.1.abc', { key: null });
    await delivery('GET', '/api/v1/env/events', { base: tight.url });
    const burst = await Promise.all(
      Array.from({ length: 150 }, (_, i) => fetch(`${tight.url}/api/v1/config/Many${i}`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: '{}' })),
    );
    const refused = burst.find((r) => r.status === 503);
    expect(refused).toBeDefined();
    await check('delivery', 'POST', refused!, '/api/v1/config/Many0');
    await Promise.all(burst.filter((r) => r !== refused).map((r) => r.arrayBuffer()));

    // OpenFeature (OFREP): successes, 304s and the OFREP error bodies.
    const ctx = JSON.stringify({ context: { targetingKey: 'a', vip: true } });
    const otag = (await delivery('POST', '/ofrep/v1/evaluate/flags/Promo', { body: ctx })).headers.get('etag')!;
    await delivery('POST', '/ofrep/v1/evaluate/flags/Promo', { body: ctx, headers: { 'if-none-match': otag } });
    const btag = (await delivery('POST', '/ofrep/v1/evaluate/flags', { body: ctx, key: OTHER_KEY })).headers.get('etag')!;
    await delivery('POST', '/ofrep/v1/evaluate/flags', { body: ctx, key: OTHER_KEY, headers: { 'if-none-match': btag } });
    await delivery('POST', '/ofrep/v1/evaluate/flags', { body: ctx });
    await delivery('POST', '/ofrep/v1/evaluate/flags/Split', { body: '{"context":{}}' });
    await delivery('POST', '/ofrep/v1/evaluate/flags/Nope', { body: ctx });
    await delivery('POST', '/ofrep/v1/evaluate/flags/Promo', { body: ctx, key: null });
    await delivery('POST', '/ofrep/v1/evaluate/flags/Promo', { body: ctx, key: 'not-a-key-at-all' });
    await delivery('POST', '/ofrep/v1/evaluate/flags', { body: ctx, headers: { 'content-type': 'text/plain' } });
    await delivery('POST', '/ofrep/v1/evaluate/flags/Promo', { body: '{"context":' });
    await delivery('POST', '/ofrep/v1/evaluate/flags', { body: '{"context":{"appVersion":"1"}}', key: OTHER_KEY });
    await delivery('POST', '/ofrep/v1/evaluate/flags/Promo', { body: JSON.stringify({ context: { targetingKey: 'x'.repeat(3000) } }) });
    const ofrepBurst = await Promise.all(
      Array.from({ length: 150 }, (_, i) => fetch(`${tight.url}/ofrep/v1/evaluate/flags/Many${i}`, { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: ctx })),
    );
    const limited = ofrepBurst.find((r) => r.status === 429);
    expect(limited).toBeDefined();
    expect(limited!.headers.get('retry-after')).toBe('1');
    await check('delivery', 'POST', limited!, '/ofrep/v1/evaluate/flags/Many0');
    await Promise.all(ofrepBurst.filter((r) => r !== limited).map((r) => r.arrayBuffer()));

    // Draining: a request whose body is still arriving keeps the server in its shutdown (until
    // --shutdown-timeout) while /healthz answers 503 on a kept-alive connection.
    await (await fetch(`${tight.url}/healthz`)).arrayBuffer();
    const { port } = new URL(tight.url);
    const pending = connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => pending.once('connect', () => resolve()));
    pending.on('error', () => undefined);
    pending.write(`POST /api/v1/config/Settings HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"u":`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    tight.child.kill('SIGTERM');
    await expect
      .poll(async () => {
        const r = await fetch(`${tight.url}/healthz`);
        await check('delivery', 'GET', r, '/healthz');
        return r.status;
      })
      .toBe(503);
    pending.destroy();
  });

  it('real answers of every admin endpoint, and every documented error, match the admin document', async () => {
    await admin('GET', 'environments');
    await admin('PUT', 'environments/staging');
    await admin('PUT', 'environments/staging');
    const key = (await (await admin('POST', 'environments/staging/keys', '{"key":"chosen-key-123"}')).json()) as { id: string };
    await admin('GET', 'environments/staging/keys');
    await admin('PUT', 'environments/staging/content/Cfg?minAppVersion=1.0.0', '{ // c\n "a": 1 }');
    await admin('GET', 'environments/staging/content');
    await admin('GET', 'environments/staging/content/Cfg');
    await admin('PUT', 'environments/staging/content/Cfg/mapping', JSON.stringify({ rules: [{ segment: 's', patch: { a: 2 } }] }));
    await admin('POST', 'environments/staging/content/Cfg/rollback?to=1');
    await admin('POST', 'environments/staging/sync', '{"to":"live","ids":["Cfg"]}');
    await admin('DELETE', 'environments/staging/content/Cfg/mapping');
    await admin('POST', 'import', JSON.stringify({ environments: { imported: { content: { X: { json: { x: 1 } } } } } }));
    await admin('GET', 'export');
    // A public address (no name to resolve); a loopback one is refused (docs/security.md, "Webhook targets").
    await admin('POST', 'webhooks', JSON.stringify({ url: 'http://127.0.0.1:9/hook', events: ['content.updated'] }));
    const hook = (await (await admin('POST', 'webhooks', JSON.stringify({ url: 'http://8.8.8.8:9/hook', events: ['content.updated'] }))).json()) as { id: string };
    await admin('GET', 'webhooks');
    await admin('GET', 'webhooks/dead-letters?limit=5');
    await admin('DELETE', `webhooks/${hook.id}`);
    await admin('GET', 'audit?limit=5');
    // The event stream: open (200), then one more than --admin-max-streams 1 (503 too_many_streams).
    const abort = new AbortController();
    const stream = await fetch(`${srv.adminUrl}/admin/v1/events`, { headers: AUTH, signal: abort.signal });
    await check('admin', 'GET', stream, '/admin/v1/events');
    await admin('GET', 'events');
    abort.abort();
    await admin('POST', 'environments/live/content/Promo/preview', JSON.stringify({ u: 'player-1', p: { vip: true }, v: '1.0.0' }));
    await admin('POST', 'environments/live/content/Nope/preview', JSON.stringify({ u: 'player-1' }));
    await admin('GET', 'environments/live/experiments');
    await admin('GET', 'environments/live/experiments/Split:ab');
    await admin('GET', 'environments/live/experiments/Nope:ab');
    const reader = (await (await admin('POST', 'tokens', JSON.stringify({ name: 'doc-reader', role: 'read', environments: ['live'] }))).json()) as { token: string };
    await admin('GET', 'tokens');
    await admin('POST', 'tokens', JSON.stringify({ name: 'doc-reader', role: 'read', environments: '*' }));
    await admin('PUT', 'environments/live/content/Settings', '{}', { authorization: `Bearer ${reader.token}` });
    await admin('GET', 'environments/staging/content', undefined, { authorization: `Bearer ${reader.token}` });
    await admin('DELETE', 'tokens/doc-reader');
    await admin('DELETE', 'tokens/doc-reader');
    await admin('DELETE', `environments/staging/keys/${key.id}`);
    await admin('DELETE', 'environments/staging/content/Cfg');
    await admin('DELETE', 'environments/staging');

    // Scheduled changes, rollouts and the kill switch (docs/schedule.md), on an item of their own.
    const inHour = new Date(Date.now() + 3_600_000).toISOString();
    const inTwo = new Date(Date.now() + 7_200_000).toISOString();
    await admin('PUT', 'environments/live/content/Sched', '{"a":1}');
    await admin('PUT', 'environments/live/content/Sched/mapping', JSON.stringify({ rules: [{ segment: 'r', disabled: true, patch: { a: 2 } }, { segment: 'q', patch: { b: 1 } }] }));
    const sch = (await (await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'content.put', id: 'Sched', json: { a: 3 } }], note: 'n' }))).json()) as { id: string };
    await admin('GET', 'environments/live/schedules?status=pending,applied&id=Sched');
    await admin('GET', 'schedules?env=live');
    await admin('GET', `environments/live/schedules/${sch.id}`);
    await admin('PATCH', `environments/live/schedules/${sch.id}`, JSON.stringify({ at: inTwo }));
    await admin('POST', `environments/live/content/Sched/preview?at=${encodeURIComponent(inTwo)}`, '{"u":"p1"}');
    await admin('GET', `environments/live/schedules/${sch.id}/writes`);
    await admin('PUT', `environments/live/schedules/${sch.id}/ops`, JSON.stringify({ ops: [{ op: 'content.put', id: 'Sched', json: { a: 5 } }] }));
    await admin('POST', 'environments/live/schedules/check', JSON.stringify({ ops: [{ op: 'content.put', id: 'Sched', json: { a: 6 } }] }));
    // A second op pending: past --preview-max-ops 1.
    const two = (await (await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'content.put', id: 'Sched', json: { a: 4 } }] }))).json()) as { id: string };
    await admin('POST', `environments/live/content/Sched/preview?at=${encodeURIComponent(inTwo)}`, '{"u":"p1"}');
    await admin('DELETE', `environments/live/schedules/${two.id}`);
    await admin('DELETE', `environments/live/schedules/${sch.id}`);
    await admin('DELETE', `environments/live/schedules/${sch.id}`);
    const ro = (await (await admin('POST', 'environments/live/rollouts', JSON.stringify({ id: 'Sched', rule: 0, steps: [{ percent: 10, at: inHour }, { percent: 100, at: inTwo }] }))).json()) as { id: string; steps: { scheduleId: string }[] };
    await admin('PATCH', `environments/live/schedules/${ro.steps[0]!.scheduleId}`, JSON.stringify({ at: new Date(Date.now() + 10_800_000).toISOString() }));
    await admin('POST', 'environments/live/rollouts', JSON.stringify({ id: 'Sched', rule: 1, steps: [{ percent: 10, at: inHour }] }));
    await admin('GET', 'environments/live/rollouts?id=Sched');
    await admin('GET', `environments/live/rollouts/${ro.id}`);
    await admin('POST', `environments/live/rollouts/${ro.id}/pause`);
    await admin('POST', `environments/live/rollouts/${ro.id}/resume`);
    await admin('POST', `environments/live/rollouts/${ro.id}/advance`);
    await admin('POST', `environments/live/rollouts/${ro.id}/rollback`);
    await admin('POST', `environments/live/rollouts/${ro.id}/pause`);
    // A step whose time passes while its rollout is paused: a resume asked to refuse says so.
    await admin('PUT', 'environments/live/content/Late', '{"a":1}');
    await admin('PUT', 'environments/live/content/Late/mapping', JSON.stringify({ rules: [{ segment: 'r', disabled: true, patch: { a: 2 } }] }));
    const soon = Date.now() + 3000;
    const late = (await (await admin('POST', 'environments/live/rollouts', JSON.stringify({ id: 'Late', rule: 0, steps: [{ percent: 100, at: new Date(soon).toISOString() }] }))).json()) as { id: string };
    await admin('POST', `environments/live/rollouts/${late.id}/pause`);
    await new Promise((r) => setTimeout(r, Math.max(0, soon - Date.now()) + 300));
    await admin('POST', `environments/live/rollouts/${late.id}/resume`, '{"overdue":"refuse"}');
    await admin('POST', `environments/live/rollouts/${late.id}/resume`, JSON.stringify({ overdue: 'reschedule', at: inHour }));
    await admin('POST', 'environments/live/content/Sched/kill', '{"rule":1,"segment":"q"}');
    await admin('POST', 'environments/live/content/Sched/kill');
    await admin('POST', 'environments/live/content/Sched/kill', '{"rule":0,"segment":"not-r"}');
    await admin('GET', 'environments/live/schedules/sch_00000000000000000000');
    await admin('GET', 'environments/live/rollouts/ro_00000000000000000000');
    await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'content.put', id: 'Sched', json: {}, baseRevision: 9 }] }));
    await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'rule.set', id: 'Sched', rule: 0, segment: 'elsewhere', mod: [0, 9] }] }));
    await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'mapping.put', id: 'Sched', mapping: { rules: [{ segment: 's', patch: { a: 1 }, bogus: 1 }] } }] }));
    await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'content.put', id: 'Sched', text: '{ nope' }] }));
    await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'content.put', id: ' bad id', json: {} }] }));
    await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'content.rollback', id: 'Sched', to: 99 }] }));
    await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'mapping.delete', id: 'Missing' }] }));
    await admin('GET', 'environments/live/schedules?status=nope');
    // --schedule-max-pending 6: the seventh open change is refused.
    for (let i = 0; i < 7; i++) {
      const r = await admin('POST', 'environments/live/schedules', JSON.stringify({ at: inHour, ops: [{ op: 'content.put', id: `Many${i}`, json: { n: i } }] }));
      if (r.status === 409) break;
    }

    await admin('GET', 'environments', undefined, {});
    await admin('POST', 'environments/live/keys', '{', AUTH);
    await admin('POST', 'environments/live/keys', '{"key":"short"}');
    await admin('GET', 'audit?limit=0');
    await admin('GET', 'webhooks/dead-letters?limit=0');
    await admin('PUT', 'environments/live/content/Bad', '{ nope');
    await admin('PUT', 'environments/live/content/Settings/mapping', JSON.stringify({ rules: [{ segment: 's', patch: { a: 1 }, bogus: 1 }] }));
    await admin('POST', 'import', JSON.stringify({ environments: { 'bad env!': {} } }));
    await admin('PUT', 'environments/bad%20env!');
    await admin('GET', 'environments/nope/content');
    await admin('GET', 'environments/live/content/Nope');
    await admin('DELETE', 'environments/other');
    await admin('POST', 'import', Buffer.alloc(10 * 1024 * 1024 + 1, 0x20));
  });

  it('every documented answer was observed: each success status, and each error code but UNPROVOKED', () => {
    for (const name of ['delivery', 'admin'] as const) {
      for (const [template, item] of Object.entries(docs[name].paths)) {
        for (const [method, op] of Object.entries(item)) {
          if (method === 'parameters') continue;
          for (const [status, response] of Object.entries(op.responses)) {
            const seen = observed.filter((o) => o.doc === name && o.template === template && o.method.toLowerCase() === method && o.status === Number(status));
            const codes = response['x-error-codes'];
            if (codes === undefined) {
              expect(seen.length, `${name}: ${method} ${template} ${status}`).toBeGreaterThan(0);
              continue;
            }
            // An error code is proven once on any endpoint of the document (they share one envelope and one writer).
            for (const code of codes) {
              if (UNPROVOKED.has(code)) continue;
              expect(observed.some((o) => o.doc === name && o.code === code), `${name}: error ${code}`).toBe(true);
            }
          }
        }
      }
    }
  });
});

describe('the admin bodies the server validates by hand agree with their zod schemas', () => {
  // Each body is sent to the real server: it refuses it with 400 invalid_body exactly when the schema does.
  const cases: { name: string; path: string; schema: z.ZodType; bodies: unknown[] }[] = [
    {
      name: 'KeyCreateBody',
      path: 'environments/live/keys',
      schema: KeyCreateBody,
      bodies: [{}, { key: 'chosen-key-aaaa' }, { key: 'short' }, { key: 'has space in it' }, { key: 'é-non-ascii-key' }, { key: 'x'.repeat(256) }, { key: 'y'.repeat(257) }, { key: null }, { key: 12345678 }, { other: 1 }, [], 'text'],
    },
    {
      name: 'SyncBody',
      path: 'environments/live/sync',
      schema: SyncBody,
      bodies: [{ to: 'other' }, { to: 'other', ids: ['Settings'] }, { to: 'other', ids: null }, { to: '' }, { to: 5 }, {}, { to: 'other', ids: [''] }, { to: 'other', ids: 'Settings' }, { to: 'other', ids: [1] }, { to: 'other', extra: true }, [], null],
    },
    {
      name: 'WebhookBody',
      path: 'webhooks',
      schema: WebhookBody,
      bodies: [
        { url: 'http://8.8.8.8:9/a', events: ['content.updated'] },
        { url: 'https://8.8.4.4/b', events: ['content.updated', 'content.updated'], secret: 's' },
        { url: 'ftp://example.com/', events: ['content.updated'] },
        { url: 'not a url', events: ['content.updated'] },
        { url: 'http://user:pw@8.8.8.8:9/a', events: ['content.updated'] },
        { url: 'http://8.8.8.8:9/a', events: [] },
        { url: 'http://8.8.8.8:9/a', events: ['nope'] },
        { url: 'http://8.8.8.8:9/a', events: ['content.updated'], secret: '' },
        { url: 'http://8.8.8.8:9/a', events: ['content.updated'], secret: 'z'.repeat(513) },
        { url: 'http://8.8.8.8:9/a', events: ['content.updated'], secret: 'whsec_c2VjcmV0LWtleS1ieXRlcw==' },
        { url: 'http://8.8.8.8:9/a', events: ['content.updated'], secret: 'whsec_not base64' },
        { url: 'http://8.8.8.8:9/a', events: ['content.updated'], secret: 'whsec_abc' },
        { url: 'http://8.8.8.8:9/a', events: ['content.updated'], secret: 'whsec_' },
        { url: 'http://8.8.8.8:9/a', events: ['content.updated'], extra: 1 },
        { events: ['content.updated'] },
        [],
      ],
    },
    {
      name: 'TokenBody',
      path: 'tokens',
      schema: TokenBody,
      bodies: [
        { name: 'schema-a', role: 'read', environments: '*' },
        { name: 'schema-b', role: 'editor', environments: ['live', 'other'] },
        { name: 'schema-c', role: 'admin', environments: ['live'], extra: 1 },
        { name: '', role: 'read', environments: '*' },
        { name: 'has space', role: 'read', environments: '*' },
        { name: 'n'.repeat(65), role: 'read', environments: '*' },
        { name: 'schema-d', role: 'owner', environments: '*' },
        { name: 'schema-e', role: 'read', environments: [] },
        { name: 'schema-f', role: 'read', environments: 'live' },
        { name: 'schema-h', role: 'read', environments: ['bad env!'] },
        { name: 'schema-g', role: 'read' },
        [],
      ],
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      for (const body of c.bodies) {
        const res = await fetch(`${srv.adminUrl}/admin/v1/${c.path}`, { method: c.path === 'webhooks' || c.path === 'tokens' || c.path.endsWith('/sync') || c.path.endsWith('/keys') ? 'POST' : 'PUT', headers: AUTH, body: JSON.stringify(body) });
        const answer = (await res.json()) as { error?: { code: string } };
        const refused = res.status === 400 && answer.error?.code === 'invalid_body';
        expect({ body, refused }).toEqual({ body, refused: !c.schema.safeParse(body).success });
        if (!refused) expect(res.status, JSON.stringify(answer)).toBeLessThan(300);
      }
    });
  }
});

describe('a client generated from the delivery document (openapi-typescript + openapi-fetch)', () => {
  it('compiles with tsc and reads the catalog and a wrapped answer from the server', async () => {
    const dir = mkdtempSync(join(ROOT, '.openapi-client-'));
    try {
      writeFileSync(join(dir, 'delivery.d.ts'), astToString(await openapiTS(structuredClone(raw.delivery) as never)));
      writeFileSync(
        join(dir, 'main.ts'),
        `import createClient from 'openapi-fetch';
import type { paths } from './delivery.js';

const client = createClient<paths>({ baseUrl: process.argv[2]! });
const headers = { 'X-Api-Key': process.argv[3]!, 'Content-Type': 'application/json' as const };
const catalog = await client.GET('/api/v1/env/catalog', { params: { header: headers } });
const wrapped = await client.POST('/api/v1/config/{contentId}/dynamic', { params: { path: { contentId: 'Promo' } }, headers, body: { u: 'a', p: { vip: true } } });
const ids: string[] = Object.keys(catalog.data?.catalog ?? {});
const seg: string[] = (wrapped.data?.meta.seg ?? []).map((s) => s.n);
console.log(JSON.stringify({ status: catalog.response.status, ids: ids.length, seg, data: wrapped.data?.data }));
`,
      );
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: true, types: ['node'], outDir: 'out' }, files: ['main.ts', 'delivery.d.ts'] }),
      );
      writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
      execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { cwd: dir, stdio: 'pipe' });
      const out = execFileSync(process.execPath, [join(dir, 'out/main.js'), srv.url, KEY], { cwd: dir, encoding: 'utf8' });
      expect(JSON.parse(out)).toEqual({ status: 200, ids: expect.any(Number) as number, seg: ['vip'], data: { banner: 'gold' } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the reference page', () => {
  // Each request on a connection of its own: the test before this one blocks the event loop (its
  // execFileSync compile) past the listener's keep-alive timeout, and a pooled connection the
  // listener closed meanwhile would fail the next fetch.
  const get = (path: string): Promise<RawReply> => rawCall(srv.adminUrl!, path, { method: 'GET' });

  it('is served from the admin listener only: the page, its scripts and stylesheet, and both documents (Chromium renders it: openapi-page.test.ts)', async () => {
    const page = await get('/openapi/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    const html = page.wire.toString('utf8');
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBe(4);
    for (const ref of refs) {
      expect(ref.startsWith('/openapi/')).toBe(true);
      const res = await get(ref);
      expect(res.status).toBe(200);
      expect(res.wire.length).toBeGreaterThan(0);
    }
    const init = (await get('/openapi/ui/init.js')).wire.toString('utf8');
    expect(init).toContain("'/openapi/delivery.json'");
    expect(init).toContain("'/openapi/admin.json'");
    expect((await get('/openapi/ui/nothing.js')).status).toBe(404);
  });
});
