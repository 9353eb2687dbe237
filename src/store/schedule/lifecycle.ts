/**
 * A scheduled change's life in the store, as steps (ops/rows.ts) both stores run in one
 * transaction under their write lock: scheduled (after a rehearsal), moved, cancelled, applied or
 * failed. Exactly once comes from here, not from which node runs the applier: a change is applied
 * in the same transaction that flips its status from pending, so two appliers (a lease taken over
 * while the old holder was still finishing, two processes on one SQLite file) serialise on the
 * write lock and the second finds nothing pending. Never early: the applier takes only changes due
 * by the store's own clock (the database server's for PostgreSQL), read inside that transaction.
 */
import { randomBytes } from 'node:crypto';
import { RcdError } from '../../runtime/errors.js';
import { isoOf } from '../../shared/instant.js';
import { contentIdKey } from '../ids.js';
import { editRules, type RuleEditResult } from '../ops/rules.js';
import { ALL_ITEMS, call, parallel, type Step } from '../ops/rows.js';
import { applyAll } from './batch.js';
import { applyOps, itemsOf, targetEnvironments, type OpResult } from './changes.js';
import type { ChangeOp } from './change-op.js';
import type { ScheduleLimits } from './limits.js';
import { changeSetOf, isRefusal, rehearse, together } from './replay.js';
import { MAX_ROLLOUT_STEPS, OPEN_STATUSES, rolloutFinished, type ScheduleRow } from './rows.js';

export interface NewSchedule {
  readonly envId: string;
  readonly dueMs: number;
  readonly ops: readonly ChangeOp[];
  readonly note: string;
  readonly createdBy: string;
  readonly tokenId: string;
  readonly rollout?: { readonly id: string; readonly step: number };
}

/** What the applier did with one due change. */
export interface Settled {
  readonly row: ScheduleRow;
  /** Empty when it failed. */
  readonly results: readonly OpResult[];
  readonly error: { readonly code: string; readonly message: string } | null;
}

/**
 * A new schedule id: `sch_`, the creation time (ms, 12 hex digits) and 8 random hex digits, so ids
 * sort in creation order, which breaks ties between changes due at the same moment.
 */
export function newScheduleId(nowMs: number): string {
  return `sch_${nowMs.toString(16).padStart(12, '0')}${randomBytes(4).toString('hex')}`;
}

/** `field` names the time in the request (`at`, a rollout's `steps[i].at`). */
export function checkDue(dueMs: number, nowMs: number, limits: ScheduleLimits, field = 'at'): void {
  if (dueMs <= nowMs) {
    throw new RcdError('invalid_body', `${field} must be in the future (the store's clock reads ${isoOf(nowMs)}); to change something now, send the write itself`, { path: field });
  }
  if (dueMs - nowMs > limits.maxAheadMs) {
    throw new RcdError('invalid_body', `${field} is more than ${Math.round(limits.maxAheadMs / 86_400_000)} days ahead (--schedule-max-days)`, { path: field });
  }
}

/** How a change is scheduled: through the API (in the future, within the limits), or brought by a bundle. */
export interface ScheduleMode {
  /** A bundle's change whose time has passed is kept with its time: it applies at once, late. */
  readonly allowPast: boolean;
  /** Checked once by the caller for a whole batch (a bundle's changes), not per change. */
  readonly openChecked: boolean;
}

const BY_API: ScheduleMode = { allowPast: false, openChecked: false };

export function* requireRoomFor(count: number, limits: ScheduleLimits): Step<void> {
  const open = yield* call('countOpen');
  if (open + count > limits.maxOpen) {
    throw new RcdError('too_many_schedules', `the store holds ${open} scheduled changes not yet applied (--schedule-max-pending ${limits.maxOpen})`);
  }
}

