/**
 * Scheduled changes, rollouts and the kill switch as the store keeps them: one contract, every store
 * (a SQLite file, in-memory SQLite, a real PostgreSQL database). Due times are a few hundred ms
 * ahead on the real clock.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../src/store/index.js';
import type { ContentDetail } from '../../../src/store/types.js';
import { call, type Step } from '../../../src/store/ops/rows.js';
import type { ChangeOp } from '../../../src/store/schedule/change-op.js';
import {
  applyDue,
  cancelOfToken,
  cancelSchedule,
  createSchedule,
  kill,
  moveSchedule,
  rehearseDue,
  type NewSchedule,
} from '../../../src/store/schedule/lifecycle.js';
import type { ScheduleLimits } from '../../../src/store/schedule/limits.js';
import { contentAt } from '../../../src/store/schedule/replay.js';
import { advanceRollout, createRollout, pauseRollout, readRollout, rollBackRollout } from '../../../src/store/schedule/rollouts.js';
import type { ScheduleRow } from '../../../src/store/schedule/rows.js';
import { MAPPING, rejectsWith, tempDir } from './helpers.js';
import { STORE_KINDS, openStoreOfKind } from './kinds.js';

const LIMITS: ScheduleLimits = { maxAheadMs: 86_400_000, maxOpen: 50 };
const BASE = '{"level":1,"color":"green"}';

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function* rowsOf(envId: string): Step<ScheduleRow[]> {
  return yield* call('listSchedules', { envIds: [envId], incoming: false, idLower: null, statuses: null, fromMs: null, toMs: null, rolloutId: null, limit: 1000 });
}

function put(id: string, json: unknown): ChangeOp {
  return { op: 'content.put', id, text: JSON.stringify(json), minAppVersion: null };
}

describe.concurrent.each(STORE_KINDS)('scheduled changes (%s)', (kind) => {
  let store: Store;
  let cleanup: () => Promise<void> | void = () => undefined;

  beforeEach(async () => {
    ({ store, cleanup } = await openStoreOfKind(kind));
    await store.putEnvironment('live');
    await store.putEnvironment('qa');
    await store.putContent('live', 'Shop', BASE, null);
  });

  afterEach(async () => {
    await store.close();
    await cleanup();
  });

  function schedule(ops: ChangeOp[], inMs = 300, extra: Partial<NewSchedule> = {}): Promise<ScheduleRow> {
    return store.writeStep(() => createSchedule({ envId: 'live', dueMs: Date.now() + inMs, ops, note: '', createdBy: 'cli', tokenId: 'tok_a', ...extra }, LIMITS));
  }

  async function newest(env: string, id: string): Promise<unknown> {
    const d = await store.getContent(env, id);
    return d === undefined ? undefined : JSON.parse(d.revisions[d.revisions.length - 1]!.text) as unknown;
  }

  it.sequential('applies a change at its time, not before, exactly once', async () => {
    const row = await schedule([put('Shop', { level: 2 })], 400);
    expect(row.status).toBe('pending');
    expect(await store.writeStep(() => applyDue(10))).toEqual([]);
    expect(await newest('live', 'Shop')).toEqual({ level: 1, color: 'green' });
    await sleep(450);
    const settled = await store.writeStep(() => applyDue(10));
    expect(settled.map((s) => [s.row.schedule_id, s.row.status, s.error])).toEqual([[row.schedule_id, 'applied', null]]);
    expect(settled[0]!.row.late_ms).toBeGreaterThanOrEqual(0);
    expect(settled[0]!.results).toEqual([expect.objectContaining({ op: 'content.put', id: 'Shop', changed: true, revision: 2 })]);
    expect(await newest('live', 'Shop')).toEqual({ level: 2 });
    expect(await store.writeStep(() => applyDue(10))).toEqual([]);
    expect((await store.getContent('live', 'Shop'))!.revisions).toHaveLength(2);
  });

  it.sequential('refuses at scheduling what the write would refuse now, and keeps nothing', async () => {
    await rejectsWith(schedule([{ op: 'mapping.put', id: 'Shop', mapping: { rules: [{ segment: 's', patch: [{ op: 'remove', path: '/nope' }] }] } }]), 'invalid_mapping');
    await rejectsWith(schedule([{ op: 'mapping.delete', id: 'Nope' }]), 'content_not_found');
    await rejectsWith(schedule([{ op: 'content.rollback', id: 'Shop', to: 7 }]), 'not_found');
    await rejectsWith(schedule([{ op: 'content.put', id: 'Shop', text: '{}', minAppVersion: null, baseRevision: 3 }]), 'base_revision_changed');
    await rejectsWith(schedule([{ op: 'sync', to: 'nowhere' }]), 'not_found');
    await rejectsWith(schedule([put('Shop', { level: 2 })], -10), 'invalid_body');
    await rejectsWith(schedule([put('Shop', { level: 2 })], LIMITS.maxAheadMs + 60_000), 'invalid_body');
    expect(await store.readStep(() => rowsOf('live'))).toEqual([]);
    // The rehearsal rolled back: the content is as it was.
    expect((await store.getContent('live', 'Shop'))!.revisions).toHaveLength(1);
    expect(await store.getContent('live', 'Nope')).toBeUndefined();
  });

  it.sequential('rehearses a change after the pending changes of its items: one may build on another', async () => {
    await schedule([put('Event', { on: true })], 300);
    const mapping = { rules: [{ segment: 'eu', when: { region: 'eu' }, patch: { on: false } }] };
    const later = await schedule([{ op: 'mapping.put', id: 'Event', mapping, baseRevision: 1 }], 600);
    expect(later.status).toBe('pending');
    await sleep(650);
    const settled = await store.writeStep(() => applyDue(10));
    expect(settled.map((s) => s.row.status)).toEqual(['applied', 'applied']);
    expect((await store.getContent('live', 'Event'))!.mapping).toEqual(mapping);
  });

  it.sequential('a change that became invalid by its time fails with its reason, writing nothing; the others apply', async () => {
    const colorPatch = { rules: [{ segment: 's', patch: [{ op: 'replace', path: '/color', value: 'x' }] }] };
    const doomed = await schedule([put('Banner', { a: 1 }), { op: 'mapping.put', id: 'Shop', mapping: colorPatch }], 300);
    const pinned = await schedule([{ op: 'content.put', id: 'Shop', text: '{"level":7}', minAppVersion: null, baseRevision: 1 }], 300);
    const fine = await schedule([put('Other', { a: 1 })], 300);
    // Someone edits the item meanwhile: the patch no longer applies, the pinned base moved.
    await store.putContent('live', 'Shop', '{"level":1}', null);
    await sleep(350);
    const settled = await store.writeStep(() => applyDue(10));
    const byId = new Map(settled.map((s) => [s.row.schedule_id, s]));
    expect(byId.get(doomed.schedule_id)?.row.status).toBe('failed');
    expect(byId.get(doomed.schedule_id)?.error?.code).toBe('invalid_mapping');
    expect(byId.get(pinned.schedule_id)?.row.status).toBe('failed');
    expect(byId.get(pinned.schedule_id)?.error?.code).toBe('base_revision_changed');
    expect(byId.get(fine.schedule_id)?.row.status).toBe('applied');
    // Nothing of the failed changes: the first op of the doomed one was rolled back with it.
    expect(await store.getContent('live', 'Banner')).toBeUndefined();
    const shop = await store.getContent('live', 'Shop');
    expect(shop!.revisions.map((r) => JSON.parse(r.text) as unknown)).toEqual([{ level: 1, color: 'green' }, { level: 1 }]);
    expect(shop!.mapping).toBeNull();
    expect(await newest('live', 'Other')).toEqual({ a: 1 });
  });

  it.sequential('rehearses what falls due on each write connection before its time, keeping nothing', async () => {
    const doomed = await schedule([{ op: 'content.put', id: 'Shop', text: '{"level":7}', minAppVersion: null, baseRevision: 1 }], 400);
    const fine = await schedule([put('Shop', { level: 2 }), put('Banner', { a: 1 })], 400);
    const head = (await store.changesSince(0, 1000)).headSeq;
    // Both changes run and rolled back; then the same with the pinned one refused.
    await store.writeStepOnEach(() => rehearseDue(fine.due_ms, 8));
    // Someone edits the item meanwhile: the pinned change is refused in the next rehearsal.
    await store.putContent('live', 'Shop', '{"level":1}', null);
    await store.writeStepOnEach(() => rehearseDue(fine.due_ms, 8));
    expect((await store.changesSince(head, 1000)).entries.map((e) => [e.kind, e.target])).toEqual([['content', 'shop']]);
    expect(await store.getContent('live', 'Banner')).toBeUndefined();
    expect((await store.getContent('live', 'Shop'))!.revisions).toHaveLength(2);
    expect((await store.readStep(() => rowsOf('live'))).map((r) => r.status)).toEqual(['pending', 'pending']);
    await sleep(450);
    const settled = await store.writeStep(() => applyDue(10));
    const byId = new Map(settled.map((s) => [s.row.schedule_id, s]));
    expect(byId.get(fine.schedule_id)?.row.status).toBe('applied');
    expect(byId.get(fine.schedule_id)?.results).toEqual([
      expect.objectContaining({ op: 'content.put', id: 'Shop', revision: 3 }),
      expect.objectContaining({ op: 'content.put', id: 'Banner', revision: 1 }),
    ]);
    expect(byId.get(doomed.schedule_id)?.error?.code).toBe('base_revision_changed');
    expect(await newest('live', 'Shop')).toEqual({ level: 2 });
  });

  it.sequential('shows an item as it will be at a time, storing nothing', async () => {
    await schedule([put('Shop', { level: 2 })], 5_000);
    await schedule([put('Shop', { level: 3 })], 10_000);
    const at = (ms: number): Promise<unknown> =>
      store.snapshotStep(() => contentAt('live', 'Shop', Date.now() + ms, 100)).then((d) => JSON.parse(d!.revisions[d!.revisions.length - 1]!.text) as unknown);
    expect(await at(1_000)).toEqual({ level: 1, color: 'green' });
    expect(await at(6_000)).toEqual({ level: 2 });
    expect(await at(60_000)).toEqual({ level: 3 });
    expect((await store.getContent('live', 'Shop'))!.revisions).toHaveLength(1);
    expect(await store.snapshotStep(() => contentAt('live', 'Later', Date.now() + 60_000, 100))).toBeUndefined();
  });

  it.sequential('replays a preview in memory: deletes, re-creations, mappings and a failing change as they will apply, at most maxOps ops', async () => {
    await store.putMapping('live', 'Shop', { rules: [{ segment: 'a', patch: { color: 'red' } }] });
    // Pinned to revision 1: refused at its time (the item re-created before it is at revision 2), skipped as the applier will.
    await schedule([{ op: 'content.put', id: 'Shop', text: '{"level":11}', minAppVersion: null, baseRevision: 1 }], 5_000);
    await schedule([{ op: 'content.delete', id: 'Shop' }], 2_000);
    await schedule([put('Shop', { level: 9 })], 3_000);
    await schedule([put('Shop', { level: 9, color: 'blue' })], 3_500);
    await schedule([{ op: 'mapping.put', id: 'Shop', mapping: { rules: [{ segment: 'b', patch: { level: 10 } }] } }], 4_000);
    const view = (ms: number, maxOps = 100): Promise<ContentDetail | undefined> => store.snapshotStep(() => contentAt('live', 'Shop', Date.now() + ms, maxOps));
    expect(await view(2_500)).toBeUndefined();
    const recreated = (await view(3_200))!;
    expect(recreated.revisions.map((r) => r.number)).toEqual([1]);
    expect(recreated.mapping).toBeNull();
    const mapped = (await view(60_000))!;
    expect(mapped.revisions.map((r) => r.number)).toEqual([1, 2]);
    expect(mapped.mapping).toEqual({ rules: [{ segment: 'b', patch: { level: 10 } }] });
    expect(JSON.parse(mapped.revisions[1]!.text)).toEqual({ level: 9, color: 'blue' });
    await rejectsWith(view(60_000, 2), 'preview_too_large');
    // Nothing of it reached the store.
    const now = (await store.getContent('live', 'Shop'))!;
    expect(now.revisions).toHaveLength(1);
    expect(now.mapping).toEqual({ rules: [{ segment: 'a', patch: { color: 'red' } }] });
  });

  it.sequential('moves and cancels only open changes; a cancelled one never applies', async () => {
    const a = await schedule([put('Shop', { level: 2 })], 300);
    const moved = await store.writeStep(() => moveSchedule('live', a.schedule_id, Date.now() + 60_000, LIMITS, () => undefined));
    expect(moved.due_ms).toBeGreaterThan(Date.now() + 50_000);
    const cancelled = await store.writeStep(() => cancelSchedule('live', a.schedule_id, 'changed my mind', () => undefined));
    expect(cancelled.status).toBe('cancelled');
    await rejectsWith(store.writeStep(() => cancelSchedule('live', a.schedule_id, 'again', () => undefined)), 'conflict');
    await rejectsWith(store.writeStep(() => cancelSchedule('qa', a.schedule_id, 'other env', () => undefined)), 'not_found');
    await sleep(350);
    expect(await store.writeStep(() => applyDue(10))).toEqual([]);
  });

  it.sequential('bounds how many changes wait: too_many_schedules past the limit', async () => {
    const limits = { ...LIMITS, maxOpen: 2 };
    const make = (): Promise<ScheduleRow> =>
      store.writeStep(() => createSchedule({ envId: 'live', dueMs: Date.now() + 60_000, ops: [put('Shop', {})], note: '', createdBy: 'cli', tokenId: 't' }, limits));
    await make();
    await make();
    await rejectsWith(make(), 'too_many_schedules');
  });

  it.sequential('cancels what a token scheduled when it is revoked, and what an environment deletion leaves', async () => {
    const mine = await schedule([put('Shop', { level: 2 })], 60_000, { tokenId: 'tok_gone' });
    const other = await schedule([put('Shop', { level: 3 })], 60_000, { tokenId: 'tok_stays' });
    const cancelled = await store.writeStep(() => cancelOfToken('tok_gone'));
    expect(cancelled.map((r) => r.schedule_id)).toEqual([mine.schedule_id]);
    const gone = await store.deleteEnvironment('live', true);
    expect(gone.map((r) => r.schedule_id)).toEqual([other.schedule_id]);
  });

  it.sequential('the kill switch disables a rule and cancels the item\'s pending changes in one write', async () => {
    await store.putMapping('live', 'Shop', MAPPING);
    const pending = await schedule([put('Shop', { level: 9 })], 60_000);
    const result = await store.writeStep(() => kill('live', 'Shop', 1, 'exp1'));
    expect(result.cancelled.map((r) => r.schedule_id)).toEqual([pending.schedule_id]);
    expect(result.mapping.ruleCount).toBe(1);
    const mapping = (await store.getContent('live', 'Shop'))!.mapping as { rules: { disabled?: boolean }[] };
    expect(mapping.rules.map((r) => r.disabled === true)).toEqual([false, true]);
    await rejectsWith(store.writeStep(() => kill('live', 'Shop', 0, 'not-vip')), 'target_changed');
    const all = await store.writeStep(() => kill('live', 'Shop', null, null));
    expect(all.mapping.ruleCount).toBe(0);
    await rejectsWith(store.writeStep(() => kill('live', 'Nope', null, null)), 'content_not_found');
  });

  it.sequential('a rollout widens the range from a fixed start; pause holds it; rollback restores the rule', async () => {
    await store.putMapping('live', 'Shop', { rules: [{ segment: 'new-curve', disabled: true, patch: { level: 2 } }] });
    const now = Date.now();
    const created = await store.writeStep(() =>
      createRollout(
        { envId: 'live', id: 'Shop', rule: 0, variant: null, start: null, steps: [{ percent: 5, dueMs: now + 300 }, { percent: 25, dueMs: now + 60_000 }, { percent: 100, dueMs: now + 120_000 }], note: '', createdBy: 'cli', tokenId: 't' },
        LIMITS,
      ),
    );
    expect(JSON.parse(created.rollout.steps)).toEqual([
      expect.objectContaining({ percent: 5, mod: [0, 49] }),
      expect.objectContaining({ percent: 25, mod: [0, 249] }),
      expect.objectContaining({ percent: 100, mod: [0, 999] }),
    ]);
    await sleep(350);
    expect((await store.writeStep(() => applyDue(10))).map((s) => s.row.status)).toEqual(['applied']);
    expect((await store.getContent('live', 'Shop'))!.mapping).toEqual({ rules: [{ segment: 'new-curve', patch: { level: 2 }, mod: [0, 49] }] });
    const id = created.rollout.rollout_id;
    await store.writeStep(() => pauseRollout('live', id, true));
    await rejectsWith(store.writeStep(() => advanceRollout('live', id)), 'conflict');
    await store.writeStep(() => pauseRollout('live', id, false));
    await store.writeStep(() => advanceRollout('live', id));
    expect((await store.writeStep(() => applyDue(10))).map((s) => s.row.status)).toEqual(['applied']);
    expect(((await store.getContent('live', 'Shop'))!.mapping as { rules: { mod: number[] }[] }).rules[0]!.mod).toEqual([0, 249]);
    const back = await store.writeStep(() => rollBackRollout('live', id));
    expect(back.cancelled).toHaveLength(1);
    expect((await store.getContent('live', 'Shop'))!.mapping).toEqual({ rules: [{ segment: 'new-curve', patch: { level: 2 }, disabled: true }] });
    const view = await store.readStep(() => readRollout('live', id));
    expect(view.rollout.status).toBe('rolled_back');
    expect(view.steps.map((s) => s.status)).toEqual(['applied', 'applied', 'cancelled']);
  });

  it.sequential('refuses a rollout whose ranges would not grow from its start or pass mod 999', async () => {
    await store.putMapping('live', 'Shop', MAPPING);
    const plan = (steps: { percent: number; dueMs: number }[], rule = 0, variant: string | null = null, start: number | null = null): Promise<unknown> =>
      store.writeStep(() => createRollout({ envId: 'live', id: 'Shop', rule, variant, start, steps, note: '', createdBy: 'cli', tokenId: 't' }, LIMITS));
    const t = Date.now() + 60_000;
    await rejectsWith(plan([{ percent: 25, dueMs: t }, { percent: 5, dueMs: t + 1 }]), 'invalid_body');
    await rejectsWith(plan([{ percent: 100, dueMs: t }], 0, null, 10), 'invalid_body');
    await rejectsWith(plan([{ percent: 0.05, dueMs: t }]), 'invalid_body');
    await rejectsWith(plan([{ percent: 5, dueMs: t }], 1), 'invalid_body');
    // Rule 0 serves everyone now (no range): a first step below 100% would take players out.
    await rejectsWith(plan([{ percent: 5, dueMs: t }, { percent: 100, dueMs: t + 1 }]), 'rollout_shrinks');
    // Variant A serves 0..499: a first step of 40% from 0 would take 400..499 out.
    await rejectsWith(plan([{ percent: 40, dueMs: t }], 1, 'A'), 'rollout_shrinks');
    // Variant B's range may not grow over A's: the rehearsal refuses the overlap.
    await rejectsWith(plan([{ percent: 60, dueMs: t }], 1, 'B', 400), 'invalid_mapping');
    expect(await store.readStep(() => rowsOf('live'))).toEqual([]);
  });
});

describe.concurrent.each(STORE_KINDS)('scheduled changes in bundles (%s)', (kind) => {
  let store: Store;
  let cleanup: () => Promise<void> | void = () => undefined;
  beforeEach(async () => {
    ({ store, cleanup } = await openStoreOfKind(kind));
  });
  afterEach(async () => {
    await store.close();
    await cleanup();
  });

  it.sequential('export carries the open changes and rollouts; an import brings them back once, checked', async () => {
    const at = (ms: number): string => new Date(Date.now() + ms).toISOString();
    const bundle = {
      environments: { live: { content: { Shop: { json: { level: 1 }, mapping: { rules: [{ segment: 'new', disabled: true, patch: { level: 2 } }] } } } } },
      schedules: [{ env: 'live', at: at(30_000), ops: [{ op: 'content.put', id: 'Event', json: { on: true } }], note: 'event on' }],
      rollouts: [{ env: 'live', id: 'Shop', rule: 0, steps: [{ percent: 10, at: at(60_000) }, { percent: 100, at: at(120_000) }] }],
    };
    expect(await store.importBundle(bundle)).toMatchObject({ environmentsCreated: 1, schedulesAdded: 1, rolloutsAdded: 1 });
    expect(await store.importBundle(bundle)).toMatchObject({ environmentsCreated: 0, schedulesAdded: 0, rolloutsAdded: 0 });
    const open = await store.readStep(() => rowsOf('live'));
    expect(open.map((r) => [r.created_by, r.rollout_id === null])).toEqual([['import', true], ['import', false], ['import', false]]);
    const exported = (await store.exportBundle()) as typeof bundle;
    expect(exported.schedules).toEqual([{ env: 'live', at: new Date(Date.parse(bundle.schedules[0]!.at)).toISOString(), ops: [{ op: 'content.put', id: 'Event', text: '{\n  "on": true\n}', minAppVersion: null }], note: 'event on' }]);
    expect(exported.rollouts).toEqual([{ env: 'live', id: 'Shop', rule: 0, variant: null, start: 0, steps: bundle.rollouts[0]!.steps.map((st) => ({ percent: st.percent, at: new Date(Date.parse(st.at)).toISOString() })) }]);
    // Into another store, the export is the same plan again.
    const other = await openStore('memory:');
    try {
      expect(await other.importBundle(exported)).toMatchObject({ schedulesAdded: 1, rolloutsAdded: 1 });
      expect(await other.exportBundle()).toEqual(exported);
    } finally {
      await other.close();
    }
  });

  it.sequential('refuses a bundle whose change would be refused, naming it, and writes nothing of the bundle', async () => {
    const bundle = {
      environments: { live: { content: { Shop: { json: { level: 1 } } } } },
      schedules: [
        { env: 'live', at: new Date(Date.now() + 60_000).toISOString(), ops: [{ op: 'mapping.delete', id: 'Shop' }] },
        { env: 'live', at: 'tomorrow', ops: [{ op: 'content.delete', id: 'Shop' }] },
      ],
    };
    const err = await rejectsWith(store.importBundle(bundle), 'invalid_bundle');
    expect(err.details).toEqual([{ path: '/schedules/1/at', reason: expect.stringContaining('RFC 3339') as unknown }]);
    const refused = await rejectsWith(store.importBundle({ ...bundle, schedules: [bundle.schedules[0]] }), 'invalid_bundle');
    expect(refused.details).toEqual([{ path: '/schedules/0', reason: expect.stringContaining('not_found') as unknown }]);
    expect(await store.listEnvironments()).toEqual([]);
  });
});

describe('two appliers on one SQLite file', () => {
  it('apply a due change once', async () => {
    const t = tempDir();
    const url = `sqlite:${join(t.dir, 'rcd.db')}`;
    const a = await openStore(url);
    const b = await openStore(url);
    try {
      await a.putEnvironment('live');
      const row = await a.writeStep(() =>
        createSchedule({ envId: 'live', dueMs: Date.now() + 200, ops: [put('X', { n: 1 })], note: '', createdBy: 'cli', tokenId: 't' }, LIMITS),
      );
      await sleep(250);
      const [ra, rb] = await Promise.all([a.writeStep(() => applyDue(10)), b.writeStep(() => applyDue(10))]);
      expect([...ra, ...rb].map((s) => s.row.schedule_id)).toEqual([row.schedule_id]);
      expect((await a.getContent('live', 'X'))!.revisions).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
      t.cleanup();
    }
  });
});
