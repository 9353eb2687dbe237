/**
 * The admin routes of scheduled changes, staged rollouts and the kill switch (docs/schedule.md).
 * Every write here is one store step (src/store/schedule/) in one transaction, with its webhook
 * deliveries in the outbox of the same transaction, as for every other write.
 */
import { RcdError } from '../../runtime/errors.js';
import { isPlainObject } from '../../shared/json.js';
import { isoOf, parseInstant } from '../../shared/instant.js';
import { contentIdKey, envIdProblem } from '../../store/ids.js';
import { call as row, type Step } from '../../store/ops/rows.js';
import { parseOps, targetEnvironments } from '../../store/schedule/changes.js';
import {
  applyDue,
  cancelSchedule,
  createSchedule,
  kill,
  moveSchedule,
  requireSchedule,
  type KillResult,
  type Settled,
} from '../../store/schedule/lifecycle.js';
import { advanceRollout, createRollout, pauseRollout, readRollout, readRollouts, resumeRollout, rollBackRollout, type RolledBack, type ResumeChoice } from '../../store/schedule/rollouts.js';
import { SCHEDULE_STATUSES, type RolloutRow, type ScheduleQuery, type ScheduleRow, type ScheduleStatus } from '../../store/schedule/rows.js';
import type { RuleState } from '../../store/ops/rules.js';
import { inScope, type Principal } from './access.js';
import { announcing, changed, now, param, parseBodyObject, positiveInt, read, refuseUnknownFields, requireNoBody, route, type AdminCall, type AdminContext, type AdminResult, type AdminRoute } from './admin-call.js';
import { cancelledEvents, resultEvents, rolloutView, scheduleEvent, scheduleView, settledAudit, settledEvents } from './schedule-view.js';

/**
 * Changes applied in one transaction, and made live together. Below BULK_ENTRIES (1,000 change-log
 * entries, src/runtime/priority.ts) for changes of one item each: a batch of changes that fell due is
 * published at the control thread's own priority on every node, not at --bulk-nice with imports.
 */
export const APPLY_BATCH = 500;
const MAX_LIST = 1000;
const DEFAULT_LIST = 100;
const MAX_NOTE = 1000;

export function parseAt(raw: unknown, field: string): number {
  if (typeof raw !== 'string') throw new RcdError('invalid_body', `${field} must be an RFC 3339 time with an offset, e.g. 2026-10-31T00:00:00Z`);
  const ms = parseInstant(raw);
  if (ms === null) throw new RcdError('invalid_body', `${field} ${JSON.stringify(raw)} is not an RFC 3339 time with an offset (e.g. 2026-10-31T00:00:00Z or 2026-10-31T02:00:00+02:00)`);
  return ms;
}

export function parseNote(raw: unknown): string {
  if (raw === undefined || raw === null) return '';
  if (typeof raw !== 'string' || raw.length > MAX_NOTE) throw new RcdError('invalid_body', `note must be a string of at most ${MAX_NOTE} characters`);
  return raw;
}


/** A scheduled change writes with its creator's rights: every environment it writes must be in the caller's scope now. */
export function requireTargetsInScope(principal: Principal, envs: readonly string[]): void {
  for (const env of envs) {
    if (!inScope(principal, env)) throw new RcdError('forbidden_scope', `token "${principal.name}" may not act on environment "${env}"`);
  }
}

// ---- scheduled changes ----------------------------------------------------------------------

async function createScheduleRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const body = parseBodyObject(call, '{"at":"<RFC 3339 time>","ops":[...],"note":"..."}', ['at', 'ops', 'note']);
  const dueMs = parseAt(body.at, 'at');
  const ops = parseOps(body.ops, env);
  requireTargetsInScope(call.principal, targetEnvironments(ops));
  const note = parseNote(body.note);
  const created = await ctx.store.writeStep(
    () => createSchedule({ envId: env, dueMs, ops, note, createdBy: call.actor, tokenId: call.principal.tokenId }, ctx.schedules.limits),
    await announcing<ScheduleRow>(ctx, call, (r) => [scheduleEvent('schedule.created', r, now())]),
  );
  ctx.schedules.kick();
  return changed(201, scheduleView(created, true), {
    live: false, action: 'schedule.create', env, target: created.schedule_id, detail: { at: isoOf(dueMs), ops: ops.map((o) => o.op), note },
  });
}