/** Records a change after a rehearsal: refused now (invalid_*, content_not_found, ...) means refused. */
export function* createSchedule(s: NewSchedule, limits: ScheduleLimits, mode: ScheduleMode = BY_API): Step<ScheduleRow> {
  const now = yield* call('storeNowMs');
  if (!mode.allowPast || s.dueMs > now) checkDue(s.dueMs, now, limits, s.rollout === undefined ? 'at' : `steps[${s.rollout.step}].at`);
  if (!mode.openChecked) yield* requireRoomFor(1, limits);
  const id = newScheduleId(now);
  const items = itemsOf(s.envId, s.ops);
  yield* rehearse(s.envId, s.ops, items, s.dueMs, id);
  const row = newRow(s, id, now);
  yield* call('insertSchedule', row, items);
  return row;
}

/**
 * Records many changes (a bundle's), each checked as createSchedule checks one. First all rehearsed
 * together: the pending changes of their items due before the last of them and the new ones, in
 * time order, in one batch (applyAll), rolled back; when that goes through, the rows are written (in
 * parallel). Otherwise each on its own, so that every refused one is named. A bundle of 1,000
 * changes on PostgreSQL: one savepoint instead of 1,000 (past 64 subtransactions in one transaction,
 * PostgreSQL's visibility checks slow down for the rest of it).
 */
export function* createSchedules(list: readonly NewSchedule[], limits: ScheduleLimits, mode: ScheduleMode): Step<{ rows: ScheduleRow[]; refused: { index: number; error: RcdError }[] }> {
  const now = yield* call('storeNowMs');
  const refused: { index: number; error: RcdError }[] = [];
  const ids = list.map(() => newScheduleId(now)).sort();
  const rows: ScheduleRow[] = [];
  list.forEach((s, index) => {
    try {
      if (!mode.allowPast || s.dueMs > now) checkDue(s.dueMs, now, limits);
      rows.push(newRow(s, ids[index]!, now));
    } catch (err) {
      if (!isRefusal(err)) throw err;
      refused.push({ index, error: err });
    }
  });
  if (refused.length > 0) return { rows: [], refused };
  if (!(yield* rehearsedTogether(rows))) {
    const one: ScheduleRow[] = [];
    for (const [index, s] of list.entries()) {
      try {
        one.push(yield* createSchedule(s, limits, mode));
      } catch (err) {
        if (!isRefusal(err)) throw err;
        refused.push({ index, error: err });
      }
    }
    return { rows: refused.length > 0 ? [] : one, refused };
  }
  yield* parallel(rows.map((row) => insertRow(row)));
  return { rows, refused };
}

function* insertRow(row: ScheduleRow): Step<void> {
  yield* call('insertSchedule', row, itemsOf(row.env_id, JSON.parse(row.ops) as ChangeOp[]));
}

/** New changes with the pending ones of their items due before the last of them, applied in time order and rolled back: true when none was refused. */
function* rehearsedTogether(rows: readonly ScheduleRow[]): Step<boolean> {
  const lastDue = Math.max(...rows.map((r) => r.due_ms));
  const keysByEnv = new Map<string, Set<string>>();
  for (const r of rows) {
    for (const i of itemsOf(r.env_id, JSON.parse(r.ops) as ChangeOp[])) {
      if (i.envId !== r.env_id) continue;
      const keys = keysByEnv.get(i.envId) ?? new Set<string>();
      keys.add(i.idLower);
      keysByEnv.set(i.envId, keys);
    }
  }
  const pending = new Map<string, ScheduleRow>();
  for (const [envId, keys] of keysByEnv) {
    for (const p of yield* call('pendingTouching', envId, [...keys], lastDue + 1, '')) pending.set(p.schedule_id, p);
  }
  const all = [...pending.values(), ...rows].sort((a, b) => a.due_ms - b.due_ms || (a.schedule_id < b.schedule_id ? -1 : a.schedule_id > b.schedule_id ? 1 : 0));
  yield* call('savepoint', 'rehearsal_all');
  let ok = true;
  try {
    yield* applyAll(all.map(changeSetOf));
  } catch {
    ok = false;
  }
  yield* call('rollbackTo', 'rehearsal_all');
  yield* call('releaseSavepoint', 'rehearsal_all');
  return ok;
}

