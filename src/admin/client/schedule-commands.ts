/**
 * `rcd schedule|rollout|kill|preview`: live-ops on a clock from the command line (docs/schedule.md).
 * Times are RFC 3339 with an offset (`2026-10-31T00:00:00Z`), checked here before anything is sent.
 */
import { parseInstant } from '../../shared/instant.js';
import { seg } from './client.js';
import { flag, out, positional, sub, UsageError, type Ctx } from './context.js';
import { formatTable } from './table.js';

export const SCHEDULE_HELP = {
  schedule: `rcd schedule ls [--env ENV] [--id ID] [--status S1,S2] [--from T] [--to T] [--rollout RID] [--limit N]
                                     without --env: every environment the token may read
rcd schedule get SID --env ENV       one change, its ops with their texts
rcd schedule put FILE --env ENV --id ID --at T [--min-app-version X.Y.Z] [--base N] [--note TEXT]
rcd schedule rm --env ENV --id ID --at T [--base N] [--note TEXT]         deletes the item at T
rcd schedule rollback --env ENV --id ID --to N --at T [--base N] [--note TEXT]
rcd schedule mapping FILE --env ENV --id ID --at T [--base N] [--note TEXT]
rcd schedule mapping-rm --env ENV --id ID --at T [--base N] [--note TEXT]
rcd schedule sync FROM TO [IDS...] --at T [--note TEXT]
rcd schedule create FILE --env ENV   FILE is {"at","ops":[...],"note"}: several writes as one change
rcd schedule mv SID --env ENV --at T
rcd schedule cancel SID --env ENV
  T: RFC 3339 with an offset (2026-10-31T00:00:00Z); --base N applies only if the item is still at
  revision N (0: only if it does not exist); FILE may be - for stdin`,
  rollout: `rcd rollout create --env ENV --id ID --rule N [--variant V] [--start N] --steps P@T,P@T,... [--note TEXT]
                                     e.g. --steps 5@2026-11-30T09:00:00Z,25@2026-12-02T09:00:00Z,100@2026-12-04T09:00:00Z
rcd rollout ls --env ENV [--id ID]
rcd rollout get|pause|resume|advance|rollback RID --env ENV
rcd rollout resume RID --env ENV --overdue apply|refuse|skip|reschedule [--at T]
                                     steps whose time passed while paused: apply them now (the
                                     default), refuse (exit 1 naming them), skip them, or reschedule
                                     the first at T and the later ones by as much`,
  kill: `rcd kill --env ENV --id ID [--rule N [--segment S]]
                                     disables the rule (every rule without --rule) and cancels the
                                     item's scheduled changes, at once`,
  preview: `rcd preview --env ENV --id ID [--at T] [--context JSON]
                                     what the wrapped endpoint answers the user context ({"u","p","v"})
                                     now, or as the item will be at T; nothing is stored`,
};

interface ScheduleRow {
  id: string;
  env: string;
  at: string;
  status: string;
  items: string[];
  allItems?: boolean;
  ops: { op: string }[];
  note: string;
  lateMs: number | null;
  error: { code: string; message: string } | null;
  cancelReason: string | null;
}

interface RolloutRow {
  id: string;
  contentId: string;
  rule: number;
  segment: string;
  variant: string | null;
  status: string;
  steps: { percent: number; at: string; mod: number[]; status: string }[];
}

/** An RFC 3339 time given on the command line, checked before it is sent. */
function instant(ctx: Ctx, name: string): string {
  const raw = flag(ctx, name);
  if (parseInstant(raw) === null) throw new UsageError(`--${name} must be an RFC 3339 time with an offset, e.g. 2026-10-31T00:00:00Z`);
  return raw;
}

function optionalInt(ctx: Ctx, name: string, min: number): number | undefined {
  const raw = ctx.args.flags.get(name);
  if (raw === undefined) return undefined;
  if (!/^\d{1,10}$/.test(raw) || Number(raw) < min) throw new UsageError(`--${name} must be a whole number of at least ${min}`);
  return Number(raw);
}

