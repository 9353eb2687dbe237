/**
 * The admin operations: validate the request, call the Store (or the admin state), and describe
 * the change so the server can make it live, audit it and announce it in one place (admin-call.ts
 * says what a handler takes and gives). The route table, ADMIN_ROUTES, is here; the scheduled
 * changes' routes are in schedule-handlers.ts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { RcdError } from '../../runtime/errors.js';
import { decodeUtf8 } from '../../shared/json-body.js';
import { isPlainObject } from '../../shared/json.js';
import type { PreparedImport } from '../../store/bundle/bundle.js';
import { appVersionProblem, envIdProblem, plainKeyProblem } from '../../store/ids.js';
import type { ChangeEntry, ContentRef, ImportReport, MappingResult, PutContentResult, RoutingDelta, Store, SyncReport } from '../../store/types.js';
import { inScope, TOKEN_ROLES, type TokenRole, type TokenScope } from './access.js';
import { WEBHOOK_EVENTS, type WebhookEvent, type WebhookInfo } from './state.js';
import { STANDARD_SECRET_PREFIX, webhookSigner, type WebhookPayload } from './webhooks.js';
import { checkWebhookTarget } from './webhook-target.js';
import { previewContent } from './preview.js';
import { planSync } from './sync-plan.js';
import { parseInstant } from '../../shared/instant.js';
import { cancelOfToken } from '../../store/schedule/lifecycle.js';
import { contentAt } from '../../store/schedule/replay.js';
import type { ScheduleRow } from '../../store/schedule/rows.js';
import { cancelledEvents } from './schedule-view.js';
import { SCHEDULE_ROUTES } from './schedule-handlers.js';
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
  type AdminHandler,
  type AdminResult,
  type AdminRoute,
} from './admin-call.js';

export { INLINE_IMPORTS, type AdminCall, type AdminContext, type AdminHandler, type AdminPrepare, type AdminResult, type AdminRoute, type ImportPreparer } from './admin-call.js';

const MAX_AUDIT_LIMIT = 1000;
/** The members of the delivery API's user context (src/delivery/context.ts): a preview's body. */
const USER_CONTEXT_FIELDS = ['u', 'p', 'v'];
const MAX_SECRET_LENGTH = 512;

function payload(event: WebhookEvent, env: string, id: string | null, hash: string | null, at: string): WebhookPayload {
  return { event, env, id, hash, at };
}

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
    return [...before.map((c) => payload('content.deleted', env, c.id, c.hash, at)), ...cancelledEvents(rows, at)];
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
    r.changed ? [payload('content.updated', env, r.id, r.hash, now())] : []));
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
  const deleted = await ctx.store.deleteContent(env, id, await announcing<ContentRef>(ctx, call, (r) => [payload('content.deleted', env, r.id, r.hash, now())]));
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
    r.changed ? [payload('content.updated', env, r.id, r.hash, now())] : []));
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
    [payload('mapping.updated', env, r.id, r.hash, now())]));
  return changed(200, { id: name, mappingId, ruleCount }, {
    live: true, action: 'mapping.put', env, target: name, detail: { mappingId, ruleCount },
  });
}

async function deleteMapping(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const env = param(call, 0);
  const id = param(call, 1);
  requireNoBody(call);
  const { id: name } = await ctx.store.deleteMapping(env, id, await announcing<ContentRef>(ctx, call, (r) => [payload('mapping.updated', env, r.id, r.hash, now())]));
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
  let detail;
  if (atText === null) {
    detail = await ctx.store.getContent(env, id);
  } else {
    const atMs = parseInstant(atText);
    if (atMs === null) throw new RcdError('invalid_query', 'at must be an RFC 3339 time with an offset, e.g. 2026-10-31T00:00:00Z');
    detail = await ctx.previews.run(() => ctx.store.snapshotStep(() => contentAt(env, id, atMs, ctx.previews.limits.maxOps)));
  }
  if (detail === undefined) throw new RcdError('content_not_found', `no content "${id}" in environment "${env}"${atText === null ? '' : ` at ${atText}`}`);
  return read(previewContent(detail, body));
}

// ---- sync, import, export -------------------------------------------------------------------