function newRow(s: NewSchedule, id: string, now: number): ScheduleRow {
  return {
    schedule_id: id,
    env_id: s.envId,
    due_ms: s.dueMs,
    ops: JSON.stringify(s.ops),
    note: s.note,
    status: 'pending',
    rollout_id: s.rollout?.id ?? null,
    step: s.rollout?.step ?? null,
    created_at: isoOf(now),
    created_by: s.createdBy,
    token_id: s.tokenId,
    settled_at: null,
    late_ms: null,
    error_code: null,
    error_message: null,
    result: null,
  };
}

/**
 * Applies every pending change due by the store's clock, oldest first, at most `limit`. First all
 * together (applyTogether); if any of them is refused, that is undone and they are applied one by
 * one (applyOneByOne), so one that is refused now (its base revision moved, its content deleted) is
 * marked failed with its reason and leaves nothing behind, while the others apply. A failure of the
 * store itself rolls the whole batch back for the next attempt.
 */
export function* applyDue(limit: number): Step<Settled[]> {
  const now = yield* call('storeNowMs');
  const due = yield* call('dueSchedules', now, limit);
  if (due.length === 0) return [];
  return (yield* applyTogether(due, now)) ?? (yield* applyOneByOne(due, now));
}

/**
 * Runs the first `limit` changes due at `dueMs` as applyDue's common case will (applyTogether:
 * their ops, their status update), then rolls all of it back: nothing is kept, announced or notified
 * (PostgreSQL discards a rolled-back savepoint's notifications). Run a moment before a due time on
 * each connection the store writes on, it takes there the costs a first use pays (PostgreSQL:
 * opening the connection, its backend's catalog caches and plans, the change-log trigger's
 * compilation), so the batch at the due time does not.
 */
export function* rehearseDue(dueMs: number, limit: number): Step<void> {
  const due = yield* call('dueSchedules', dueMs, limit);
  if (due.length === 0) return;
  yield* call('savepoint', 'warm');
  try {
    // Refused changes come back as null, already undone; the real apply reports them.
    yield* applyTogether(due, dueMs);
  } catch {
    // A statement failed: the real apply meets the same and reports it. A store that is gone
    // fails the rollback below too, and that propagates.
  }
  yield* call('rollbackTo', 'warm');
  yield* call('releaseSavepoint', 'warm');
}

/**
 * The common case, every change applies: all in one batch (applyAll), their statuses set in one
 * statement. Null when any change was refused (everything of the batch undone).
 */
function* applyTogether(due: readonly ScheduleRow[], now: number): Step<Settled[] | null> {
  let results: OpResult[][] = [];
  const ok = yield* together('together', function* () {
    results = yield* applyAll(due.map(changeSetOf));
  });
  if (!ok) return null;
  const settledAt = isoOf(now);
  const applied = due.map((row, i) => ({ scheduleId: row.schedule_id, lateMs: now - row.due_ms, result: JSON.stringify(results[i]) }));
  yield* call('settleApplied', applied, settledAt);
  return due.map((row, i) => ({
    row: { ...row, status: 'applied', settled_at: settledAt, late_ms: applied[i]!.lateMs, result: applied[i]!.result },
    results: results[i]!,
    error: null,
  }));
}

/** Each change in a savepoint of its own: a refused one is rolled back alone and marked failed. */
function* applyOneByOne(due: readonly ScheduleRow[], now: number): Step<Settled[]> {
  const out: Settled[] = [];
  for (const row of due) {
    const late = now - row.due_ms;
    yield* call('savepoint', 'due');
    let results: OpResult[] | null = null;
    let failure: RcdError | null = null;
    try {
      results = yield* applyOps(row.env_id, JSON.parse(row.ops) as ChangeOp[]);
    } catch (err) {
      if (!isRefusal(err)) throw err;
      failure = err;
      yield* call('rollbackTo', 'due');
    }
    yield* call('releaseSavepoint', 'due');
    const outcome = {
      status: failure === null ? ('applied' as const) : ('failed' as const),
      settledAt: isoOf(now),
      lateMs: late,
      errorCode: failure?.code ?? null,
      errorMessage: failure?.message ?? null,
      result: results === null ? null : JSON.stringify(results),
    };
    yield* call('settleSchedule', row.schedule_id, ['pending'], outcome);
    out.push({
      row: { ...row, status: outcome.status, settled_at: outcome.settledAt, late_ms: late, error_code: outcome.errorCode, error_message: outcome.errorMessage, result: outcome.result },
      results: results ?? [],
      error: failure === null ? null : { code: failure.code, message: failure.message },
    });
  }
  return out;
}

