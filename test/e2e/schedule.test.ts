/**
 * Scheduled changes on one real `rcd serve` (SQLite), on the real clock: a staged rollout widens its
 * range and a fixed set of 10,000 players never leaves it once in; a change that became invalid by
 * its time fails cleanly (nothing written, a webhook and a metric say so); a restart that spans a
 * due time applies the change late, once; scopes and token revocation hold; a preview shows an item
 * as it will be.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { until } from '../helpers/until.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const running: ServerProcess[] = [];

afterEach(async () => {
  for (const s of running.splice(0).reverse()) await s.dispose();
});

async function start(dir?: string): Promise<ServerProcess> {
  const srv = await startServer({ admin: true, metrics: true, args: ['--webhook-allow-private', 'true'], ...(dir === undefined ? {} : { dir }) });
  running.push(srv);
  return srv;
}

async function adm<T = unknown>(srv: ServerProcess, method: string, path: string, body?: unknown, auth: Record<string, string> = AUTH): Promise<{ status: number; json: T }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, {
    method,
    headers: auth,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as T };
}

async function ok<T = unknown>(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<T> {
  const r = await adm<T>(srv, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

async function seed(srv: ServerProcess, content = '{"difficulty":"normal","color":"green"}'): Promise<string> {
  await ok(srv, 'PUT', 'environments/live');
  const { key } = await ok<{ key: string }>(srv, 'POST', 'environments/live/keys');
  await ok(srv, 'PUT', 'environments/live/content/Game', content);
  return key;
}

interface Schedule {
  id: string;
  status: string;
  lateMs: number | null;
  error: { code: string } | null;
}

describe('a staged rollout', () => {
  it('widens the range step by step, and a fixed set of 10,000 players never leaves it once in', async () => {
    const srv = await start();
    const key = await seed(srv);
    await ok(srv, 'PUT', 'environments/live/content/Game/mapping', { rules: [{ segment: 'new-curve', disabled: true, patch: { difficulty: 'adaptive' } }] });
    const users = Array.from({ length: 10_000 }, (_, i) => `player-${i}`);
    const had = new Set<string>();
    const left: string[] = [];
    const mods = new Map<string, number>();
    /** One pass over every player, 64 requests at a time: the players who had the change. */
    const pass = async (): Promise<Set<string>> => {
      const inIt = new Set<string>();
      for (let i = 0; i < users.length; i += 64) {
        const batch = users.slice(i, i + 64);
        const answers = await Promise.all(batch.map((u) => call(srv.url, '/api/v1/config/Game/dynamic', { key, body: JSON.stringify({ u }) })));
        answers.forEach((r, j) => {
          const u = batch[j]!;
          const body = r.json as { data: { difficulty: string }; meta: { mod: number; seg: { n: string }[] } };
          const has = body.data.difficulty === 'adaptive';
          expect(has).toBe(body.meta.seg.some((s) => s.n === 'new-curve'));
          mods.set(u, body.meta.mod);
          if (has) {
            inIt.add(u);
            had.add(u);
          } else if (had.has(u)) {
            left.push(u);
          }
        });
      }
      return inIt;
    };
    // Each step lasts well over two passes, timed here (~3 s on a loaded 2-core machine, more when
    // the suite's other files run beside it), so one pass falls wholly within it.
    const t0 = Date.now();
    expect((await pass()).size).toBe(0);
    const stepMs = Math.max(7000, Math.ceil((Date.now() - t0) * 2.5));
    const rollout = await ok<{ id: string; steps: { mod: number[] }[] }>(srv, 'POST', 'environments/live/rollouts', {
      id: 'Game',
      rule: 0,
      steps: [
        { percent: 5, at: isoIn(2000) },
        { percent: 25, at: isoIn(2000 + stepMs) },
        { percent: 100, at: isoIn(2000 + 2 * stepMs) },
      ],
    });
    expect(rollout.steps.map((s) => s.mod)).toEqual([[0, 49], [0, 249], [0, 999]]);
    const passes: Set<string>[] = [];
    let done = false;
    while (!done) {
      const view = await ok<{ status: string }>(srv, 'GET', `environments/live/rollouts/${rollout.id}`);
      done = view.status === 'completed';
      passes.push(await pass());
    }
    expect(left).toEqual([]);
    expect(had.size).toBe(users.length);
    // Some pass fell wholly within each step: exactly the players whose mod is below 50, then 250.
    const exactly = (width: number): boolean => passes.some((p) => users.every((u) => p.has(u) === mods.get(u)! < width));
    expect(exactly(50)).toBe(true);
    expect(exactly(250)).toBe(true);
    expect(exactly(1000)).toBe(true);
  }, 180_000);
});