async function syncEnvironment(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
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
    return r.items.filter((i) => i.action !== 'unchanged').map((i) => payload('environment.synced', r.to, i.id, i.hash, at));
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

async function prepareImportWrite(ctx: AdminContext, call: AdminCall): Promise<AdminHandler> {
  const prepared = await ctx.imports.prepare(call.body);
  return (c, k) => importPrepared(c, k, prepared);
}

async function importBundle(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
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
    if (prev === undefined || prev.rev !== (newest?.revId ?? -1)) events.push(payload('content.updated', meta.envId, meta.id, hash, at));
    if ((prev?.mapping ?? null) !== meta.mappingId) events.push(payload('mapping.updated', meta.envId, meta.id, hash, at));
  }
  return events;
}

async function exportBundle(ctx: AdminContext): Promise<AdminResult> {
  return read(await ctx.store.exportBundle());
}

// ---- webhooks and audit ---------------------------------------------------------------------

function publicWebhook(w: WebhookInfo): WebhookInfo {
  return { id: w.id, url: w.url, events: w.events, createdAt: w.createdAt };
}

/**
 * A registration's checks, outside the write queue: the target's name may take a DNS round trip,
 * which must not hold up the writes behind it. Returns the write.
 */
async function prepareWebhook(ctx: AdminContext, call: AdminCall): Promise<AdminHandler> {
  const body = parseBodyObject(call, '{"url":...,"events":[...],"secret":...}', ['url', 'events', 'secret']);
  const url = parseWebhookUrl(body.url);
  const events = parseEvents(body.events);
  let secret: string;
  if (body.secret === undefined) {
    secret = STANDARD_SECRET_PREFIX + randomBytes(32).toString('base64');
  } else if (typeof body.secret === 'string' && body.secret.length > 0 && body.secret.length <= MAX_SECRET_LENGTH) {
    secret = body.secret;
  } else {
    throw new RcdError('invalid_body', `secret must be a non-empty string of at most ${MAX_SECRET_LENGTH} characters`);
  }
  try {
    webhookSigner(secret);
  } catch {
    throw new RcdError('invalid_body', `a secret starting with ${STANDARD_SECRET_PREFIX} must be followed by base64 (the Standard Webhooks form)`);
  }
  await checkWebhookTarget(new URL(url), ctx.allowPrivateWebhooks);
  return async (c) => {
    const hook = await c.state.addWebhook(url, events, secret);
    return changed(201, { ...publicWebhook(hook), secret }, {
      live: false, action: 'webhook.add', env: null, target: hook.id, detail: { url, events },
    });
  };
}

async function addWebhook(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  return (await prepareWebhook(ctx, call))(ctx, call);
}