export function* requireSchedule(envId: string, scheduleId: string): Step<ScheduleRow> {
  const row = yield* call('getSchedule', scheduleId);
  if (row === undefined || row.env_id !== envId) throw new RcdError('not_found', `no scheduled change ${JSON.stringify(scheduleId)} in environment ${JSON.stringify(envId)}`);
  return row;
}

function requireOpen(row: ScheduleRow): void {
  if (!OPEN_STATUSES.includes(row.status)) {
    throw new RcdError('conflict', `scheduled change ${row.schedule_id} is ${row.status}; only a pending or paused change can be changed`, { status: row.status });
  }
}

/** Cancels open schedules (rows as read); returns them as cancelled. */
function* cancelRows(rows: readonly ScheduleRow[], reason: string): Step<ScheduleRow[]> {
  const now = yield* call('storeNowMs');
  const out: ScheduleRow[] = [];
  for (const row of rows) {
    const outcome = { status: 'cancelled' as const, settledAt: isoOf(now), lateMs: null, errorCode: null, errorMessage: null, result: JSON.stringify(reason) };
    if ((yield* call('settleSchedule', row.schedule_id, OPEN_STATUSES, outcome)) === 0) continue;
    out.push({ ...row, status: 'cancelled', settled_at: outcome.settledAt, result: outcome.result });
  }
  return out;
}

/**
 * Checks the caller may change this schedule: every environment it writes besides its own (its
 * syncs' targets) must be in the caller's scope, as when it was created.
 */
export type ScheduleGuard = (targets: readonly string[]) => void;

function guarded(row: ScheduleRow, guard: ScheduleGuard): ChangeOp[] {
  const ops = JSON.parse(row.ops) as ChangeOp[];
  guard(targetEnvironments(ops));
  return ops;
}

export function* cancelSchedule(envId: string, scheduleId: string, reason: string, guard: ScheduleGuard): Step<ScheduleRow> {
  const row = yield* requireSchedule(envId, scheduleId);
  guarded(row, guard);
  requireOpen(row);
  const [cancelled] = yield* cancelRows([row], reason);
  return cancelled as ScheduleRow;
}

/** A rollout's steps (its scheduled changes), in step order. */
export function* rolloutSteps(envId: string, rolloutId: string): Step<ScheduleRow[]> {
  const rows = yield* call('listSchedules', { envIds: [envId], incoming: false, idLower: null, statuses: null, fromMs: null, toMs: null, rolloutId, limit: MAX_ROLLOUT_STEPS });
  return rows.sort((a, b) => (a.step ?? 0) - (b.step ?? 0));
}

/**
 * A rollout's step may move only between the open steps before and after it: ranges grow step by
 * step, so a step applied after a later one would shrink the range and take players out.
 */
function* requireStepOrder(row: ScheduleRow, dueMs: number): Step<void> {
  if (row.rollout_id === null || row.step === null) return;
  const step = row.step;
  for (const other of yield* rolloutSteps(row.env_id, row.rollout_id)) {
    if (other.step === null || other.step === step || !OPEN_STATUSES.includes(other.status)) continue;
    const before = other.step < step;
    if (before ? other.due_ms >= dueMs : other.due_ms <= dueMs) {
      throw new RcdError(
        'rollout_step_order',
        `step ${step + 1} of rollout ${row.rollout_id} must stay ${before ? 'after' : 'before'} step ${other.step + 1} (due ${isoOf(other.due_ms)}): steps apply in their order, so nobody leaves the rollout`,
        { rollout: row.rollout_id, step, other: other.step, otherAt: isoOf(other.due_ms) },
      );
    }
  }
}

