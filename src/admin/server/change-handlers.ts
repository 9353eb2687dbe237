/**
 * The admin routes that read and edit what a scheduled change writes (docs/schedule.md, "What a
 * change writes"): a change's writes item by item (now, just before its time, after it), the edit
 * of a pending change's ops (checked exactly as when it is scheduled), and the conflict check a
 * client runs before a write: which pending changes the write would make fail later. The reads run
 * in memory over a read snapshot, bounded by the preview gate, as previews are.
 */
import { RcdError } from '../../runtime/errors.js';
import { isoOf } from '../../shared/instant.js';
import { parseOps, targetEnvironments } from '../../store/schedule/changes.js';
import { checkConflicts, type ConflictCheck } from '../../store/schedule/conflicts.js';
import { editSchedule } from '../../store/schedule/lifecycle.js';
import type { Replayed } from '../../store/schedule/replay.js';
import type { ScheduleRow } from '../../store/schedule/rows.js';
import { changeWrites, type ChangeWrites } from '../../store/schedule/writes.js';
import { changed, param, parseBodyObject, read, route, type AdminCall, type AdminContext, type AdminResult, type AdminRoute } from './admin-call.js';
import { parseAt, parseNote, requireTargetsInScope } from './schedule-handlers.js';
import { scheduleView } from './schedule-view.js';

/** A pending change named in an answer: enough to recognise it, and how replaying it went. */
export function changeRef(row: ScheduleRow, error: RcdError | null): Record<string, unknown> {
  const ops = JSON.parse(row.ops) as { op: string }[];
  return {
    id: row.schedule_id,
    at: isoOf(row.due_ms),
    note: row.note,
    ops: ops.map((o) => o.op),
    rollout: row.rollout_id,
    error: error === null ? null : { code: error.code, message: error.message },
  };
}

export function replayedView(replayed: readonly Replayed[]): Record<string, unknown>[] {
  return replayed.map((r) => changeRef(r.row, r.error));
}

function writesView(w: ChangeWrites): Record<string, unknown> {
  return {
    schedule: scheduleView(w.row, true),
    items: w.items.map((i) => ({ env: i.env, id: i.id, now: i.now, before: i.before ?? null, after: i.after ?? null })),
    earlier: replayedView(w.earlier),
    error: w.error === null ? null : { code: w.error.code, message: w.error.message },
  };
}

async function getWrites(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  const writes = await ctx.previews.run(() => ctx.store.snapshotStep(() => changeWrites(env, id, ctx.previews.limits.maxOps)));
  return read(writesView(writes));
}

/** New ops (and optionally a new note) for an open change: the same checks and refusals as scheduling it. */
async function editOps(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  const body = parseBodyObject(call, '{"ops":[...],"note":"..."}', ['ops', 'note']);
  const ops = parseOps(body.ops, env);
  requireTargetsInScope(call.principal, targetEnvironments(ops));
  const note = body.note === undefined ? null : parseNote(body.note);
  const edited = await ctx.store.writeStep(() => editSchedule(env, id, ops, note, (targets) => requireTargetsInScope(call.principal, targets)));
  ctx.schedules.kick();
  return changed(200, scheduleView(edited, true), { live: false, action: 'schedule.edit', env, target: id, detail: { ops: ops.map((o) => o.op), note: edited.note } });
}

function checkView(c: ConflictCheck): Record<string, unknown> {
  return {
    refused: c.refused === null ? null : { code: c.refused.code, message: c.refused.message, ...(c.refused.details === undefined ? {} : { details: c.refused.details }) },
    conflicts: c.conflicts.map((x) => changeRef(x.row, x.error)),
    checked: c.checked,
  };
}

/**
 * A dry run: `{"ops"}` made now, `{"ops","at"}` scheduled at a time, or `{"ops","schedule"}` the new
 * ops of a pending change. Nothing is written; the ops are parsed as the write parses them.
 */
async function checkWrite(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const body = parseBodyObject(call, '{"ops":[...],"at":"<RFC 3339 time>"} or {"ops":[...],"schedule":"<schedule id>"}', ['ops', 'at', 'schedule']);
  const ops = parseOps(body.ops, env);
  const atMs = body.at === undefined || body.at === null ? null : parseAt(body.at, 'at');
  let replaces: string | null = null;
  if (body.schedule !== undefined && body.schedule !== null) {
    if (typeof body.schedule !== 'string' || body.schedule === '') throw new RcdError('invalid_body', 'schedule must be the id of a pending change');
    if (atMs !== null) throw new RcdError('invalid_body', 'at and schedule do not go together: an edited change keeps its time');
    replaces = body.schedule;
  }
  const result = await ctx.previews.run(() => ctx.store.snapshotStep(() => checkConflicts({ envId: env, ops, atMs, replaces }, ctx.previews.limits.maxOps)));
  return read(checkView(result));
}

const SCHEDULE = 'environments/:env/schedules/:sid';

export const CHANGE_ROUTES: readonly AdminRoute[] = [
  route('GET', `${SCHEDULE}/writes`, getWrites, false, 'read', 'env'),
  route('PUT', `${SCHEDULE}/ops`, editOps, true, 'editor', 'env'),
  route('POST', 'environments/:env/schedules/check', checkWrite, false, 'read', 'env'),
];
