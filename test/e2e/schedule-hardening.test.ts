/**
 * Scheduled changes that reach across environments, the kill switch against a pending sync, and
 * rollouts that must keep their stickiness, on one real `rcd serve` a store: SQLite, and the scope and
 * kill-against-sync cases on PostgreSQL too (docs/schedule.md). Each test works in environments and
 * tokens of its own (`fresh`), so the tests share the server and nothing else.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parseAnswer, type Answer } from '../helpers/answers.js';
import { createDatabase } from '../helpers/postgres.js';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const servers = new Map<'sqlite' | 'postgres', Promise<ServerProcess>>();
const databases: { drop: () => Promise<void> }[] = [];

afterAll(async () => {
  for (const s of servers.values()) await (await s).dispose();
  for (const d of databases.splice(0)) await d.drop();
});

let names = 0;
/** A name no other test of this file uses, for its environments and tokens. */
function fresh(): string {
  return `t${++names}`;
}

interface ScheduleAnswer extends Answer {
  readonly env?: string;
  readonly at?: string;
  readonly status?: string;
  readonly allItems?: boolean;
  readonly into?: readonly string[];
  readonly cancelled?: readonly string[];
  readonly schedules?: readonly ScheduleAnswer[];
  readonly steps?: readonly { readonly scheduleId: string; readonly status: string }[];
  readonly token?: string;
}

/** The file's server on `store`, started by the first test that asks for it. */
function start(store: 'sqlite' | 'postgres'): Promise<ServerProcess> {
  let srv = servers.get(store);
  if (srv === undefined) {
    srv = startOn(store);
    servers.set(store, srv);
  }
  return srv;
}

async function startOn(store: 'sqlite' | 'postgres'): Promise<ServerProcess> {
  let url: string | undefined;
  if (store === 'postgres') {
    const db = await createDatabase();
    databases.push(db);
    url = db.url;
  }
  return startServer({ admin: true, ...(url === undefined ? {} : { store: url }) });
}

async function adm(srv: ServerProcess, method: string, path: string, body?: unknown, auth: Record<string, string> = AUTH): Promise<{ status: number; json: ScheduleAnswer }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, {
    method,
    headers: auth,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: parseAnswer(await res.text()) };
}

