/**
 * The admin operations on environments, keys, content items and their mappings: validate the
 * request, call the Store, and describe the change so the server can make it live, audit it and
 * announce it in one place (admin-call.ts says what a handler takes and gives). The route table,
 * ADMIN_ROUTES, is here; the operations on many items at once are in bundle-handlers.ts, on webhooks
 * and the audit log in webhook-handlers.ts, on admin tokens in token-handlers.ts, on scheduled
 * changes in schedule-handlers.ts, the readout of experiments in experiment-handlers.ts.
 */
import { RcdError } from '../../runtime/errors.js';
import { decodeUtf8 } from '../../shared/json-body.js';
import { isPlainObject } from '../../shared/json.js';
import { appVersionProblem, plainKeyProblem } from '../../store/ids.js';
import type { ContentDetail, ContentRef, MappingResult, PutContentResult, Store } from '../../store/types.js';
import { inScope } from './access.js';
import { webhookPayload } from './webhooks.js';
import { previewContent } from './preview.js';
import { parseInstant } from '../../shared/instant.js';
import { contentNowAndAt } from '../../store/schedule/replay.js';
import type { ScheduleRow } from '../../store/schedule/rows.js';
import { cancelledEvents } from './schedule-view.js';
import { SCHEDULE_ROUTES } from './schedule-handlers.js';
import { CHANGE_ROUTES, replayedView } from './change-handlers.js';
import { EXPERIMENT_ROUTES } from './experiment-handlers.js';
import { exportBundle, importBundle, prepareImportWrite, syncEnvironment } from './bundle-handlers.js';
import { addWebhook, deleteWebhook, listAudit, listDeadLetters, listWebhooks, prepareWebhook } from './webhook-handlers.js';
import { createToken, listTokens, revokeToken } from './token-handlers.js';
import {
  announcing,
  changed,
  now,
  param,
  parseBodyObject,
  parseJsonBody,
  positiveInt,
  read,
  refuseUnknownFields,
  requireNoBody,
  route,
  type AdminCall,
  type AdminContext,
  type AdminResult,
  type AdminRoute,
} from './admin-call.js';

export { INLINE_IMPORTS, type AdminCall, type AdminContext, type AdminHandler, type AdminPrepare, type AdminResult, type AdminRoute, type ImportPreparer } from './admin-call.js';

/** The members of the delivery API's user context (src/delivery/context.ts): a preview's body. */
const USER_CONTEXT_FIELDS = ['u', 'p', 'v'];

// ---- environments ---------------------------------------------------------------------------

async function listEnvironments(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const all = await ctx.store.listEnvironments();
  return read({ environments: all.filter((e) => inScope(call.principal, e.id)) });
}

async function putEnvironment(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  requireNoBody(call);
  const created = await ctx.store.putEnvironment(env);
  if (!created) return read({ id: env, created: false });
  return changed(201, { id: env, created: true }, {
    live: true, action: 'environment.create', env, target: null, detail: null,
  });
}

async function deleteEnvironment(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  requireNoBody(call);
  const forceRaw = call.query.get('force');
  if (forceRaw !== null && forceRaw !== 'true' && forceRaw !== 'false') {
    throw new RcdError('invalid_query', 'force must be true or false');
  }
  const force = forceRaw === 'true';
  // Read first so the deletion can be announced per content item; the store re-checks atomically.
  const before = await listContentOrEmpty(ctx.store, env);
  const cancelled = await ctx.store.deleteEnvironment(env, force, await announcing<readonly ScheduleRow[]>(ctx, call, (rows) => {
    const at = now();
    return [...before.map((c) => webhookPayload('content.deleted', env, c.id, c.hash, at)), ...cancelledEvents(rows, at)];
  }));
  return changed(200, { id: env, deleted: true, contentDeleted: before.length }, {
    live: true, action: 'environment.delete', env, target: null,
    detail: { force, contentDeleted: before.length, schedulesCancelled: cancelled.map((r) => r.schedule_id) },
  });
}

async function listContentOrEmpty(store: Store, env: string): Promise<{ id: string; hash: string }[]> {
  try {
    return await store.listContent(env);
  } catch (err) {
    if (err instanceof RcdError && err.status === 404) return [];
    throw err;
  }
}

// ---- keys -----------------------------------------------------------------------------------