function scheduleLines(rows: readonly ScheduleRow[]): string {
  return formatTable(
    ['ID', 'ENV', 'AT', 'STATUS', 'OPS', 'ITEMS', 'NOTE / OUTCOME'],
    rows.map((r) => [
      r.id,
      r.env,
      r.at,
      r.status,
      r.ops.map((o) => o.op).join(' '),
      r.allItems === true ? ['(every item)', ...r.items].join(' ') : r.items.join(' '),
      r.error !== null ? `${r.error.code}: ${r.error.message}` : r.cancelReason ?? (r.lateMs === null ? r.note : `${r.note}${r.note === '' ? '' : ' '}(applied ${r.lateMs} ms late)`),
    ]),
  );
}

function scheduled(ctx: Ctx, res: ScheduleRow): void {
  out(ctx, res, () => `scheduled ${res.id} at ${res.at}: ${res.ops.map((o) => o.op).join(', ')} (${res.status})\n`);
}

/** One op of the item `--id` at `--at`, with the optional pin and note: the body of POST .../schedules. */
async function scheduleOne(ctx: Ctx, op: Record<string, unknown>): Promise<void> {
  const env = flag(ctx, 'env');
  const at = instant(ctx, 'at');
  const base = optionalInt(ctx, 'base', 0);
  const note = ctx.args.flags.get('note');
  const body = { at, ops: [base === undefined ? op : { ...op, baseRevision: base }], ...(note === undefined ? {} : { note }) };
  scheduled(ctx, await ctx.client.request<ScheduleRow>('POST', `environments/${seg(env)}/schedules`, JSON.stringify(body)));
}

async function scheduleCommand(ctx: Ctx): Promise<void> {
  const action = sub(ctx, ['ls', 'get', 'put', 'rm', 'rollback', 'mapping', 'mapping-rm', 'sync', 'create', 'mv', 'cancel']);
  switch (action) {
    case 'ls': {
      const env = ctx.args.flags.get('env');
      const query = new URLSearchParams();
      for (const [name, key] of [['id', 'id'], ['status', 'status'], ['from', 'from'], ['to', 'to'], ['rollout', 'rollout'], ['limit', 'limit']] as const) {
        const value = ctx.args.flags.get(name);
        if (value !== undefined) query.set(key, value);
      }
      for (const name of ['from', 'to']) if (query.has(name)) instant(ctx, name);
      if (env === undefined && query.has('id')) throw new UsageError('--id needs --env');
      const path = env === undefined ? 'schedules' : `environments/${seg(env)}/schedules`;
      const q = query.toString();
      const res = await ctx.client.request<{ schedules: ScheduleRow[] }>('GET', q === '' ? path : `${path}?${q}`);
      out(ctx, res, () => scheduleLines(res.schedules));
      return;
    }
    case 'get': {
      const res = await ctx.client.request<ScheduleRow>('GET', `environments/${seg(flag(ctx, 'env'))}/schedules/${seg(positional(ctx, 1, 'SID'))}`);
      out(ctx, res, () => scheduleLines([res]) + JSON.stringify(res.ops, null, 2) + '\n');
      return;
    }
    case 'put': {
      const text = (await ctx.io.readInput(positional(ctx, 1, 'FILE'))).toString('utf8');
      const version = ctx.args.flags.get('min-app-version');
      await scheduleOne(ctx, { op: 'content.put', id: flag(ctx, 'id'), text, ...(version === undefined ? {} : { minAppVersion: version }) });
      return;
    }
    case 'rm':
      await scheduleOne(ctx, { op: 'content.delete', id: flag(ctx, 'id') });
      return;
    case 'rollback': {
      const to = optionalInt(ctx, 'to', 1);
      if (to === undefined) throw new UsageError('--to is required (the revision to restore)');
      await scheduleOne(ctx, { op: 'content.rollback', id: flag(ctx, 'id'), to });
      return;
    }
    case 'mapping': {
      const text = (await ctx.io.readInput(positional(ctx, 1, 'FILE'))).toString('utf8');
      let mapping: unknown;
      try {
        mapping = JSON.parse(text);
      } catch (err) {
        throw new UsageError(`the mapping file is not JSON: ${(err as Error).message}`);
      }
      await scheduleOne(ctx, { op: 'mapping.put', id: flag(ctx, 'id'), mapping });
      return;
    }
    case 'mapping-rm':
      await scheduleOne(ctx, { op: 'mapping.delete', id: flag(ctx, 'id') });
      return;
    case 'sync': {
      const from = positional(ctx, 1, 'FROM');
      const to = positional(ctx, 2, 'TO');
      const ids = ctx.args.positionals.slice(3);
      const note = ctx.args.flags.get('note');
      const body = { at: instant(ctx, 'at'), ops: [ids.length === 0 ? { op: 'sync', to } : { op: 'sync', to, ids }], ...(note === undefined ? {} : { note }) };
      scheduled(ctx, await ctx.client.request<ScheduleRow>('POST', `environments/${seg(from)}/schedules`, JSON.stringify(body)));
      return;
    }
    case 'create': {
      const body = await ctx.io.readInput(positional(ctx, 1, 'FILE'));
      scheduled(ctx, await ctx.client.request<ScheduleRow>('POST', `environments/${seg(flag(ctx, 'env'))}/schedules`, body));
      return;
    }
    case 'mv': {
      const path = `environments/${seg(flag(ctx, 'env'))}/schedules/${seg(positional(ctx, 1, 'SID'))}`;
      const res = await ctx.client.request<ScheduleRow>('PATCH', path, JSON.stringify({ at: instant(ctx, 'at') }));
      out(ctx, res, () => `moved ${res.id} to ${res.at}\n`);
      return;
    }
    case 'cancel': {
      const path = `environments/${seg(flag(ctx, 'env'))}/schedules/${seg(positional(ctx, 1, 'SID'))}`;
      const res = await ctx.client.request<ScheduleRow>('DELETE', path);
      out(ctx, res, () => `cancelled ${res.id}\n`);
      return;
    }
  }
}

