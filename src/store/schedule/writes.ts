/**
 * What a scheduled change writes, item by item: each item it names as it is now, as it will be just
 * before the change's time (the pending changes of the same items due before it replayed, in their
 * order, as the rehearsal replays them: replay.ts), and as the change leaves it. All in memory over
 * what the store reads (ops/overlay.ts), nothing kept: the caller runs it in a read snapshot.
 */
import { RcdError } from '../../runtime/errors.js';
import { contentIdKey } from '../ids.js';
import { inMemory } from '../ops/overlay.js';
import { call, type Step } from '../ops/rows.js';
import { applyOps } from './changes.js';
import type { ChangeOp } from './change-op.js';
import { requireSchedule } from './lifecycle.js';
import { isRefusal, replay, requireReplayable, type Replayed } from './replay.js';
import { OPEN_STATUSES, type ScheduleRow } from './rows.js';

/** One item's state: its newest revision and its mapping; null when the item does not exist. */
export interface ItemState {
  readonly revision: number;
  readonly hash: string;
  readonly text: string;
  readonly minAppVersion: string | null;
  readonly mapping: unknown;
}

export interface ItemWrites {
  readonly env: string;
  /** As the change names it. */
  readonly id: string;
  readonly now: ItemState | null;
  /** Just before the change's time; undefined for a settled change (it has no time ahead). */
  readonly before?: ItemState | null;
  /** As the change leaves it; undefined for a settled change and for one that would be refused. */
  readonly after?: ItemState | null;
}

export interface ChangeWrites {
  readonly row: ScheduleRow;
  readonly items: readonly ItemWrites[];
  /** The pending changes replayed to reach the state just before it, each applied or refused. */
  readonly earlier: readonly Replayed[];
  /** What the change would be refused with at its time as things stand, or null. */
  readonly error: RcdError | null;
}

export function* itemState(envId: string, id: string): Step<ItemState | null> {
  const content = yield* call('findContent', envId, contentIdKey(id));
  if (content === undefined) return null;
  const newest = yield* call('newestRevision', content.content_pk);
  if (newest === undefined) return null;
  const mapping = yield* call('getMapping', content.mapping_id);
  return { revision: newest.number, hash: newest.hash, text: newest.text, minAppVersion: newest.min_app_version, mapping: mapping === undefined ? null : (JSON.parse(mapping.json) as unknown) };
}

/**
 * The items the ops write, once each, in the order they are named: an op's item in `envId`, a
 * sync's named items in its target environment. A sync of every item names none.
 */
export function writtenItems(envId: string, ops: readonly ChangeOp[]): { env: string; id: string }[] {
  const out = new Map<string, { env: string; id: string }>();
  const add = (env: string, id: string): void => {
    const k = env + '\0' + contentIdKey(id);
    if (!out.has(k)) out.set(k, { env, id });
  };
  for (const op of ops) {
    if (op.op !== 'sync') add(envId, op.id);
    else for (const id of op.ids ?? []) add(op.to, id);
  }
  return [...out.values()];
}

function* statesOf(items: readonly { env: string; id: string }[]): Step<(ItemState | null)[]> {
  const out: (ItemState | null)[] = [];
  for (const i of items) out.push(yield* itemState(i.env, i.id));
  return out;
}

/**
 * The change `scheduleId` of `envId`, and what it writes. Open: now, before (at most `maxOps` ops
 * of earlier pending changes replayed, else preview_too_large) and after; settled: now only.
 */
export function* changeWrites(envId: string, scheduleId: string, maxOps: number): Step<ChangeWrites> {
  return yield* inMemory(
    (function* () {
      const row = yield* requireSchedule(envId, scheduleId);
      const ops = JSON.parse(row.ops) as ChangeOp[];
      const items = writtenItems(envId, ops);
      const now = yield* statesOf(items);
      if (!OPEN_STATUSES.includes(row.status)) return { row, items: items.map((i, k) => ({ ...i, now: now[k]! })), earlier: [], error: null };
      const keys = [...new Set(items.filter((i) => i.env === envId).map((i) => contentIdKey(i.id)))];
      const pending = yield* call('pendingTouching', envId, keys, row.due_ms, row.schedule_id);
      requireReplayable(pending, maxOps, 'apply before it', 'see it closer to its time');
      const earlier = yield* replay(pending);
      const before = yield* statesOf(items);
      let error: RcdError | null = null;
      try {
        yield* applyOps(envId, ops);
      } catch (err) {
        if (!isRefusal(err)) throw err;
        error = err;
      }
      const after = error === null ? yield* statesOf(items) : null;
      return {
        row,
        items: items.map((i, k) => ({ ...i, now: now[k]!, before: before[k]!, ...(after === null ? {} : { after: after[k]! }) })),
        earlier,
        error,
      };
    })(),
  );
}