function parseWebhookUrl(raw: unknown): string {
  if (typeof raw !== 'string') throw new RcdError('invalid_body', 'url must be a string');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new RcdError('invalid_body', `url "${raw}" is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RcdError('invalid_body', 'url must be http or https');
  return url.href;
}

function parseEvents(raw: unknown): WebhookEvent[] {
  const known: readonly string[] = WEBHOOK_EVENTS;
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new RcdError('invalid_body', `events must be a non-empty array of: ${WEBHOOK_EVENTS.join(', ')}`);
  }
  const out: WebhookEvent[] = [];
  for (const e of raw) {
    if (typeof e !== 'string' || !known.includes(e)) {
      throw new RcdError('invalid_body', `unknown event ${JSON.stringify(e)}; known: ${WEBHOOK_EVENTS.join(', ')}`);
    }
    if (!out.includes(e as WebhookEvent)) out.push(e as WebhookEvent);
  }
  return out;
}

async function listWebhooks(ctx: AdminContext): Promise<AdminResult> {
  return read({ webhooks: await ctx.state.listWebhookInfo() });
}

async function deleteWebhook(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const id = param(call, 0);
  requireNoBody(call);
  await ctx.state.deleteWebhook(id);
  return changed(200, { id, deleted: true }, {
    live: false, action: 'webhook.delete', env: null, target: id, detail: null,
  });
}

/** The outbox's dead letters (newest first) and how many deliveries are still pending. */
async function listDeadLetters(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const limit = positiveInt(call.query, 'limit', 100) as number;
  if (limit > MAX_AUDIT_LIMIT) throw new RcdError('invalid_query', `limit must be at most ${MAX_AUDIT_LIMIT}`);
  // Counts first, then the list, one after the other: read at once (two PostgreSQL connections), a
  // letter committed between the two reads was counted but not listed. In this order every dead
  // letter the count includes is in the list (up to `limit`).
  const counts = await ctx.store.outboxCounts();
  const letters = await ctx.store.listDeadLetters(limit);
  return read({
    pending: counts.pending,
    dead: counts.dead,
    deadLetters: letters.map((l) => ({
      id: l.id,
      hookId: l.hookId,
      event: l.event,
      payload: JSON.parse(l.body) as unknown,
      attempts: l.attempts,
      lastError: l.lastError,
      createdAt: l.createdAt,
      deadAt: l.deadAt,
    })),
  });
}

async function listAudit(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const limit = positiveInt(call.query, 'limit', 100) as number;
  if (limit > MAX_AUDIT_LIMIT) throw new RcdError('invalid_query', `limit must be at most ${MAX_AUDIT_LIMIT}`);
  const before = positiveInt(call.query, 'before', undefined);
  return read({ entries: await ctx.state.listAudit(limit, before) });
}

// ---- admin tokens ---------------------------------------------------------------------------

/** The same rule as a declared audit actor: a token's name is what the audit log records. */
const TOKEN_NAME_RE = /^[A-Za-z0-9_.@:-]{1,64}$/;
/** The bootstrap token's name in the audit log; no named token may take it. */
export const BOOTSTRAP_TOKEN_NAME = 'bootstrap';
export const NAMED_TOKEN_PREFIX = 'rcdt_';

/** Hex SHA-256 of a presented token: what the store keeps and looks tokens up by. */
export function adminTokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

function parseScope(raw: unknown): TokenScope {
  if (raw === '*') return '*';
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new RcdError('invalid_body', 'environments must be "*" (every environment) or a non-empty array of environment ids');
  }
  const out: string[] = [];
  for (const env of raw) {
    const problem = envIdProblem(env);
    if (problem !== '') throw new RcdError('invalid_body', `environments: ${problem}`);
    if (!out.includes(env as string)) out.push(env as string);
  }
  return out;
}

async function createToken(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const body = parseBodyObject(call, '{"name":...,"role":...,"environments":"*"|[...]}', ['name', 'role', 'environments']);
  if (typeof body.name !== 'string' || !TOKEN_NAME_RE.test(body.name) || body.name === BOOTSTRAP_TOKEN_NAME) {
    throw new RcdError('invalid_body', `name must be 1-64 of A-Z a-z 0-9 _ . @ : - and not "${BOOTSTRAP_TOKEN_NAME}"`);
  }
  const roles: readonly unknown[] = TOKEN_ROLES;
  if (!roles.includes(body.role)) throw new RcdError('invalid_body', `role must be one of: ${TOKEN_ROLES.join(', ')}`);
  const role = body.role as TokenRole;
  const environments = parseScope(body.environments);
  // 256 random bits: a digest without salt or stretching cannot be reversed or guessed.
  const token = NAMED_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const info = await ctx.state.createToken({ name: body.name, role, environments, digest: adminTokenDigest(token), createdBy: call.actor });
  return changed(201, { ...info, token }, {
    live: false, action: 'token.create', env: null, target: info.name, detail: { id: info.id, role, environments },
  });
}

async function listTokens(ctx: AdminContext): Promise<AdminResult> {
  return read({ tokens: await ctx.state.listTokens() });
}

/**
 * What the token scheduled is cancelled first (a scheduled change is applied with its creator's
 * rights, which a revocation withdraws), then the token revoked: should the second fail, the
 * token still works but nothing it scheduled applies behind anyone's back. Then once more: a write
 * of the token on another node of the store may have committed between the two (its own check
 * found the token live); once the token is revoked none can (src/store/write-guard.ts), so this
 * second pass, made without the caller's check (a token may revoke itself), leaves nothing behind.
 */
async function revokeToken(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const name = param(call, 0);
  requireNoBody(call);
  const live = (await ctx.state.listTokens()).find((t) => t.name === name && t.revokedAt === null);
  if (live === undefined) throw new RcdError('not_found', `no live admin token named "${name}"`);
  const events = (rows: readonly ScheduleRow[]): WebhookPayload[] => cancelledEvents(rows, now());
  const cancelled = await ctx.store.writeStep(() => cancelOfToken(live.id), await announcing<readonly ScheduleRow[]>(ctx, call, events));
  const info = await ctx.state.revokeToken(name);
  const late = await ctx.unguardedStore.writeStep(() => cancelOfToken(live.id), await announcing<readonly ScheduleRow[]>(ctx, call, events));
  return changed(200, { id: info.id, name: info.name, revoked: true }, {
    live: false, action: 'token.revoke', env: null, target: info.name, detail: { id: info.id, schedulesCancelled: [...cancelled, ...late].map((r) => r.schedule_id) },
  });
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
];