describe('a change that became invalid by its time', () => {
  let receiver: Server;
  let hookUrl: string;
  const events: { event: string; schedule?: { id: string; status: string; error: { code: string } | null } }[] = [];
  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        events.push(JSON.parse(body) as (typeof events)[number]);
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    receiver.closeAllConnections();
    await new Promise<void>((r) => receiver.close(() => r()));
  });

  it('fails with its reason, writes nothing, and a webhook and a metric say so', async () => {
    const srv = await start();
    const key = await seed(srv);
    await ok(srv, 'POST', 'webhooks', { url: hookUrl, events: ['schedule.created', 'schedule.applied', 'schedule.failed', 'schedule.cancelled', 'mapping.updated'] });
    const mapping = { rules: [{ segment: 'green', patch: [{ op: 'replace', path: '/color', value: 'orange' }] }] };
    const sch = await ok<Schedule>(srv, 'POST', 'environments/live/schedules', {
      at: isoIn(1500),
      ops: [{ op: 'content.put', id: 'Extra', json: { x: 1 } }, { op: 'mapping.put', id: 'Game', mapping }],
    });
    // Edited meanwhile: the patch no longer applies.
    await ok(srv, 'PUT', 'environments/live/content/Game', '{"difficulty":"hard"}');
    await until('the change to settle', async () => (await ok<Schedule>(srv, 'GET', `environments/live/schedules/${sch.id}`)).status !== 'pending', 10_000);
    const failed = await ok<Schedule>(srv, 'GET', `environments/live/schedules/${sch.id}`);
    expect(failed.status).toBe('failed');
    expect(failed.error?.code).toBe('invalid_mapping');
    // Nothing of it: neither the new item of its first op nor the mapping.
    expect((await adm(srv, 'GET', 'environments/live/content/Extra')).status).toBe(404);
    expect((await ok<{ mapping: unknown }>(srv, 'GET', 'environments/live/content/Game')).mapping).toBeNull();
    expect((await call(srv.url, '/api/v1/config/Extra', { key })).status).toBe(404);
    await until('the webhook', () => events.some((e) => e.event === 'schedule.failed'), 10_000);
    expect(events.map((e) => e.event)).toEqual(['schedule.created', 'schedule.failed']);
    expect(events[1]!.schedule).toMatchObject({ id: sch.id, status: 'failed', error: { code: 'invalid_mapping' } });
    const metrics = await (await fetch(srv.metricsUrl!)).text();
    expect(metrics).toMatch(/^rcd_schedule_failed_total 1$/m);
    expect(metrics).toMatch(/^rcd_schedule_applied_total 0$/m);
    const audit = await ok<{ entries: { action: string; target: string }[] }>(srv, 'GET', 'audit?limit=10');
    expect(audit.entries[0]).toMatchObject({ action: 'schedule.fail', target: sch.id });
  }, 60_000);
});

describe('many changes due in the same second', () => {
  it('applies 1,200 of them (more than one batch) each once, audited, and every one live', async () => {
    const srv = await start();
    const key = await seed(srv);
    const N = 1200;
    const ids = Array.from({ length: N }, (_, i) => `Event${i}`);
    const content: Record<string, unknown> = {};
    for (const [i, id] of ids.entries()) content[id] = { json: { event: i, on: false } };
    const at = isoIn(4000);
    const schedules = ids.map((id, i) => ({ env: 'live', at, ops: [{ op: 'content.put', id, json: { event: i, on: true } }] }));
    const report = await ok<{ schedulesAdded: number }>(srv, 'POST', 'import', { environments: { live: { content } }, schedules });
    expect(report.schedulesAdded).toBe(N);
    const catalog = async (): Promise<Record<string, { h: string }>> =>
      ((await call(srv.url, '/api/v1/env/catalog', { method: 'GET', key })).json as { catalog: Record<string, { h: string }> }).catalog;
    const before = await catalog();
    expect(Object.keys(before)).toHaveLength(N + 1);
    await until('every change applied', async () => {
      const now = await catalog();
      return ids.every((id) => now[id]!.h !== before[id]!.h);
    }, 30_000);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(at));
    // A list shows at most 1,000: a full page of applied ones, and none left pending or failed.
    const applied = await ok<{ schedules: Schedule[] }>(srv, 'GET', 'environments/live/schedules?status=applied&limit=1000');
    expect(applied.schedules).toHaveLength(1000);
    for (const status of ['pending', 'failed']) {
      expect((await ok<{ schedules: Schedule[] }>(srv, 'GET', `environments/live/schedules?status=${status}`)).schedules).toHaveLength(0);
    }
    let audited = 0;
    let beforeId: number | undefined;
    for (;;) {
      const page = await ok<{ entries: { id: number; detail: { schedule?: unknown } }[] }>(srv, 'GET', `audit?limit=1000${beforeId === undefined ? '' : `&before=${beforeId}`}`);
      audited += page.entries.filter((e) => e.detail?.schedule !== undefined).length;
      if (page.entries.length < 1000) break;
      beforeId = page.entries[page.entries.length - 1]!.id;
    }
    expect(audited).toBe(N);
    for (const id of [ids[0]!, ids[599]!, ids[N - 1]!]) {
      expect((await call(srv.url, `/api/v1/config/${id}`, { key })).json).toMatchObject({ on: true });
      const detail = await ok<{ revisions: unknown[] }>(srv, 'GET', `environments/live/content/${id}`);
      expect(detail.revisions).toHaveLength(2);
    }
  }, 90_000);
});