function parseStatuses(raw: string | null): ScheduleStatus[] | null {
  if (raw === null) return null;
  const known: readonly string[] = SCHEDULE_STATUSES;
  const out = raw.split(',').filter((s) => s !== '');
  // `status=` names no status: refused, not read as "none of them" (an empty list).
  if (out.length === 0) throw new RcdError('invalid_query', `status must name at least one of: ${SCHEDULE_STATUSES.join(', ')}`);
  for (const s of out) {
    if (!known.includes(s)) throw new RcdError('invalid_query', `status must be a comma-separated list of: ${SCHEDULE_STATUSES.join(', ')}`);
  }
  return out as ScheduleStatus[];
}

function parseQueryInstant(query: URLSearchParams, name: string): number | null {
  const raw = query.get(name);
  if (raw === null) return null;
  const ms = parseInstant(raw);
  if (ms === null) throw new RcdError('invalid_query', `${name} must be an RFC 3339 time with an offset, e.g. 2026-10-31T00:00:00Z`);
  return ms;
}

function scheduleQuery(call: AdminCall, envIds: readonly string[] | null): ScheduleQuery {
  const q = call.query;
  const limit = positiveInt(q, 'limit', DEFAULT_LIST) as number;
  if (limit > MAX_LIST) throw new RcdError('invalid_query', `limit must be at most ${MAX_LIST}`);
  const id = q.get('id');
  if (id !== null && envIds?.length !== 1) throw new RcdError('invalid_query', 'id needs one environment (env=...)');
  return {
    envIds,
    incoming: true,
    idLower: id === null ? null : contentIdKey(id),
    statuses: parseStatuses(q.get('status')),
    fromMs: parseQueryInstant(q, 'from'),
    toMs: parseQueryInstant(q, 'to'),
    rolloutId: q.get('rollout'),
    limit,
  };
}

function* listStep(query: ScheduleQuery): Step<ScheduleRow[]> {
  return yield* row('listSchedules', query);
}

async function listEnvSchedules(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const rows = await ctx.store.readStep(() => listStep(scheduleQuery(call, [env])));
  return read({ schedules: rows.map((r) => scheduleView(r, false)) });
}

/** Across environments: those of the caller's scope (env=a,b narrows it). */
async function listAllSchedules(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const named = call.query.get('env');
  let envIds: string[] | null = null;
  if (named !== null) {
    envIds = named.split(',').filter((e) => e !== '');
    for (const e of envIds) {
      if (envIdProblem(e) !== '') throw new RcdError('invalid_query', `env: ${envIdProblem(e)}`);
    }
    envIds = envIds.filter((e) => inScope(call.principal, e));
  } else if (call.principal.scope !== '*') {
    envIds = [...call.principal.scope];
  }
  const rows = await ctx.store.readStep(() => listStep(scheduleQuery(call, envIds)));
  return read({ schedules: rows.map((r) => scheduleView(r, false)) });
}

async function getScheduleRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  return read(scheduleView(await ctx.store.readStep(() => requireSchedule(env, id)), true));
}

async function moveScheduleRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  // Only the time moves: ops or a note given here are refused, not ignored.
  const body = parseBodyObject(call, '{"at":"<RFC 3339 time>"}', ['at']);
  const dueMs = parseAt(body.at, 'at');
  const moved = await ctx.store.writeStep(() => moveSchedule(env, id, dueMs, ctx.schedules.limits, (targets) => requireTargetsInScope(call.principal, targets)));
  ctx.schedules.kick();
  return changed(200, scheduleView(moved, true), { live: false, action: 'schedule.move', env, target: id, detail: { at: isoOf(dueMs) } });
}

