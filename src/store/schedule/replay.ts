/**
 * Pending scheduled changes replayed as they will apply, in memory over what the store reads
 * (ops/overlay.ts), nothing kept: the rehearsal of a change before it is scheduled or moved, and the
 * preview of an item as it will be at a time. Also the savepoint runner both the replay and the
 * applier (lifecycle.ts) try a batch of changes with.
 */
import { RcdError } from '../../runtime/errors.js';
import { isoOf } from '../../shared/instant.js';
import { contentIdKey } from '../ids.js';
import type { ContentDetail } from '../types.js';
import { contentDetailOf } from '../ops/content.js';
import { inMemory } from '../ops/overlay.js';
import { call, type ScheduleItem, type Step } from '../ops/rows.js';
import { applyAll, type ChangeSet } from './batch.js';
import { applyOps, type OpResult } from './changes.js';
import type { ChangeOp } from './change-op.js';
import type { ScheduleRow } from './rows.js';

/**
 * Applies the ops as they would apply at `dueMs` (after the pending changes of the same items due
 * before it), in memory over the transaction's state (ops/overlay.ts), keeping nothing: a refusal
 * throws, so nothing is scheduled that would be refused at its time as things stand now. A change
 * of plain content puts (no base revision) is refused or not whatever applies before it (only its
 * environment must exist, and a pending change never removes one): nothing is replayed for it, so
 * scheduling one costs the same however many changes of the item are pending.
 */
export function* rehearse(envId: string, ops: readonly ChangeOp[], items: readonly ScheduleItem[], dueMs: number, scheduleId: string): Step<OpResult[]> {
  return yield* inMemory(
    (function* () {
      if (!ops.every(isPlainPut)) yield* replayBefore(envId, items, dueMs, scheduleId);
      return yield* applyOps(envId, ops);
    })(),
  );
}

function isPlainPut(op: ChangeOp): boolean {
  return op.op === 'content.put' && op.baseRevision === undefined;
}

/** The pending changes of these items that apply before (dueMs, id), applied as they will be. */
function* replayBefore(envId: string, items: readonly ScheduleItem[], dueMs: number, beforeId: string): Step<void> {
  const keys = items.filter((i) => i.envId === envId).map((i) => i.idLower);
  yield* replay(yield* call('pendingTouching', envId, keys, dueMs, beforeId));
}

/** What replaying one pending change did: applied (error null) or refused, and skipped. */
export interface Replayed {
  readonly row: ScheduleRow;
  readonly error: RcdError | null;
}

/**
 * Applies pending changes in order, as they will apply: all together (applyAll), or, when one of
 * them would be refused, one by one, each in its own savepoint, the refused ones skipped.
 */
export function* replay(rows: readonly ScheduleRow[]): Step<Replayed[]> {
  if (rows.length === 0) return [];
  if (yield* together('replay_all', () => applyAll(rows.map(changeSetOf)))) return rows.map((row) => ({ row, error: null }));
  return yield* replayEach(rows);
}

/** The changes one by one, each in its own savepoint: a refused one is rolled back alone and skipped. */
export function* replayEach(rows: readonly ScheduleRow[]): Step<Replayed[]> {
  const out: Replayed[] = [];
  for (const earlier of rows) {
    yield* call('savepoint', 'replay');
    let error: RcdError | null = null;
    try {
      yield* applyOps(earlier.env_id, JSON.parse(earlier.ops) as ChangeOp[]);
    } catch (err) {
      if (!isRefusal(err)) throw err;
      error = err;
      yield* call('rollbackTo', 'replay');
    }
    yield* call('releaseSavepoint', 'replay');
    out.push({ row: earlier, error });
  }
  return out;
}

/**
 * Runs `step` in a savepoint: true when it went through (kept), false when anything failed (undone:
 * a refusal, or a statement error, which aborts a PostgreSQL transaction up to the savepoint). A
 * store that is gone fails the rollback too, and that propagates.
 */
export function* together(name: string, step: () => Step<unknown>): Step<boolean> {
  yield* call('savepoint', name);
  try {
    yield* step();
  } catch {
    yield* call('rollbackTo', name);
    yield* call('releaseSavepoint', name);
    return false;
  }
  yield* call('releaseSavepoint', name);
  return true;
}

export function changeSetOf(row: ScheduleRow): ChangeSet {
  return { envId: row.env_id, ops: JSON.parse(row.ops) as ChangeOp[] };
}

/** A write's own refusal (4xx): the change is wrong for the state it meets. Anything else is the store's failure. */
export function isRefusal(err: unknown): err is RcdError {
  return err instanceof RcdError && err.status < 500;
}

/**
 * The content item as it will be at `atMs` (pending changes of it due by then applied), nothing
 * kept: the replay runs in memory (ops/overlay.ts) over what the store reads, so the caller runs it
 * in a read snapshot (Store.snapshotStep) and no write lock is taken. At most `maxOps` ops of
 * pending changes are replayed: past that, preview_too_large, before any is.
 */
export function* contentAt(envId: string, id: string, atMs: number, maxOps: number): Step<ContentDetail | undefined> {
  return yield* inMemory(contentAtInMemory(envId, id, atMs, maxOps));
}

/**
 * contentAt, with the item as it is now (read first, from the same snapshot) and the pending
 * changes replayed to reach `atMs`, each with whether it applied or would be refused.
 */
export function* contentNowAndAt(envId: string, id: string, atMs: number, maxOps: number): Step<{ now: ContentDetail | undefined; at: ContentDetail | undefined; changes: Replayed[] }> {
  return yield* inMemory(
    (function* () {
      const now = yield* contentDetailOf(envId, id);
      const changes = yield* replayDue(envId, id, atMs, maxOps);
      return { now, at: yield* contentDetailOf(envId, id), changes };
    })(),
  );
}

function* contentAtInMemory(envId: string, id: string, atMs: number, maxOps: number): Step<ContentDetail | undefined> {
  yield* replayDue(envId, id, atMs, maxOps);
  return yield* contentDetailOf(envId, id);
}

/** Replays the item's pending changes due by `atMs` (at most `maxOps` ops of them, else preview_too_large). */
function* replayDue(envId: string, id: string, atMs: number, maxOps: number): Step<Replayed[]> {
  // Every change due at atMs counts: '\u{10ffff}' sorts after every schedule id.
  const pending = yield* call('pendingTouching', envId, [contentIdKey(id)], atMs, '\u{10ffff}');
  requireReplayable(pending, maxOps, `apply before ${isoOf(atMs)}`, 'preview an earlier time');
  return yield* replay(pending);
}

/** Refuses (preview_too_large) a replay of more than `maxOps` ops: `what` and `instead` complete the message. */
export function requireReplayable(pending: readonly ScheduleRow[], maxOps: number, what: string, instead: string): void {
  let ops = 0;
  for (const row of pending) ops += (JSON.parse(row.ops) as unknown[]).length;
  if (ops > maxOps) {
    throw new RcdError('preview_too_large', `${pending.length} pending changes of ${ops} ops ${what}, more than a preview replays (--preview-max-ops ${maxOps}); ${instead}`, { changes: pending.length, ops, maxOps });
  }
}