function rolloutLines(rows: readonly RolloutRow[]): string {
  return formatTable(
    ['ID', 'ITEM', 'RULE', 'STATUS', 'STEPS'],
    rows.map((r) => [
      r.id,
      r.contentId,
      `${r.rule} (${r.segment}${r.variant === null ? '' : ':' + r.variant})`,
      r.status,
      r.steps.map((s) => `${s.percent}%@${s.at} [${s.mod.join('-')}] ${s.status}`).join(', '),
    ]),
  );
}

/** `P@T,P@T`: each step's share of players and its time. */
function parseSteps(raw: string): { percent: number; at: string }[] {
  return raw.split(',').map((part) => {
    const at = part.indexOf('@');
    const percent = Number(part.slice(0, at));
    const time = part.slice(at + 1);
    if (at <= 0 || !Number.isFinite(percent) || parseInstant(time) === null) {
      throw new UsageError(`--steps takes PERCENT@TIME,... (e.g. 5@2026-11-30T09:00:00Z), got ${JSON.stringify(part)}`);
    }
    return { percent, at: time };
  });
}

async function rolloutCommand(ctx: Ctx): Promise<void> {
  const action = sub(ctx, ['create', 'ls', 'get', 'pause', 'resume', 'advance', 'rollback']);
  const base = `environments/${seg(flag(ctx, 'env'))}/rollouts`;
  if (action === 'create') {
    const rule = optionalInt(ctx, 'rule', 0);
    if (rule === undefined) throw new UsageError('--rule is required (the rule\'s index in the mapping, 0 is the first)');
    const variant = ctx.args.flags.get('variant');
    const start = optionalInt(ctx, 'start', 0);
    const note = ctx.args.flags.get('note');
    const body = {
      id: flag(ctx, 'id'),
      rule,
      steps: parseSteps(flag(ctx, 'steps')),
      ...(variant === undefined ? {} : { variant }),
      ...(start === undefined ? {} : { start }),
      ...(note === undefined ? {} : { note }),
    };
    const res = await ctx.client.request<RolloutRow>('POST', base, JSON.stringify(body));
    out(ctx, res, () => rolloutLines([res]));
  } else if (action === 'ls') {
    const id = ctx.args.flags.get('id');
    const res = await ctx.client.request<{ rollouts: RolloutRow[] }>('GET', id === undefined ? base : `${base}?id=${encodeURIComponent(id)}`);
    out(ctx, res, () => rolloutLines(res.rollouts));
  } else {
    const path = `${base}/${seg(positional(ctx, 1, 'RID'))}`;
    const body = action === 'resume' ? resumeBody(ctx) : undefined;
    const res = await ctx.client.request<RolloutRow>(action === 'get' ? 'GET' : 'POST', action === 'get' ? path : `${path}/${action}`, body);
    out(ctx, res, () => rolloutLines([res]));
  }
}

