/**
 * Reading and editing what scheduled changes write, on a real `rcd serve` over a SQLite file and over
 * PostgreSQL (docs/schedule.md, "What a change writes", "Conflicts"): a change's writes item by item
 * (now, just before its time with the earlier pending changes folded in, after it); the edit of a
 * pending change's ops, refused exactly as scheduling the same ops is, 409 once settled or for a
 * rollout's step, audited, and its items re-indexed; a preview at a time naming the changes it folded
 * in beside the answer now; the conflict check naming the pending changes a write would make fail.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase } from '../helpers/postgres.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

const AUTH = { authorization: 'Bearer test-admin-token' };

interface ItemState {
  revision: number;
  text: string;
  mapping: { rules: { segment: string; mod?: [number, number]; disabled?: boolean }[] } | null;
}
interface ChangeRef {
  id: string;
  at: string;
  note: string;
  ops: string[];
  error: { code: string; message: string } | null;
}
interface Writes {
  schedule: { id: string; status: string };
  items: { env: string; id: string; now: ItemState | null; before: ItemState | null; after: ItemState | null }[];
  earlier: ChangeRef[];
  error: { code: string; message: string } | null;
}
interface Check {
  refused: { code: string; message: string } | null;
  conflicts: ChangeRef[];
  checked: number;
}
type Json = Record<string, unknown> & { error?: { code: string; message: string; details?: unknown } };

async function adm(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; text: string; json: Json }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, json: JSON.parse(text) as Json };
}

async function ok<T>(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<T> {
  const r = await adm(srv, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r.json as T;
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

const put = (id: string, json: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ op: 'content.put', id, json, ...extra });

/** One server per store kind for the whole file; each test works in an environment of its own. */
async function serve(kind: 'sqlite' | 'postgres', cleanups: (() => Promise<void> | void)[]): Promise<ServerProcess> {
  let store: string | undefined;
  if (kind === 'postgres') {
    const db = await createDatabase();
    cleanups.push(() => db.drop());
    store = db.url;
  }
  const srv = await startServer({ admin: true, ...(store === undefined ? {} : { store }) });
  cleanups.push(() => srv.dispose());
  return srv;
}

/** The environment `env` with the item Game ({"level":1}, revision 1) and its one disabled rule. */
async function prepare(srv: ServerProcess, env: string): Promise<void> {
  await ok(srv, 'PUT', `environments/${env}`);
  await ok(srv, 'PUT', `environments/${env}/content/Game`, '{"level":1}');
  await ok(srv, 'PUT', `environments/${env}/content/Game/mapping`, { rules: [{ segment: 'hard', disabled: true, patch: { level: 9 } }] });
}

async function schedule(srv: ServerProcess, env: string, inMs: number, ops: unknown[], note = ''): Promise<string> {
  return (await ok<{ id: string }>(srv, 'POST', `environments/${env}/schedules`, { at: isoIn(inMs), ops, note })).id;
}