async function cancelScheduleRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  requireNoBody(call);
  const cancelled = await ctx.store.writeStep(
    () => cancelSchedule(env, id, `cancelled by ${call.actor}`, (targets) => requireTargetsInScope(call.principal, targets)),
    await announcing<ScheduleRow>(ctx, call, (r) => cancelledEvents([r], now())),
  );
  return changed(200, scheduleView(cancelled, true), { live: false, action: 'schedule.cancel', env, target: id, detail: null });
}

/**
 * Applies the changes due now, in batches of APPLY_BATCH, each batch one transaction, at most
 * `maxBatches` of them, back to back: each goes live on this node as soon as it is committed, and
 * the server waits for every node once, at the end, then audits them per op in their creators'
 * names. The applier runs up to BATCHES_PER_WRITE batches per write (src/admin/server/scheduler.ts);
 * a rollout's advance runs them all at once.
 */
export async function applyDueChanges(ctx: AdminContext, call: AdminCall, maxBatches = Infinity): Promise<{ result: AdminResult; settled: Settled[] }> {
  const settled: Settled[] = [];
  for (let n = 0; n < maxBatches; n++) {
    const batch = await ctx.store.writeStep(() => applyDue(APPLY_BATCH), await announcing<Settled[]>(ctx, call, (r) => settledEvents(r, now())));
    settled.push(...batch);
    if (batch.length < APPLY_BATCH) break;
    // More may be due: this batch goes live on this node while the next one is written, instead
    // of after it (the other nodes pick it up from the store on their own).
    ctx.schedules.publish();
  }
  const body = { settled: settled.map((s) => scheduleView(s.row, false)) };
  if (settled.length === 0) return { result: read(body), settled };
  return {
    result: {
      status: 200,
      body,
      change: { live: settled.some((s) => s.error === null), action: 'schedule.apply', env: null, target: null, detail: null },
      audits: settledAudit(settled),
    },
    settled,
  };
}

// ---- rollouts -------------------------------------------------------------------------------

async function createRolloutRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const body = parseBodyObject(call, '{"id":"<content id>","rule":N,"variant":"<name>","steps":[{"percent":5,"at":"<RFC 3339 time>"},...]}', ['id', 'rule', 'variant', 'start', 'steps', 'note']);
  if (typeof body.id !== 'string' || body.id === '') throw new RcdError('invalid_body', 'id must be the content id');
  if (!Number.isInteger(body.rule) || (body.rule as number) < 0) throw new RcdError('invalid_body', 'rule must be the index of a rule of the mapping (0 is the first)');
  if (body.variant !== undefined && body.variant !== null && (typeof body.variant !== 'string' || body.variant === '')) {
    throw new RcdError('invalid_body', 'variant must be the name of a variant of the rule');
  }
  if (body.start !== undefined && body.start !== null && !Number.isInteger(body.start)) throw new RcdError('invalid_body', 'start must be an integer mod value, 0..999');
  if (!Array.isArray(body.steps)) throw new RcdError('invalid_body', 'steps must be an array of {"percent","at"}');
  const steps = body.steps.map((s: unknown, i: number) => {
    if (!isPlainObject(s) || typeof s.percent !== 'number') throw new RcdError('invalid_body', `steps[${i}] must be {"percent":N,"at":"<RFC 3339 time>"}`);
    refuseUnknownFields(s, ['percent', 'at'], `steps[${i}]`);
    return { percent: s.percent, dueMs: parseAt(s.at, `steps[${i}].at`) };
  });
  const note = parseNote(body.note);
  const contentId = body.id;
  const created = await ctx.store.writeStep(
    () =>
      createRollout(
        {
          envId: env,
          id: contentId,
          rule: body.rule as number,
          variant: typeof body.variant === 'string' ? body.variant : null,
          start: typeof body.start === 'number' ? body.start : null,
          steps,
          note,
          createdBy: call.actor,
          tokenId: call.principal.tokenId,
        },
        ctx.schedules.limits,
      ),
    await announcing<{ rollout: RolloutRow; steps: ScheduleRow[]; current: RuleState }>(ctx, call, (r) => r.steps.map((s) => scheduleEvent('schedule.created', s, now()))),
  );
  ctx.schedules.kick();
  return changed(201, rolloutView(created), {
    live: false, action: 'rollout.create', env, target: created.rollout.rollout_id,
    detail: { id: created.rollout.content_id, rule: created.rollout.rule, variant: created.rollout.variant, steps: steps.map((s) => s.percent) },
  });
}