const OVERDUE = ['apply', 'refuse', 'skip', 'reschedule'] as const;

/** A resume's body from --overdue and --at (docs/schedule.md, "Resuming past a step's time"); none without them. */
function resumeBody(ctx: Ctx): string | undefined {
  const overdue = ctx.args.flags.get('overdue');
  const hasAt = ctx.args.flags.has('at');
  if (overdue === undefined) {
    if (hasAt) throw new UsageError('--at goes with --overdue reschedule');
    return undefined;
  }
  if (!(OVERDUE as readonly string[]).includes(overdue)) throw new UsageError(`--overdue takes ${OVERDUE.join(', ')}, got ${JSON.stringify(overdue)}`);
  if (overdue === 'reschedule') {
    if (!hasAt) throw new UsageError('--overdue reschedule needs --at T: when the first held step applies');
    return JSON.stringify({ overdue, at: instant(ctx, 'at') });
  }
  if (hasAt) throw new UsageError('--at goes with --overdue reschedule');
  return JSON.stringify({ overdue });
}

async function killCommand(ctx: Ctx): Promise<void> {
  const rule = optionalInt(ctx, 'rule', 0);
  const segment = ctx.args.flags.get('segment');
  if (segment !== undefined && rule === undefined) throw new UsageError('--segment names the rule given by --rule');
  const path = `environments/${seg(flag(ctx, 'env'))}/content/${seg(flag(ctx, 'id'))}/kill`;
  const body = { ...(rule === undefined ? {} : { rule }), ...(segment === undefined ? {} : { segment }) };
  const res = await ctx.client.request<{ id: string; rule: number | null; ruleCount: number; cancelled: string[] }>('POST', path, JSON.stringify(body));
  out(ctx, res, () =>
    `${res.id}: ${res.rule === null ? 'every rule' : `rule ${res.rule}`} disabled (${res.ruleCount} rules still apply); ` +
    `${res.cancelled.length} scheduled change(s) cancelled${res.cancelled.length === 0 ? '' : ': ' + res.cancelled.join(', ')}\n`);
}

async function previewCommand(ctx: Ctx): Promise<void> {
  const at = ctx.args.flags.has('at') ? instant(ctx, 'at') : null;
  const context = ctx.args.flags.get('context') ?? '{}';
  const path = `environments/${seg(flag(ctx, 'env'))}/content/${seg(flag(ctx, 'id'))}/preview${at === null ? '' : `?at=${encodeURIComponent(at)}`}`;
  const res = await ctx.client.request<{ answerText: string; revision: number; rules: { index: number; segment: string; applied: boolean; variant: string | null; disabled: boolean }[] }>('POST', path, context);
  out(ctx, res, () =>
    `${res.answerText}\n(revision ${res.revision}${at === null ? '' : `, as it will be at ${at}`})\n` +
    formatTable(['RULE', 'SEGMENT', 'APPLIED', 'VARIANT', 'DISABLED'], res.rules.map((r) => [r.index, r.segment, r.applied, r.variant, r.disabled])));
}

export const SCHEDULE_COMMANDS = {
  schedule: scheduleCommand,
  rollout: rolloutCommand,
  kill: killCommand,
  preview: previewCommand,
} satisfies Record<keyof typeof SCHEDULE_HELP, (ctx: Ctx) => Promise<void>>;
