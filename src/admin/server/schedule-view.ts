/**
 * Scheduled changes and rollouts as the admin API shows them, and what their outcomes announce:
 * the audit entries (a change applied is audited per op under the action a person's write would
 * have, in the name of the token that scheduled it, naming the schedule) and the webhook events
 * (the same events as that write, plus the schedule.* ones).
 */
import { idsOf, syncsEveryItem, targetEnvironments, type OpResult } from '../../store/schedule/changes.js';
import type { ChangeOp } from '../../store/schedule/change-op.js';
import type { Settled } from '../../store/schedule/lifecycle.js';
import type { RolloutView, StoredStep } from '../../store/schedule/rollouts.js';
import { OPEN_STATUSES, rolloutFinished, type RolloutRow, type ScheduleRow } from '../../store/schedule/rows.js';
import type { RuleState } from '../../store/ops/rules.js';
import { isoOf } from '../../shared/instant.js';
import type { NewAuditEntry } from './state.js';
import type { ScheduleEventBody, WebhookPayload } from './webhooks.js';

/** A listing leaves the texts and mappings out (they can be megabytes); one schedule's GET has them. */
function summaryOf(op: ChangeOp): Record<string, unknown> {
  if (op.op === 'content.put') {
    const { text, ...rest } = op;
    return { ...rest, bytes: Buffer.byteLength(text ?? '') };
  }
  if (op.op === 'mapping.put') {
    const { mapping, ...rest } = op;
    return { ...rest, bytes: Buffer.byteLength(JSON.stringify(mapping)) };
  }
  return op;
}

export function scheduleView(row: ScheduleRow, full: boolean): Record<string, unknown> {
  const ops = JSON.parse(row.ops) as ChangeOp[];
  return {
    id: row.schedule_id,
    env: row.env_id,
    at: isoOf(row.due_ms),
    status: row.status,
    items: idsOf(ops),
    allItems: syncsEveryItem(ops),
    into: targetEnvironments(ops),
    ops: full ? ops : ops.map(summaryOf),
    note: row.note,
    rollout: row.rollout_id === null ? null : { id: row.rollout_id, step: row.step },
    createdAt: row.created_at,
    createdBy: row.created_by,
    tokenId: row.token_id,
    settledAt: row.settled_at,
    lateMs: row.late_ms,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? '' },
    cancelReason: row.status === 'cancelled' && row.result !== null ? (JSON.parse(row.result) as string) : null,
    results: row.status === 'applied' && row.result !== null ? (JSON.parse(row.result) as unknown) : null,
  };
}

/**
 * `completed` when its last step applied and none is open (killed afterwards or not); `cancelled`
 * when no step is left to apply and some were cancelled (by hand, the kill switch, or with their
 * creator's token); otherwise the stored status.
 */
function rolloutStatus(rollout: RolloutRow, steps: readonly ScheduleRow[]): string {
  const stored = rollout.status;
  if ((stored !== 'active' && stored !== 'paused' && stored !== 'killed') || steps.length === 0) return stored;
  if (rolloutFinished(steps)) return stored === 'paused' ? stored : 'completed';
  if (stored === 'killed' || (!steps.some((s) => OPEN_STATUSES.includes(s.status)) && steps.some((s) => s.status === 'cancelled'))) return 'cancelled';
  return stored;
}

/** The share of players a rule (or variant) in this state serves: 0 when switched off, all of them without a range. */
function percentOf(state: RuleState): number {
  if (state.disabled) return 0;
  if (state.mod === null) return 100;
  return (state.mod[1] - state.mod[0] + 1) / 10;
}

export function rolloutView(view: RolloutView): Record<string, unknown> {
  const { rollout, steps, current } = view;
  const plan = JSON.parse(rollout.steps) as StoredStep[];
  const byId = new Map(steps.map((s) => [s.schedule_id, s]));
  return {
    id: rollout.rollout_id,
    env: rollout.env_id,
    contentId: rollout.content_id,
    rule: rollout.rule,
    segment: rollout.segment,
    variant: rollout.variant,
    start: rollout.start,
    status: rolloutStatus(rollout, steps),
    killed: rollout.status === 'killed',
    current: current === null ? null : { disabled: current.disabled, mod: current.mod, percent: percentOf(current) },
    before: JSON.parse(rollout.before) as unknown,
    note: rollout.note,
    createdAt: rollout.created_at,
    createdBy: rollout.created_by,
    steps: plan.map((p) => {
      const s = byId.get(p.scheduleId);
      return {
        percent: p.percent,
        at: isoOf(p.dueMs),
        mod: p.mod,
        scheduleId: p.scheduleId,
        status: s?.status ?? 'cancelled',
        dueAt: s === undefined ? isoOf(p.dueMs) : isoOf(s.due_ms),
        settledAt: s?.settled_at ?? null,
        error: s === undefined || s.error_code === null ? null : { code: s.error_code, message: s.error_message ?? '' },
      };
    }),
  };
}