describe.each(['sqlite', 'postgres'] as const)('scheduled changes read and edited (%s)', (kind) => {
  const cleanups: (() => Promise<void> | void)[] = [];
  let srv: ServerProcess;
  beforeAll(async () => {
    srv = await serve(kind, cleanups);
  });
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('shows what a change writes: now, just before its time (earlier changes folded in), after it', async () => {
    const env = 'writes';
    await prepare(srv, env);
    const first = await schedule(srv, env, 3_600_000, [put('Game', { level: 2 })], 'two');
    const second = await schedule(srv, env, 7_200_000, [put('Game', { level: 3 })], 'three');
    const rule = await schedule(srv, env, 10_800_000, [{ op: 'rule.set', id: 'Game', rule: 0, segment: 'hard', mod: [0, 249], disabled: false }]);

    const w = await ok<Writes>(srv, 'GET', `environments/${env}/schedules/${second}/writes`);
    expect(w.schedule.id).toBe(second);
    expect(w.error).toBeNull();
    expect(w.earlier.map((c) => [c.id, c.note, c.ops, c.error])).toEqual([[first, 'two', ['content.put'], null]]);
    expect(w.items).toHaveLength(1);
    const item = w.items[0]!;
    expect([item.env, item.id]).toEqual([env, 'Game']);
    expect(JSON.parse(item.now!.text)).toEqual({ level: 1 });
    expect(item.now!.revision).toBe(1);
    expect(JSON.parse(item.before!.text)).toEqual({ level: 2 });
    expect(item.before!.revision).toBe(2);
    expect(JSON.parse(item.after!.text)).toEqual({ level: 3 });
    expect(item.after!.revision).toBe(3);

    // A rule's new range: the mapping before and after.
    const r = await ok<Writes>(srv, 'GET', `environments/${env}/schedules/${rule}/writes`);
    expect(r.earlier.map((c) => c.id)).toEqual([first, second]);
    expect(r.items[0]!.before!.mapping!.rules[0]).toEqual({ segment: 'hard', disabled: true, patch: { level: 9 } });
    expect(r.items[0]!.after!.mapping!.rules[0]).toEqual({ segment: 'hard', patch: { level: 9 }, mod: [0, 249] });

    // Nothing was stored by reading.
    expect((await ok<{ revisions: unknown[] }>(srv, 'GET', `environments/${env}/content/Game`)).revisions).toHaveLength(1);

    // A change that would be refused at its time says so, with nothing after; a settled one shows only now.
    const pinned = await schedule(srv, env, 14_400_000, [put('Game', { level: 4 }, { baseRevision: 3 })]);
    await ok(srv, 'DELETE', `environments/${env}/schedules/${second}`);
    const failing = await ok<Writes>(srv, 'GET', `environments/${env}/schedules/${pinned}/writes`);
    expect(failing.error?.code).toBe('base_revision_changed');
    expect(failing.items[0]!.after).toBeNull();
    const cancelled = await ok<Writes>(srv, 'GET', `environments/${env}/schedules/${second}/writes`);
    expect(cancelled.schedule.status).toBe('cancelled');
    expect(cancelled.earlier).toEqual([]);
    expect([cancelled.items[0]!.before, cancelled.items[0]!.after]).toEqual([null, null]);
    expect((await adm(srv, 'GET', `environments/${env}/schedules/sch_00000000000000000000/writes`)).json.error?.code).toBe('not_found');
  }, 60_000);

  it('edits the ops of a pending change, refused exactly as scheduling them is; 409 once settled or for a rollout step', async () => {
    const env = 'edits';
    await prepare(srv, env);
    const id = await schedule(srv, env, 3_600_000, [put('Game', { level: 2 })], 'two');
    const path = `environments/${env}/schedules/${id}/ops`;

    // Every refusal is the one scheduling the same ops gets, byte for byte.
    const bad: unknown[][] = [
      [{ op: 'content.put', id: 'Game', text: '{ "level": ' }],
      [{ op: 'content.put', id: 'Game', json: { a: 1 }, bogus: 1 }],
      [{ op: 'content.put', id: ' bad', json: {} }],
      [put('Game', {}, { baseRevision: 7 })],
      [{ op: 'mapping.put', id: 'Game', mapping: { rules: [{ segment: 's', patch: { a: 1 }, nope: 1 }] } }],
      [{ op: 'content.rollback', id: 'Game', to: 42 }],
      [{ op: 'mapping.delete', id: 'Missing' }],
      [],
    ];
    for (const ops of bad) {
      // Due before the edited change: neither replays anything before it.
      const scheduled = await adm(srv, 'POST', `environments/${env}/schedules`, { at: isoIn(1_800_000), ops });
      const edited = await adm(srv, 'PUT', path, { ops });
      expect(scheduled.status).toBeGreaterThanOrEqual(400);
      expect([edited.status, edited.text]).toEqual([scheduled.status, scheduled.text]);
    }
    expect((await adm(srv, 'PUT', path, { ops: [put('Game', {})], at: isoIn(1000) })).json.error?.code).toBe('invalid_body');

    // The new text, a new item (found by the item filter under it, no more under the old one), the note kept.
    const edited = await ok<{ ops: { id: string; text: string }[]; note: string; status: string }>(srv, 'PUT', path, { ops: [{ op: 'content.put', id: 'Other', text: '{ "level": 5 }' }] });
    expect([edited.status, edited.note, edited.ops[0]!.id, edited.ops[0]!.text]).toEqual(['pending', 'two', 'Other', '{ "level": 5 }']);
    expect((await ok<{ ops: { text: string }[] }>(srv, 'GET', `environments/${env}/schedules/${id}`)).ops[0]!.text).toBe('{ "level": 5 }');
    expect((await ok<{ schedules: { id: string }[] }>(srv, 'GET', `environments/${env}/schedules?id=Other`)).schedules.map((s) => s.id)).toEqual([id]);
    expect((await ok<{ schedules: unknown[] }>(srv, 'GET', `environments/${env}/schedules?id=Game`)).schedules).toEqual([]);
    const renoted = await ok<{ note: string }>(srv, 'PUT', path, { ops: [put('Game', { level: 6 })], note: 'six' });
    expect(renoted.note).toBe('six');
    const audit = await ok<{ entries: { action: string; target: string; detail: unknown }[] }>(srv, 'GET', 'audit?limit=5');
    expect(audit.entries.filter((e) => e.action === 'schedule.edit').map((e) => [e.target, e.detail])).toEqual([
      [id, { ops: ['content.put'], note: 'six' }],
      [id, { ops: ['content.put'], note: 'two' }],
    ]);

    // Settled: 409 conflict, nothing changed.
    await ok(srv, 'DELETE', `environments/${env}/schedules/${id}`);
    const settled = await adm(srv, 'PUT', path, { ops: [put('Game', { level: 7 })] });
    expect([settled.status, settled.json.error?.code, settled.json.error?.details]).toEqual([409, 'conflict', { status: 'cancelled' }]);
    expect(JSON.parse((await ok<{ ops: { text: string }[] }>(srv, 'GET', `environments/${env}/schedules/${id}`)).ops[0]!.text)).toEqual({ level: 6 });

    // A rollout's step changes through its rollout.
    const ro = await ok<{ steps: { scheduleId: string }[] }>(srv, 'POST', `environments/${env}/rollouts`, { id: 'Game', rule: 0, steps: [{ percent: 10, at: isoIn(3_600_000) }] });
    const step = await adm(srv, 'PUT', `environments/${env}/schedules/${ro.steps[0]!.scheduleId}/ops`, { ops: [put('Game', { level: 8 })] });
    expect([step.status, step.json.error?.code]).toEqual([409, 'conflict']);
  }, 60_000);

  it('a preview at a time names the changes it folded in and answers the answer now beside it', async () => {
    const env = 'preview';
    await prepare(srv, env);
    // Pinned to revision 1 while nothing is before it; the change scheduled before it next makes it fail.
    const broken = await schedule(srv, env, 5_400_000, [put('Game', { level: 0 }, { baseRevision: 1 })], 'pinned to revision 1');
    const first = await schedule(srv, env, 3_600_000, [put('Game', { level: 2 })], 'two');
    const second = await schedule(srv, env, 7_200_000, [put('Game', { level: 3 })], 'three');
    await schedule(srv, env, 10_800_000, [put('Game', { level: 4 })], 'later');
    const p = await ok<{ answer: { data: unknown }; revision: number; changes: ChangeRef[]; now: { answer: { data: unknown }; revision: number } }>(
      srv, 'POST', `environments/${env}/content/Game/preview?at=${encodeURIComponent(isoIn(9_000_000))}`, { u: 'p1' },
    );
    expect(p.answer.data).toEqual({ level: 3 });
    expect(p.now.answer.data).toEqual({ level: 1 });
    expect([p.now.revision, p.revision]).toEqual([1, 3]);
    expect(p.changes.map((c) => [c.id, c.note, c.error?.code ?? null])).toEqual([
      [first, 'two', null],
      [broken, 'pinned to revision 1', 'base_revision_changed'],
      [second, 'three', null],
    ]);
    const plain = await ok<Record<string, unknown>>(srv, 'POST', `environments/${env}/content/Game/preview`, { u: 'p1' });
    expect(Object.keys(plain)).not.toContain('changes');
  }, 60_000);

  it('the conflict check names the pending changes a write would make fail, and writes nothing', async () => {
    const env = 'conflicts';
    await prepare(srv, env);
    const pinned = await schedule(srv, env, 3_600_000, [put('Game', { level: 2 }, { baseRevision: 1 })], 'pinned');
    const mapped = await schedule(srv, env, 7_200_000, [{ op: 'mapping.put', id: 'Game', mapping: { rules: [{ segment: 's', patch: { level: 5 } }] } }], 'mapping');
    await schedule(srv, env, 7_300_000, [put('Other', { a: 1 })]);
    const check = (body: unknown): Promise<Check> => ok<Check>(srv, 'POST', `environments/${env}/schedules/check`, body);

    // A save now moves the pinned revision on: the pinned change would fail.
    const save = await check({ ops: [put('Game', { level: 10 })] });
    expect(save.refused).toBeNull();
    expect(save.checked).toBe(2);
    expect(save.conflicts.map((c) => [c.id, c.note, c.error?.code])).toEqual([[pinned, 'pinned', 'base_revision_changed']]);
    // Deleting the item: both would fail.
    const del = await check({ ops: [{ op: 'content.delete', id: 'Game' }] });
    expect(del.conflicts.map((c) => [c.id, c.error?.code])).toEqual([
      [pinned, 'base_revision_changed'],
      [mapped, 'content_not_found'],
    ]);
    // Scheduled between them: only the later one is in its way.
    const later = await check({ ops: [{ op: 'content.delete', id: 'Game' }], at: isoIn(5_000_000) });
    expect(later.conflicts.map((c) => [c.id, c.error?.code])).toEqual([[mapped, 'content_not_found']]);
    // The new ops of a pending change, at its time.
    const edit = await check({ ops: [{ op: 'content.delete', id: 'Game' }], schedule: pinned });
    expect(edit.conflicts.map((c) => [c.id, c.error?.code])).toEqual([[mapped, 'content_not_found']]);
    // Nothing in the way; the write's own refusal is answered, not thrown.
    expect((await check({ ops: [put('Elsewhere', { a: 1 })] })).conflicts).toEqual([]);
    expect((await check({ ops: [{ op: 'mapping.delete', id: 'Nope' }] })).refused?.code).toBe('content_not_found');
    expect((await adm(srv, 'POST', `environments/${env}/schedules/check`, { ops: [{ op: 'content.put', id: 'Game', text: '{' }] })).json.error?.code).toBe('invalid_content');
    expect((await adm(srv, 'POST', `environments/${env}/schedules/check`, { ops: [put('Game', {})], at: isoIn(1000), schedule: pinned })).json.error?.code).toBe('invalid_body');
    await ok(srv, 'DELETE', `environments/${env}/schedules/${mapped}`);
    expect((await adm(srv, 'POST', `environments/${env}/schedules/check`, { ops: [put('Game', {})], schedule: mapped })).json.error?.code).toBe('conflict');

    const game = await ok<{ revisions: unknown[]; mapping: unknown }>(srv, 'GET', `environments/${env}/content/Game`);
    expect(game.revisions).toHaveLength(1);
    expect((await ok<{ schedules: { status: string }[] }>(srv, 'GET', `environments/${env}/schedules?status=pending`)).schedules).toHaveLength(2);
  }, 60_000);

  it('the conflict check names a scheduled rule edit a mapping save would make fail', async () => {
    const env = 'rule-conflict';
    await prepare(srv, env);
    const rule = await schedule(srv, env, 3_600_000, [{ op: 'rule.set', id: 'Game', rule: 0, segment: 'hard', mod: [0, 99], disabled: false }], 'ten percent');
    const check = await ok<Check>(srv, 'POST', `environments/${env}/schedules/check`, { ops: [{ op: 'mapping.put', id: 'Game', mapping: { rules: [{ segment: 'easy', patch: { level: 0 } }] } }] });
    expect(check.conflicts.map((c) => [c.id, c.note, c.error?.code])).toEqual([[rule, 'ten percent', 'target_changed']]);
  }, 60_000);
});