describe('restarts, rights and previews', () => {
  it('a change due while the server was stopped applies at the next start, late and once', async () => {
    const dir = tempDir();
    const a = await start(dir);
    const key = await seed(a);
    const sch = await ok<Schedule>(a, 'POST', 'environments/live/schedules', { at: isoIn(1500), ops: [{ op: 'content.put', id: 'Game', json: { difficulty: 'winter' } }] });
    await a.stop();
    await new Promise((r) => setTimeout(r, 2500));
    const b = await start(dir);
    await until('the change', async () => ((await call(b.url, '/api/v1/config/Game', { key })).json as { difficulty: string }).difficulty === 'winter', 10_000);
    const done = await ok<Schedule>(b, 'GET', `environments/live/schedules/${sch.id}`);
    expect(done.status).toBe('applied');
    expect(done.lateMs).toBeGreaterThanOrEqual(900);
    const detail = await ok<{ revisions: unknown[] }>(b, 'GET', 'environments/live/content/Game');
    expect(detail.revisions).toHaveLength(2);
  }, 60_000);

  it('schedules within a token\'s role and scope, and revoking the token cancels what it scheduled', async () => {
    const srv = await start();
    await seed(srv);
    await ok(srv, 'PUT', 'environments/qa');
    const token = async (name: string, role: string, environments: unknown): Promise<Record<string, string>> =>
      ({ authorization: `Bearer ${(await ok<{ token: string }>(srv, 'POST', 'tokens', { name, role, environments })).token}` });
    const reader = await token('reader', 'read', '*');
    const editor = await token('live-editor', 'editor', ['live']);
    const change = { at: isoIn(60_000), ops: [{ op: 'content.put', id: 'Game', json: { a: 1 } }] };
    expect((await adm<{ error: { code: string } }>(srv, 'POST', 'environments/live/schedules', change, reader)).json.error.code).toBe('forbidden_role');
    expect((await adm<{ error: { code: string } }>(srv, 'POST', 'environments/qa/schedules', change, editor)).json.error.code).toBe('forbidden_scope');
    const intoQa = { at: isoIn(60_000), ops: [{ op: 'sync', to: 'qa', ids: ['Game'] }] };
    expect((await adm<{ error: { code: string } }>(srv, 'POST', 'environments/live/schedules', intoQa, editor)).json.error.code).toBe('forbidden_scope');
    const mine = await adm<Schedule & { createdBy: string }>(srv, 'POST', 'environments/live/schedules', change, editor);
    expect(mine.status).toBe(201);
    expect(mine.json.createdBy).toBe('live-editor');
    // The reader sees it; the editor's list across environments holds only its scope.
    expect((await adm<{ schedules: { id: string }[] }>(srv, 'GET', 'schedules', undefined, reader)).json.schedules.map((s) => s.id)).toEqual([mine.json.id]);
    const revoked = await ok<{ revoked: boolean }>(srv, 'DELETE', 'tokens/live-editor');
    expect(revoked.revoked).toBe(true);
    const after = await ok<Schedule & { cancelReason: string }>(srv, 'GET', `environments/live/schedules/${mine.json.id}`);
    expect(after.status).toBe('cancelled');
    expect(after.cancelReason).toBe('token revoked');
  }, 60_000);

  it('previews an item as it will be at a time for a user context, storing nothing', async () => {
    const srv = await start();
    const key = await seed(srv);
    await ok(srv, 'POST', 'environments/live/schedules', { at: isoIn(60_000), ops: [{ op: 'content.put', id: 'Game', json: { difficulty: 'halloween', color: 'green' } }] });
    await ok(srv, 'POST', 'environments/live/schedules', {
      at: isoIn(120_000),
      ops: [{ op: 'mapping.put', id: 'Game', mapping: { rules: [{ segment: 'vip', when: { vip: true }, patch: { color: 'gold' } }] } }],
    });
    const preview = async (at: string | null): Promise<{ answer: { data: unknown }; seg: unknown[] }> =>
      ok(srv, 'POST', `environments/live/content/Game/preview${at === null ? '' : `?at=${encodeURIComponent(at)}`}`, { u: 'p1', p: { vip: true } });
    expect((await preview(null)).answer.data).toEqual({ difficulty: 'normal', color: 'green' });
    expect((await preview(isoIn(90_000))).answer.data).toEqual({ difficulty: 'halloween', color: 'green' });
    const later = await preview(isoIn(200_000));
    expect(later.answer.data).toEqual({ difficulty: 'halloween', color: 'gold' });
    expect(later.seg).toEqual([{ n: 'vip', v: null }]);
    // Nothing was stored: delivery and the store are as they were.
    expect((await call(srv.url, '/api/v1/config/Game', { key })).json).toEqual({ difficulty: 'normal', color: 'green' });
    expect((await ok<{ revisions: unknown[] }>(srv, 'GET', 'environments/live/content/Game')).revisions).toHaveLength(1);
    expect((await adm<{ error: { code: string } }>(srv, 'POST', 'environments/live/content/Game/preview?at=tomorrow', {})).json.error.code).toBe('invalid_query');
  }, 60_000);
});