async function listRolloutsRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const limit = positiveInt(call.query, 'limit', DEFAULT_LIST) as number;
  if (limit > MAX_LIST) throw new RcdError('invalid_query', `limit must be at most ${MAX_LIST}`);
  const views = await ctx.store.readStep(() => readRollouts(env, call.query.get('id'), limit));
  return read({ rollouts: views.map(rolloutView) });
}

async function getRolloutRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  return read(rolloutView(await ctx.store.readStep(() => readRollout(param(call, 0), param(call, 1)))));
}

async function pauseRolloutRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  requireNoBody(call);
  await ctx.store.writeStep(() => pauseRollout(env, id, true));
  const view = await ctx.store.readStep(() => readRollout(env, id));
  return changed(200, rolloutView(view), { live: false, action: 'rollout.pause', env, target: id, detail: null });
}

const OVERDUE_CHOICES = ['apply', 'refuse', 'skip', 'reschedule'] as const;

/** A resume's body: none (held steps whose time passed apply at once), or what to do with those steps. */
function parseResume(ctx: AdminContext, call: AdminCall): ResumeChoice {
  if (call.body.length === 0) return { overdue: 'apply' };
  const body = parseBodyObject(call, '{"overdue":"apply|refuse|skip|reschedule","at":"<RFC 3339 time, with reschedule>"}', ['overdue', 'at']);
  const overdue = body.overdue ?? 'apply';
  if (!OVERDUE_CHOICES.includes(overdue as ResumeChoice['overdue'])) throw new RcdError('invalid_body', `overdue must be one of: ${OVERDUE_CHOICES.join(', ')}`, { path: 'overdue' });
  if (overdue === 'reschedule') return { overdue, atMs: parseAt(body.at, 'at'), limits: ctx.schedules.limits };
  if (body.at !== undefined) throw new RcdError('invalid_body', 'at goes with "overdue": "reschedule" only', { path: 'at' });
  return { overdue: overdue as 'apply' | 'refuse' | 'skip' };
}

async function resumeRolloutRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  const choice = parseResume(ctx, call);
  await ctx.store.writeStep(() => resumeRollout(env, id, choice));
  ctx.schedules.kick();
  const view = await ctx.store.readStep(() => readRollout(env, id));
  const detail = call.body.length === 0 ? null : { overdue: choice.overdue, ...(choice.overdue === 'reschedule' ? { at: isoOf(choice.atMs) } : {}) };
  return changed(200, rolloutView(view), { live: false, action: 'rollout.resume', env, target: id, detail });
}

/** The next step applies now, through the applier's own path (its audit entries and events are those of a step that fell due). */
async function advanceRolloutRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  requireNoBody(call);
  const step = await ctx.store.writeStep(() => advanceRollout(env, id));
  const { result, settled } = await applyDueChanges(ctx, call);
  const view = await ctx.store.readStep(() => readRollout(env, id));
  const advanced = settled.find((s) => s.row.schedule_id === step.schedule_id);
  const audit = { actor: call.actor, tokenId: call.principal.tokenId, action: 'rollout.advance', env, target: id, detail: { step: step.step, scheduleId: step.schedule_id } };
  return {
    status: 200,
    body: { ...rolloutView(view), applied: advanced === undefined ? null : scheduleView(advanced.row, false) },
    change: { live: result.change?.live ?? false, action: 'rollout.advance', env, target: id, detail: null },
    audits: [audit, ...(result.audits ?? [])],
  };
}

async function rollBackRolloutRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  requireNoBody(call);
  const done = await ctx.store.writeStep(
    () => rollBackRollout(env, id),
    await announcing<RolledBack>(ctx, call, (r) => {
      const at = now();
      return [...resultEvents([{ op: 'rule.set', env, id: r.mapping.id, hash: r.mapping.hash, mappingId: r.mapping.mappingId, ruleCount: r.mapping.ruleCount }], at), ...cancelledEvents(r.cancelled, at)];
    }),
  );
  const view = await ctx.store.readStep(() => readRollout(env, id));
  return changed(200, rolloutView(view), {
    live: true, action: 'rollout.rollback', env, target: id,
    detail: { id: done.mapping.id, mappingId: done.mapping.mappingId, cancelled: done.cancelled.map((r) => r.schedule_id) },
  });
}

