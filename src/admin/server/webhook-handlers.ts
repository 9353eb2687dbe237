/**
 * The admin operations on webhooks (registered after their target's checks, outside the write
 * queue), the outbox's dead letters and the audit log.
 */
import { randomBytes } from 'node:crypto';
import { RcdError } from '../../runtime/errors.js';
import { WEBHOOK_EVENTS, type WebhookEvent, type WebhookInfo } from './state.js';
import { STANDARD_SECRET_PREFIX, webhookSigner } from './webhooks.js';
import { checkWebhookTarget } from './webhook-target.js';
import { changed, param, parseBodyObject, positiveInt, read, requireNoBody, type AdminCall, type AdminContext, type AdminHandler, type AdminResult } from './admin-call.js';

const MAX_AUDIT_LIMIT = 1000;
const MAX_SECRET_LENGTH = 512;

function publicWebhook(w: WebhookInfo): WebhookInfo {
  return { id: w.id, url: w.url, events: w.events, createdAt: w.createdAt };
}

/**
 * A registration's checks, outside the write queue: the target's name may take a DNS round trip,
 * which must not hold up the writes behind it. Returns the write.
 */
export async function prepareWebhook(ctx: AdminContext, call: AdminCall): Promise<AdminHandler> {
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

export async function addWebhook(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
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

export async function listWebhooks(ctx: AdminContext): Promise<AdminResult> {
  return read({ webhooks: await ctx.state.listWebhookInfo() });
}

export async function deleteWebhook(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const id = param(call, 0);
  requireNoBody(call);
  await ctx.state.deleteWebhook(id);
  return changed(200, { id, deleted: true }, {
    live: false, action: 'webhook.delete', env: null, target: id, detail: null,
  });
}

/** The outbox's dead letters (newest first) and how many deliveries are still pending. */
export async function listDeadLetters(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
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

export async function listAudit(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
  const limit = positiveInt(call.query, 'limit', 100) as number;
  if (limit > MAX_AUDIT_LIMIT) throw new RcdError('invalid_query', `limit must be at most ${MAX_AUDIT_LIMIT}`);
  const before = positiveInt(call.query, 'before', undefined);
  return read({ entries: await ctx.state.listAudit(limit, before) });
}