async function createKey(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  let plain: string | undefined;
  if (call.body.length > 0) {
    const body = parseBodyObject(call, '{"key":"<your key>"} or empty', ['key']);
    if (body.key !== undefined) {
      // The store's rule, so a key the admin API refuses is exactly one a bundle import refuses.
      const problem = plainKeyProblem(body.key);
      if (problem !== '') throw new RcdError('invalid_body', `key: ${problem} (omit it to get a random key)`);
      plain = body.key as string;
    }
  }
  const { id, key } = await ctx.store.createKey(env, plain);
  return changed(201, { id, key }, {
    live: true, action: 'key.create', env, target: id, detail: null,
  });
}

async function listKeys(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const keys = await ctx.store.listKeys(param(call, 0));
  return read({
    keys: keys.map((k) => ({ id: k.id, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt, revokedAt: k.revokedAt })),
  });
}

async function revokeKey(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const keyId = param(call, 1);
  requireNoBody(call);
  await ctx.store.revokeKey(env, keyId);
  return changed(200, { id: keyId, revoked: true }, {
    live: true, action: 'key.revoke', env, target: keyId, detail: null,
  });
}

// ---- content --------------------------------------------------------------------------------

async function listContent(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  return read({ content: await ctx.store.listContent(param(call, 0)) });
}

async function putContent(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  const minAppVersion = call.query.get('minAppVersion');
  // The store's own rule (9-digit parts included), so the admin API and the store refuse alike.
  const versionProblem = minAppVersion === null ? '' : appVersionProblem(minAppVersion);
  if (versionProblem !== '') throw new RcdError('invalid_query', versionProblem);
  const text = decodeUtf8(call.body, 'invalid_content');
  const result = await ctx.store.putContent(env, id, text, minAppVersion, await announcing<PutContentResult>(ctx, call, (r) =>
    r.changed ? [webhookPayload('content.updated', env, r.id, r.hash, now())] : []));
  const body = { id: result.id, hash: result.hash, revision: result.revision, changed: result.changed };
  if (!result.changed) return read(body);
  return changed(200, body, {
    live: true, action: 'content.put', env, target: result.id,
    detail: { hash: result.hash, revision: result.revision, minAppVersion },
  });
}

async function getContent(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  const detail = await ctx.store.getContent(env, id);
  if (detail === undefined) throw new RcdError('content_not_found', `no content "${id}" in environment "${env}"`);
  return read(detail);
}

async function deleteContent(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  requireNoBody(call);
  // The store names the item (its id as created) and its last hash from inside the write: no listing.
  const deleted = await ctx.store.deleteContent(env, id, await announcing<ContentRef>(ctx, call, (r) => [webhookPayload('content.deleted', env, r.id, r.hash, now())]));
  return changed(200, { id: deleted.id, deleted: true }, {
    live: true, action: 'content.delete', env, target: deleted.id, detail: { hash: deleted.hash },
  });
}

async function rollbackContent(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  requireNoBody(call);
  const to = positiveInt(call.query, 'to', undefined);
  if (to === undefined) throw new RcdError('invalid_query', 'to (the revision number to restore) is required');
  const result = await ctx.store.rollback(env, id, to, await announcing<PutContentResult>(ctx, call, (r) =>
    r.changed ? [webhookPayload('content.updated', env, r.id, r.hash, now())] : []));
  const body = { id: result.id, hash: result.hash, revision: result.revision, changed: result.changed };
  if (!result.changed) return read(body);
  return changed(200, body, {
    live: true, action: 'content.rollback', env, target: result.id,
    detail: { to, hash: result.hash, revision: result.revision },
  });
}

// ---- mappings -------------------------------------------------------------------------------

async function putMapping(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  const mapping = parseJsonBody(call);
  const { id: name, mappingId, ruleCount } = await ctx.store.putMapping(env, id, mapping, await announcing<MappingResult>(ctx, call, (r) =>
    [webhookPayload('mapping.updated', env, r.id, r.hash, now())]));
  return changed(200, { id: name, mappingId, ruleCount }, {
    live: true, action: 'mapping.put', env, target: name, detail: { mappingId, ruleCount },
  });
}

async function deleteMapping(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  requireNoBody(call);
  const { id: name } = await ctx.store.deleteMapping(env, id, await announcing<ContentRef>(ctx, call, (r) => [webhookPayload('mapping.updated', env, r.id, r.hash, now())]));
  return changed(200, { id: name, mappingDeleted: true }, {
    live: true, action: 'mapping.delete', env, target: name, detail: null,
  });
}