// ---- the kill switch ------------------------------------------------------------------------

/**
 * One call: the rule (`{"rule":N}`, optionally `"segment"` to make sure it is still that rule) or
 * every rule of the item's mapping disabled, and the item's scheduled changes cancelled. Urgent in
 * the write queue, and it reads and checks nothing but the mapping it edits.
 */
async function killRoute(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  let rule: number | null = null;
  let segment: string | null = null;
  if (call.body.length > 0) {
    // `{"Rule":2}` must not read as "no rule" (every rule disabled): unknown members are refused.
    const body = parseBodyObject(call, '{"rule":N,"segment":"<name>"} (both optional: without rule, every rule)', ['rule', 'segment']);
    if (body.rule !== undefined && body.rule !== null) {
      if (!Number.isInteger(body.rule) || (body.rule as number) < 0) throw new RcdError('invalid_body', 'rule must be the index of a rule of the mapping (0 is the first)');
      rule = body.rule as number;
    }
    if (body.segment !== undefined && body.segment !== null) {
      if (typeof body.segment !== 'string' || body.segment === '') throw new RcdError('invalid_body', 'segment must be the rule\'s segment name');
      if (rule === null) throw new RcdError('invalid_body', 'segment names the rule given by rule; without rule, every rule is disabled');
      segment = body.segment;
    }
  }
  const result = await ctx.store.writeStep(
    () => kill(env, id, rule, segment),
    await announcing<KillResult>(ctx, call, (r) => {
      const at = now();
      return [{ event: 'mapping.updated' as const, env, id: r.mapping.id, hash: r.mapping.hash, at }, ...cancelledEvents(r.cancelled, at)];
    }),
  );
  const cancelled = result.cancelled.map((r) => r.schedule_id);
  return changed(200, { id: result.mapping.id, rule, mappingId: result.mapping.mappingId, ruleCount: result.mapping.ruleCount, cancelled }, {
    live: true, action: 'content.kill', env, target: result.mapping.id, detail: { rule, mappingId: result.mapping.mappingId, cancelled },
  });
}

// ---- the table ------------------------------------------------------------------------------

const ENV = 'environments/:env';
const SCHEDULE = `${ENV}/schedules/:sid`;
const ROLLOUT = `${ENV}/rollouts/:rid`;

export const SCHEDULE_ROUTES: readonly AdminRoute[] = [
  route('GET', 'schedules', listAllSchedules, false, 'read', 'own'),
  route('POST', `${ENV}/schedules`, createScheduleRoute, true, 'editor', 'env'),
  route('GET', `${ENV}/schedules`, listEnvSchedules, false, 'read', 'env'),
  route('GET', SCHEDULE, getScheduleRoute, false, 'read', 'env'),
  route('PATCH', SCHEDULE, moveScheduleRoute, true, 'editor', 'env'),
  route('DELETE', SCHEDULE, cancelScheduleRoute, true, 'editor', 'env'),
  route('POST', `${ENV}/rollouts`, createRolloutRoute, true, 'editor', 'env'),
  route('GET', `${ENV}/rollouts`, listRolloutsRoute, false, 'read', 'env'),
  route('GET', ROLLOUT, getRolloutRoute, false, 'read', 'env'),
  route('POST', `${ROLLOUT}/pause`, pauseRolloutRoute, true, 'editor', 'env'),
  route('POST', `${ROLLOUT}/resume`, resumeRolloutRoute, true, 'editor', 'env'),
  route('POST', `${ROLLOUT}/advance`, advanceRolloutRoute, true, 'editor', 'env'),
  route('POST', `${ROLLOUT}/rollback`, rollBackRolloutRoute, true, 'editor', 'env'),
  route('POST', `${ENV}/content/:id/kill`, killRoute, true, 'editor', 'env', null, true),
];