/** Moves an open change to `dueMs`, rehearsed at its new place (a rollout's step stays between its neighbours). */
export function* moveSchedule(envId: string, scheduleId: string, dueMs: number, limits: ScheduleLimits, guard: ScheduleGuard): Step<ScheduleRow> {
  const row = yield* requireSchedule(envId, scheduleId);
  const ops = guarded(row, guard);
  requireOpen(row);
  checkDue(dueMs, yield* call('storeNowMs'), limits);
  yield* requireStepOrder(row, dueMs);
  yield* rehearse(envId, ops, itemsOf(envId, ops), dueMs, scheduleId);
  yield* call('moveSchedule', scheduleId, dueMs);
  return { ...row, due_ms: dueMs };
}

/**
 * Replaces the ops (and, when given, the note) of an open change, checked as when it was scheduled:
 * rehearsed at its time after the pending changes of its items due before it. A rollout's step is
 * not edited here (its rollout owns its ops): conflict.
 */
export function* editSchedule(envId: string, scheduleId: string, ops: readonly ChangeOp[], note: string | null, guard: ScheduleGuard): Step<ScheduleRow> {
  const row = yield* requireSchedule(envId, scheduleId);
  guarded(row, guard);
  guard(targetEnvironments(ops));
  requireOpen(row);
  if (row.rollout_id !== null) {
    throw new RcdError('conflict', `scheduled change ${scheduleId} is step ${(row.step ?? 0) + 1} of rollout ${row.rollout_id}; a rollout's steps change through the rollout`, { rollout: row.rollout_id });
  }
  const items = itemsOf(envId, ops);
  yield* rehearse(envId, ops, items, row.due_ms, scheduleId);
  const edited = { ...row, ops: JSON.stringify(ops), note: note ?? row.note };
  yield* call('editSchedule', scheduleId, edited.ops, edited.note, items);
  return edited;
}

/** Revoking a token cancels what it scheduled (a change is applied with its creator's rights). */
export function* cancelOfToken(tokenId: string): Step<ScheduleRow[]> {
  return yield* cancelRows(yield* call('openOfToken', tokenId), 'token revoked');
}

/** Deleting an environment cancels what was scheduled in it or into it. */
export function* cancelOfEnvironment(envId: string): Step<ScheduleRow[]> {
  return yield* cancelRows(yield* call('openTouching', envId, ALL_ITEMS), 'environment deleted');
}

export interface KillResult {
  readonly mapping: RuleEditResult;
  /** The item's scheduled changes (rollout steps included) cancelled by the kill. */
  readonly cancelled: readonly ScheduleRow[];
}

/**
 * The kill switch: one rule (or every rule) of the item's mapping disabled, and every open
 * scheduled change that would write the item cancelled (its rollouts with them), in one
 * transaction: those that name it, and the syncs of every item into its environment, which would
 * copy the mapping back with the rule live. Its rollouts become `killed`: those it stopped, and a
 * finished one whose rule it switched off.
 */
export function* kill(envId: string, id: string, rule: number | null, segment: string | null): Step<KillResult> {
  const mapping = yield* editRules(envId, id, { rule, segment, variant: null, disabled: true });
  const key = contentIdKey(id);
  const cancelled = yield* cancelRows(yield* call('openTouching', envId, key), 'kill switch');
  for (const r of yield* call('listRollouts', envId, 1_000_000)) {
    if (r.id_lower !== key || (r.status !== 'active' && r.status !== 'paused')) continue;
    // A rollout whose steps all applied is over: killed only when its own rule is the one switched off.
    if (!rolloutFinished(yield* rolloutSteps(envId, r.rollout_id)) || rule === null || r.rule === rule) yield* call('setRolloutStatus', r.rollout_id, 'killed');
  }
  return { mapping, cancelled };
}