async function ok(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<ScheduleAnswer> {
  const r = await adm(srv, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

async function token(srv: ServerProcess, name: string, environments: unknown): Promise<Record<string, string>> {
  const made = await ok(srv, 'POST', 'tokens', { name, role: 'editor', environments });
  return { authorization: `Bearer ${made.token ?? ''}` };
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

const RULED = { rules: [{ segment: 'hard-mode', patch: { difficulty: 'hard' } }] };

/** Environments `<p>a` and `<p>b` (and `<p>c`), each holding Game with a live rule; a delivery key of `<p>b`. */
async function twoEnvironments(srv: ServerProcess, p: string): Promise<string> {
  for (const env of [`${p}a`, `${p}b`, `${p}c`]) {
    await ok(srv, 'PUT', `environments/${env}`);
    await ok(srv, 'PUT', `environments/${env}/content/Game`, '{"difficulty":"normal"}');
    await ok(srv, 'PUT', `environments/${env}/content/Game/mapping`, RULED);
  }
  return (await ok(srv, 'POST', `environments/${p}b/keys`)).key ?? '';
}

// Concurrent: these tests share nothing but their store's server, and the kill-switch test waits
// seconds on the wall clock for a sync's time to pass, which the others' work then overlaps.
for (const store of ['sqlite', 'postgres'] as const) {
  describe.concurrent(`a sync into another environment (${store})`, () => {
    it('is moved and cancelled only with every environment it writes in scope, and listed in the one it writes', async () => {
      const srv = await start(store);
      const p = fresh();
      const [A, B, C] = [`${p}a`, `${p}b`, `${p}c`];
      await twoEnvironments(srv, p);
      const at = isoIn(3_600_000);
      const sync = await ok(srv, 'POST', `environments/${A}/schedules`, { at, ops: [{ op: 'sync', to: B, ids: ['Game'] }] });
      const full = await ok(srv, 'POST', `environments/${A}/schedules`, { at, ops: [{ op: 'sync', to: B }] });
      const onlyA = await token(srv, `${p}-a-editor`, [A]);
      for (const id of [sync.id, full.id]) {
        const moved = await adm(srv, 'PATCH', `environments/${A}/schedules/${id}`, { at: isoIn(60_000) }, onlyA);
        expect(moved.status).toBe(403);
        expect(moved.json.error?.code).toBe('forbidden_scope');
        const cancelled = await adm(srv, 'DELETE', `environments/${A}/schedules/${id}`, undefined, onlyA);
        expect(cancelled.json.error?.code).toBe('forbidden_scope');
        const after = await ok(srv, 'GET', `environments/${A}/schedules/${id}`);
        expect([after.status, after.at]).toEqual(['pending', at]);
      }
      // With both in scope, it moves.
      const both = await token(srv, `${p}-ab-editor`, [A, B]);
      expect((await adm(srv, 'PATCH', `environments/${A}/schedules/${sync.id}`, { at: isoIn(7_200_000) }, both)).status).toBe(200);
      // B's list holds the syncs coming into it, marked by their own environment and `into`.
      const intoB = await ok(srv, 'GET', `environments/${B}/schedules`);
      expect(intoB.schedules?.map((s) => [s.id, s.env, s.into, s.allItems])).toEqual([
        [full.id, A, [B], true],
        [sync.id, A, [B], false],
      ]);
      expect((await ok(srv, 'GET', `environments/${B}/schedules?id=game`)).schedules?.map((s) => s.id)).toEqual([full.id, sync.id]);
      expect((await ok(srv, 'GET', `environments/${C}/schedules`)).schedules).toEqual([]);
      const readerOfB = { authorization: `Bearer ${(await ok(srv, 'POST', 'tokens', { name: `${p}-b-reader`, role: 'read', environments: [B] })).token ?? ''}` };
      expect((await adm(srv, 'GET', 'schedules', undefined, readerOfB)).json.schedules?.map((s) => s.id)).toEqual([full.id, sync.id]);
    }, 60_000);

    it('is cancelled by the kill switch when it would copy the killed rule back, and the kill names it', async () => {
      const srv = await start(store);
      const p = fresh();
      const [A, B, C] = [`${p}a`, `${p}b`, `${p}c`];
      const key = await twoEnvironments(srv, p);
      const hard = async (): Promise<boolean> => (((await call(srv.url, '/api/v1/config/Game/dynamic', { key, body: '{"u":"p1"}' })).json as { data: { difficulty: string } }).data.difficulty === 'hard');
      expect(await hard()).toBe(true);
      const dueMs = 4000;
      const intoB = await ok(srv, 'POST', `environments/${A}/schedules`, { at: isoIn(dueMs), ops: [{ op: 'sync', to: B }] });
      // A sync of every item out of B does not write B: the kill leaves it.
      const outOfB = await ok(srv, 'POST', `environments/${B}/schedules`, { at: isoIn(3_600_000), ops: [{ op: 'sync', to: C }] });
      const killed = await ok(srv, 'POST', `environments/${B}/content/Game/kill`, {});
      expect(killed.cancelled).toEqual([intoB.id]);
      expect(await hard()).toBe(false);
      expect((await ok(srv, 'GET', `environments/${A}/schedules/${intoB.id}`)).status).toBe('cancelled');
      expect((await ok(srv, 'GET', `environments/${B}/schedules/${outOfB.id}`)).status).toBe('pending');
      // Past the sync's time (and an applier pass), the rule is still killed.
      await new Promise((r) => setTimeout(r, dueMs + 1500));
      expect(await hard()).toBe(false);
      const mapping = (await ok(srv, 'GET', `environments/${B}/content/Game`)).mapping as { rules: { disabled?: boolean }[] };
      expect(mapping.rules[0]?.disabled).toBe(true);
    }, 60_000);
  });
}

describe('rollout stickiness', () => {
  /** The environment of the test running (the file's tests run one after another). */
  let env = '';

  async function live(): Promise<ServerProcess> {
    const srv = await start('sqlite');
    env = fresh();
    await ok(srv, 'PUT', `environments/${env}`);
    return srv;
  }

  async function rolloutOn(srv: ServerProcess, rule: Record<string, unknown>, steps: { percent: number; at: string }[]): Promise<{ status: number; json: ScheduleAnswer }> {
    await ok(srv, 'PUT', `environments/${env}/content/Game`, '{"difficulty":"normal"}');
    await ok(srv, 'PUT', `environments/${env}/content/Game/mapping`, { rules: [{ segment: 'new-curve', patch: { difficulty: 'adaptive' }, ...rule }] });
    return adm(srv, 'POST', `environments/${env}/rollouts`, { id: 'Game', rule: 0, steps });
  }

  it('refuses a move that puts a step past the next one, or before the one before it', async () => {
    const srv = await live();
    const made = await rolloutOn(srv, { disabled: true }, [
      { percent: 10, at: isoIn(3_600_000) },
      { percent: 50, at: isoIn(7_200_000) },
      { percent: 100, at: isoIn(10_800_000) },
    ]);
    expect(made.status).toBe(201);
    const [first, second, third] = (made.json.steps ?? []).map((s) => s.scheduleId);
    const move = (id: string | undefined, ms: number): Promise<{ status: number; json: ScheduleAnswer }> => adm(srv, 'PATCH', `environments/${env}/schedules/${id ?? ''}`, { at: isoIn(ms) });
    const after = await move(first, 9_000_000);
    expect(after.status).toBe(409);
    expect(after.json.error?.code).toBe('rollout_step_order');
    expect((await move(third, 5_000_000)).json.error?.code).toBe('rollout_step_order');
    expect((await move(second, 1_800_000)).json.error?.code).toBe('rollout_step_order');
    // Between its neighbours, a step moves.
    expect((await move(second, 5_000_000)).status).toBe(200);
    expect((await move(first, 60_000)).status).toBe(200);
  }, 60_000);

  it('refuses a first step that serves fewer players than the rule serves now', async () => {
    const srv = await live();
    const shrink = await rolloutOn(srv, { mod: [0, 499] }, [{ percent: 10, at: isoIn(3_600_000) }, { percent: 100, at: isoIn(7_200_000) }]);
    expect(shrink.status).toBe(409);
    expect(shrink.json.error?.code).toBe('rollout_shrinks');
    const everyone = await rolloutOn(srv, {}, [{ percent: 10, at: isoIn(3_600_000) }]);
    expect(everyone.json.error?.code).toBe('rollout_shrinks');
    expect((await ok(srv, 'GET', `environments/${env}/schedules`)).schedules).toEqual([]);
    // From the current range up, it is accepted.
    expect((await rolloutOn(srv, { mod: [0, 499] }, [{ percent: 50, at: isoIn(3_600_000) }, { percent: 100, at: isoIn(7_200_000) }])).status).toBe(201);
  }, 60_000);

  it('reads cancelled once every step was cancelled with its creator\'s token', async () => {
    const srv = await live();
    const editor = await token(srv, `${env}-roller`, [env]);
    await ok(srv, 'PUT', `environments/${env}/content/Game`, '{"difficulty":"normal"}');
    await ok(srv, 'PUT', `environments/${env}/content/Game/mapping`, { rules: [{ segment: 'new-curve', disabled: true, patch: { difficulty: 'adaptive' } }] });
    const made = await adm(srv, 'POST', `environments/${env}/rollouts`, { id: 'Game', rule: 0, steps: [{ percent: 10, at: isoIn(3_600_000) }, { percent: 50, at: isoIn(7_200_000) }] }, editor);
    expect(made.status).toBe(201);
    await ok(srv, 'DELETE', `tokens/${env}-roller`);
    const view = await ok(srv, 'GET', `environments/${env}/rollouts/${made.json.id ?? ''}`);
    expect(view.steps?.map((s) => s.status)).toEqual(['cancelled', 'cancelled']);
    expect(view.status).toBe('cancelled');
  }, 60_000);

  it('names the step whose time has passed', async () => {
    const srv = await live();
    const past = await rolloutOn(srv, { disabled: true }, [{ percent: 10, at: isoIn(-60_000) }, { percent: 50, at: isoIn(3_600_000) }]);
    expect(past.status).toBe(400);
    expect(past.json.error?.code).toBe('invalid_body');
    expect(past.json.error?.details).toEqual({ path: 'steps[0].at' });
  }, 60_000);
});

describe('a full sync in a listing', () => {
  it('says it writes every item', async () => {
    const srv = await start('sqlite');
    const p = fresh();
    const [A, B] = [`${p}a`, `${p}b`];
    await twoEnvironments(srv, p);
    await ok(srv, 'POST', `environments/${A}/schedules`, { at: isoIn(3_600_000), ops: [{ op: 'sync', to: B }] });
    await ok(srv, 'POST', `environments/${A}/schedules`, { at: isoIn(3_600_000), ops: [{ op: 'sync', to: B, ids: ['Game'] }] });
    const listed = (await ok(srv, 'GET', `environments/${A}/schedules`)).schedules ?? [];
    expect(listed.map((s) => [s.allItems, s.items])).toEqual([
      [true, []],
      [false, ['Game']],
    ]);
  }, 60_000);
});
