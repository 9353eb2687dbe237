/**
 * Conflicts: the pending changes a write would make fail later. A write (made now, scheduled at a
 * time, or replacing the ops of a pending change) is tried in memory over what the store reads
 * (ops/overlay.ts), nothing kept, against the pending changes of the items it writes: they are
 * replayed one by one in their order without the write and with it, and each that applies without
 * it but is refused with it (its pinned revision moved on, its item deleted, its patch no longer
 * applying) is a conflict, named with the refusal it would meet.
 */
import { RcdError } from '../../runtime/errors.js';
import { isoOf } from '../../shared/instant.js';
import { inMemory } from '../ops/overlay.js';
import { call, type Step } from '../ops/rows.js';
import { applyOps, itemsOf } from './changes.js';
import type { ChangeOp } from './change-op.js';
import { requireSchedule } from './lifecycle.js';
import { isRefusal, replayEach, requireReplayable } from './replay.js';
import { OPEN_STATUSES, type ScheduleRow } from './rows.js';

export interface ProposedWrite {
  readonly envId: string;
  readonly ops: readonly ChangeOp[];
  /** When it takes effect (Unix ms); null: now. */
  readonly atMs: number | null;
  /** The pending change whose ops these would replace (at its time), or null. */
  readonly replaces: string | null;
}

export interface Conflict {
  readonly row: ScheduleRow;
  readonly error: RcdError;
}

export interface ConflictCheck {
  /** What the write itself would be refused with (now, or at its time), or null. */
  readonly refused: RcdError | null;
  readonly conflicts: readonly Conflict[];
  /** How many pending changes of its items were tried. */
  readonly checked: number;
}

/** Sorts after every schedule id: a write proposed now is created after every change there is. */
const NEWEST_ID = '\u{10ffff}';

/** At most `maxOps` ops of pending changes are replayed (twice), else preview_too_large. */
export function* checkConflicts(w: ProposedWrite, maxOps: number): Step<ConflictCheck> {
  return yield* inMemory(checkInMemory(w, maxOps));
}

function* checkInMemory(w: ProposedWrite, maxOps: number): Step<ConflictCheck> {
  const replaced = w.replaces === null ? null : yield* requireSchedule(w.envId, w.replaces);
  if (replaced !== null && !OPEN_STATUSES.includes(replaced.status)) {
    throw new RcdError('conflict', `scheduled change ${replaced.schedule_id} is ${replaced.status}; only a pending or paused change can be changed`, { status: replaced.status });
  }
  const replacedOps = replaced === null ? [] : (JSON.parse(replaced.ops) as ChangeOp[]);
  const keys = [...new Set([...itemsOf(w.envId, w.ops), ...itemsOf(w.envId, replacedOps)].filter((i) => i.envId === w.envId).map((i) => i.idLower))];
  const pending = (yield* call('pendingTouching', w.envId, keys, Number.MAX_SAFE_INTEGER, NEWEST_ID)).filter((r) => r.schedule_id !== w.replaces);
  requireReplayable(pending, maxOps, 'write these items', 'check fewer items at a time');

  const proposed: ScheduleRow = {
    ...(replaced ?? emptyRow(w.envId)),
    schedule_id: replaced?.schedule_id ?? NEWEST_ID,
    due_ms: replaced?.due_ms ?? w.atMs ?? 0,
    ops: JSON.stringify(w.ops),
  };
  const without = yield* outcomes(replaced === null ? pending : inOrder([...pending, replaced]));
  let refused: RcdError | null = null;
  yield* call('savepoint', 'check');
  let withIt: Map<string, RcdError | null>;
  if (w.atMs === null && replaced === null) {
    try {
      yield* applyOps(w.envId, w.ops);
    } catch (err) {
      if (!isRefusal(err)) throw err;
      refused = err;
    }
    // A write that is refused is not made: it makes nothing fail.
    withIt = refused === null ? yield* outcomes(pending) : without;
  } else {
    withIt = yield* outcomes(inOrder([...pending, proposed]));
    refused = withIt.get(proposed.schedule_id) ?? null;
  }
  yield* call('rollbackTo', 'check');
  yield* call('releaseSavepoint', 'check');
  const conflicts: Conflict[] = [];
  for (const row of pending) {
    const error = withIt.get(row.schedule_id) ?? null;
    if (without.get(row.schedule_id) === null && error !== null) conflicts.push({ row, error });
  }
  return { refused, conflicts, checked: pending.length };
}

/** Each change's refusal (null: it applies) when they are replayed in order, rolled back after. */
function* outcomes(rows: readonly ScheduleRow[]): Step<Map<string, RcdError | null>> {
  yield* call('savepoint', 'outcomes');
  const replayed = yield* replayEach(rows);
  yield* call('rollbackTo', 'outcomes');
  yield* call('releaseSavepoint', 'outcomes');
  return new Map(replayed.map((r) => [r.row.schedule_id, r.error]));
}

/** The order changes apply in: by time, then by id. */
function inOrder(rows: ScheduleRow[]): ScheduleRow[] {
  return rows.sort((a, b) => a.due_ms - b.due_ms || (a.schedule_id < b.schedule_id ? -1 : a.schedule_id > b.schedule_id ? 1 : 0));
}

function emptyRow(envId: string): ScheduleRow {
  return {
    schedule_id: NEWEST_ID, env_id: envId, due_ms: 0, ops: '[]', note: '', status: 'pending', rollout_id: null, step: null, created_at: isoOf(0),
    created_by: '', token_id: '', settled_at: null, late_ms: null, error_code: null, error_message: null, result: null,
  };
}
