/**
 * The admin operations on many items at once: an environment synced into another, a bundle
 * imported or exported. An import announces only what differs between the items' states before and
 * after it, read inside its transaction.
 */
import { RcdError } from '../../runtime/errors.js';
import type { PreparedImport } from '../../store/import-plan.js';
import type { ChangeEntry, ImportReport, RoutingDelta, SyncReport } from '../../store/types.js';
import { inScope } from './access.js';
import { webhookPayload, type WebhookPayload } from './webhooks.js';
import { planSync } from './sync-plan.js';
import { announcing, changed, now, param, parseBodyObject, read, type AdminCall, type AdminContext, type AdminHandler, type AdminResult } from './admin-call.js';

export async function syncEnvironment(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const from = param(call, 0);
  const body = parseBodyObject(call, '{"to":"<env>","ids":[...],"dryRun":false}', ['to', 'ids', 'dryRun']);
  if (typeof body.to !== 'string' || body.to === '') throw new RcdError('invalid_body', 'to must be a non-empty string');
  let ids: string[] | undefined;
  if (body.ids !== undefined && body.ids !== null) {
    if (!Array.isArray(body.ids) || !body.ids.every((x): x is string => typeof x === 'string' && x !== '')) {
      throw new RcdError('invalid_body', 'ids must be an array of non-empty strings (omit it to sync everything)');
    }
    ids = body.ids;
  }
  if (body.dryRun !== undefined && typeof body.dryRun !== 'boolean') throw new RcdError('invalid_body', 'dryRun must be true or false');
  // The route checked the source environment; the target is written too.
  if (!inScope(call.principal, body.to)) {
    throw new RcdError('forbidden_scope', `token "${call.principal.name}" may not act on environment "${body.to}"`);
  }
  if (body.dryRun === true) return read(await planSync(ctx.store, from, body.to, ids));
  const announce = await announcing<SyncReport>(ctx, call, (r) => {
    const at = now();
    return r.items.filter((i) => i.action !== 'unchanged').map((i) => webhookPayload('environment.synced', r.to, i.id, i.hash, at));
  });
  const to = body.to;
  const report = await ctx.bulk.run(() => ctx.store.sync(from, to, ids, announce));
  const moved = report.items.filter((i) => i.action !== 'unchanged');
  if (moved.length === 0) return read(report);
  return changed(200, report, {
    live: true, action: 'environment.sync', env: from, target: report.to,
    detail: { ids: ids ?? null, created: moved.filter((i) => i.action === 'created').length, updated: moved.filter((i) => i.action === 'updated').length },
  });
}

export async function prepareImportWrite(ctx: AdminContext, call: AdminCall): Promise<AdminHandler> {
  const prepared = await ctx.imports.prepare(call.body);
  return (c, k) => importPrepared(c, k, prepared);
}

export async function importBundle(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  return (await prepareImportWrite(ctx, call))(ctx, call);
}

async function importPrepared(ctx: AdminContext, call: AdminCall, prepared: PreparedImport): Promise<AdminResult> {
  // The contents the bundle names, before and after: O(bundle) reads, not two whole-store snapshots,
  // and only when a webhook listens for what they would tell (two reads of a 33,000-item release
  // were a third of its import's CPU).
  const named = (await ctx.state.listWebhookInfo()).some((h) => h.events.includes('content.updated') || h.events.includes('mapping.updated'))
    ? namedContents(prepared)
    : undefined;
  const report = await ctx.bulk.run(async () => {
    const before = named === undefined ? [] : (await ctx.store.loadDelta(named, 0, 0)).contents;
    // The state after is read inside the import's transaction, so the events are what it changed.
    return ctx.store.importPrepared(
      prepared,
      await announcing<ImportReport>(ctx, call, (_r, after) => diffEvents(before, after, now()), named),
      { createdBy: call.actor, tokenId: call.principal.tokenId, limits: ctx.schedules.limits },
    );
  });
  if (report.schedulesAdded + report.rolloutsAdded > 0) ctx.schedules.kick();
  const nothing = Object.values(report).every((n) => n === 0);
  if (nothing) return read(report);
  return changed(200, report, {
    live: true, action: 'bundle.import', env: null, target: null, detail: report,
  });
}

/**
 * Every content item a bundle plans to write, as change entries for Store.loadDelta (which reads each
 * one's current state). A bundle with problems plans nothing the import would write.
 */
function namedContents(prepared: PreparedImport): ChangeEntry[] {
  const entries: ChangeEntry[] = [];
  for (const env of prepared.plan) {
    for (const c of env.contents) entries.push({ seq: 0, kind: 'content', envId: env.envId, target: c.idLower });
  }
  return entries;
}

type ContentState = RoutingDelta['contents'][number];

/** Import touches many items at once; announce what actually differs between the two states. */
function diffEvents(before: readonly ContentState[], after: readonly ContentState[], at: string): WebhookPayload[] {
  const old = new Map<string, { rev: number; mapping: number | null }>();
  for (const { meta } of before) {
    if (meta === null) continue;
    const newest = meta.revisions[meta.revisions.length - 1];
    old.set(meta.envId + '\0' + meta.idLower, { rev: newest?.revId ?? -1, mapping: meta.mappingId });
  }
  const events: WebhookPayload[] = [];
  for (const { meta } of after) {
    if (meta === null) continue;
    const newest = meta.revisions[meta.revisions.length - 1];
    const hash = newest?.hash ?? null;
    const prev = old.get(meta.envId + '\0' + meta.idLower);
    if (prev === undefined || prev.rev !== (newest?.revId ?? -1)) events.push(webhookPayload('content.updated', meta.envId, meta.id, hash, at));
    if ((prev?.mapping ?? null) !== meta.mappingId) events.push(webhookPayload('mapping.updated', meta.envId, meta.id, hash, at));
  }
  return events;
}

export async function exportBundle(ctx: AdminContext): Promise<AdminResult> {
  return read(await ctx.store.exportBundle());
}