/**
 * The answer one user context gets, now, or (`?at=`) as it will be at that time: the pending
 * scheduled changes of the item due by then applied in memory over a read snapshot (no write lock;
 * bounded by the preview gate).
 */
async function previewMapping(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  const body = parseJsonBody(call);
  // The delivery API's user context, with no member it does not know (a misspelt `p` would preview another user).
  if (isPlainObject(body)) refuseUnknownFields(body, USER_CONTEXT_FIELDS);
  const atText = call.query.get('at');
  if (atText === null) {
    const detail = await ctx.store.getContent(env, id);
    if (detail === undefined) throw new RcdError('content_not_found', `no content "${id}" in environment "${env}"`);
    return read(previewContent(detail, body));
  }
  const atMs = parseInstant(atText);
  if (atMs === null) throw new RcdError('invalid_query', 'at must be an RFC 3339 time with an offset, e.g. 2026-10-31T00:00:00Z');
  const { now, at, changes } = await ctx.previews.run(() => ctx.store.snapshotStep(() => contentNowAndAt(env, id, atMs, ctx.previews.limits.maxOps)));
  if (at === undefined) throw new RcdError('content_not_found', `no content "${id}" in environment "${env}" at ${atText}`);
  // Beside the answer at that time: the pending changes folded in, and the answer now to compare with.
  return read({ ...previewContent(at, body), changes: replayedView(changes), now: previewNow(now, body) });
}

/** The answer now for the same user context, or null when nothing answers it now (no item, no revision for its app version). */
function previewNow(detail: ContentDetail | undefined, body: unknown): { answer: unknown; revision: number; hash: string } | null {
  if (detail === undefined) return null;
  try {
    const p = previewContent(detail, body);
    return { answer: p.answer, revision: p.revision, hash: p.hash };
  } catch (err) {
    if (err instanceof RcdError && err.code === 'content_not_found') return null;
    throw err;
  }
}

// ---- the table ------------------------------------------------------------------------------

const ENV = 'environments/:env';
const CONTENT = `${ENV}/content/:id`;

export const ADMIN_ROUTES: readonly AdminRoute[] = [
  route('GET', 'environments', listEnvironments, false, 'read', 'own'),
  route('PUT', ENV, putEnvironment, true, 'admin', 'env'),
  route('DELETE', ENV, deleteEnvironment, true, 'admin', 'env'),
  route('POST', `${ENV}/keys`, createKey, true, 'editor', 'env'),
  route('GET', `${ENV}/keys`, listKeys, false, 'read', 'env'),
  route('DELETE', `${ENV}/keys/:keyId`, revokeKey, true, 'editor', 'env'),
  route('GET', `${ENV}/content`, listContent, false, 'read', 'env'),
  route('PUT', CONTENT, putContent, true, 'editor', 'env'),
  route('GET', CONTENT, getContent, false, 'read', 'env'),
  route('DELETE', CONTENT, deleteContent, true, 'editor', 'env'),
  route('POST', `${CONTENT}/rollback`, rollbackContent, true, 'editor', 'env'),
  route('PUT', `${CONTENT}/mapping`, putMapping, true, 'editor', 'env'),
  route('DELETE', `${CONTENT}/mapping`, deleteMapping, true, 'editor', 'env'),
  route('POST', `${CONTENT}/preview`, previewMapping, false, 'read', 'env'),
  route('POST', `${ENV}/sync`, syncEnvironment, true, 'editor', 'env'),
  route('POST', 'import', importBundle, true, 'admin', 'all', prepareImportWrite),
  route('GET', 'export', exportBundle, false, 'read', 'all'),
  route('POST', 'webhooks', addWebhook, true, 'admin', 'all', prepareWebhook),
  route('GET', 'webhooks', listWebhooks, false, 'admin', 'all'),
  route('GET', 'webhooks/dead-letters', listDeadLetters, false, 'admin', 'all'),
  route('DELETE', 'webhooks/:id', deleteWebhook, true, 'admin', 'all'),
  route('GET', 'audit', listAudit, false, 'read', 'all'),
  route('POST', 'tokens', createToken, true, 'admin', 'all'),
  route('GET', 'tokens', listTokens, false, 'admin', 'all'),
  route('DELETE', 'tokens/:name', revokeToken, true, 'admin', 'all'),
  ...SCHEDULE_ROUTES,
  ...CHANGE_ROUTES,
  ...EXPERIMENT_ROUTES,
];