export function scheduleEventBody(row: ScheduleRow): ScheduleEventBody {
  const ops = JSON.parse(row.ops) as ChangeOp[];
  return {
    id: row.schedule_id,
    at: isoOf(row.due_ms),
    status: row.status,
    items: idsOf(ops),
    allItems: syncsEveryItem(ops),
    rollout: row.rollout_id,
    lateMs: row.late_ms,
    error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? '' },
  };
}

export function scheduleEvent(event: 'schedule.created' | 'schedule.applied' | 'schedule.failed' | 'schedule.cancelled', row: ScheduleRow, at: string): WebhookPayload {
  return { event, env: row.env_id, id: row.schedule_id, hash: null, at, schedule: scheduleEventBody(row) };
}

/** The events a person's write of the same ops would have sent. */
export function resultEvents(results: readonly OpResult[], at: string): WebhookPayload[] {
  const out: WebhookPayload[] = [];
  for (const r of results) {
    switch (r.op) {
      case 'content.put':
      case 'content.rollback':
        if (r.changed) out.push({ event: 'content.updated', env: r.env, id: r.id, hash: r.hash, at });
        break;
      case 'content.delete':
        out.push({ event: 'content.deleted', env: r.env, id: r.id, hash: r.hash, at });
        break;
      case 'mapping.put':
      case 'mapping.delete':
      case 'rule.set':
        out.push({ event: 'mapping.updated', env: r.env, id: r.id, hash: r.hash, at });
        break;
      case 'sync':
        for (const item of r.items) {
          if (item.action !== 'unchanged') out.push({ event: 'environment.synced', env: r.to, id: item.id, hash: item.hash, at });
        }
        break;
    }
  }
  return out;
}

export function settledEvents(settled: readonly Settled[], at: string): WebhookPayload[] {
  const out: WebhookPayload[] = [];
  for (const s of settled) {
    out.push(...resultEvents(s.results, at));
    out.push(scheduleEvent(s.error === null ? 'schedule.applied' : 'schedule.failed', s.row, at));
  }
  return out;
}

export function cancelledEvents(rows: readonly ScheduleRow[], at: string): WebhookPayload[] {
  return rows.map((r) => scheduleEvent('schedule.cancelled', r, at));
}

/** The audit action of each op: the action of the admin write it is. */
const ACTION: Record<OpResult['op'], string> = {
  'content.put': 'content.put',
  'content.delete': 'content.delete',
  'content.rollback': 'content.rollback',
  'mapping.put': 'mapping.put',
  'mapping.delete': 'mapping.delete',
  'rule.set': 'mapping.rule',
  sync: 'environment.sync',
};

function opAudit(r: OpResult): { action: string; env: string; target: string; detail: Record<string, unknown> } {
  switch (r.op) {
    case 'content.put':
    case 'content.rollback':
      return { action: ACTION[r.op], env: r.env, target: r.id, detail: { hash: r.hash, revision: r.revision, changed: r.changed } };
    case 'content.delete':
    case 'mapping.delete':
      return { action: ACTION[r.op], env: r.env, target: r.id, detail: { hash: r.hash } };
    case 'mapping.put':
    case 'rule.set':
      return { action: ACTION[r.op], env: r.env, target: r.id, detail: { mappingId: r.mappingId, ruleCount: r.ruleCount } };
    case 'sync':
      return {
        action: ACTION[r.op],
        env: r.env,
        target: r.to,
        detail: {
          created: r.items.filter((i) => i.action === 'created').length,
          updated: r.items.filter((i) => i.action === 'updated').length,
        },
      };
  }
}

/**
 * Applied: one entry per op, as the write itself, in the name of the token that scheduled it, its
 * detail naming the schedule and how late it applied. Failed: one `schedule.fail` entry with the reason.
 */
export function settledAudit(settled: readonly Settled[]): NewAuditEntry[] {
  const out: NewAuditEntry[] = [];
  for (const s of settled) {
    const schedule = { id: s.row.schedule_id, at: isoOf(s.row.due_ms), lateMs: s.row.late_ms, rollout: s.row.rollout_id };
    const who = { actor: s.row.created_by, tokenId: s.row.token_id };
    if (s.error !== null) {
      out.push({ ...who, action: 'schedule.fail', env: s.row.env_id, target: s.row.schedule_id, detail: { schedule, error: s.error } });
      continue;
    }
    for (const r of s.results) {
      const a = opAudit(r);
      out.push({ ...who, action: a.action, env: a.env, target: a.target, detail: { ...a.detail, schedule } });
    }
  }
  return out;
}
