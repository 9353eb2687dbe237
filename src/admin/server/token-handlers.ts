/**
 * The admin operations on named admin tokens: created with a role and the environments they may act
 * on, listed without their secret, revoked together with what they scheduled.
 */
import { createHash, randomBytes } from 'node:crypto';
import { RcdError } from '../../runtime/errors.js';
import { envIdProblem } from '../../store/ids.js';
import { cancelOfToken } from '../../store/schedule/lifecycle.js';
import type { ScheduleRow } from '../../store/schedule/rows.js';
import { TOKEN_ROLES, type TokenRole, type TokenScope } from './access.js';
import type { WebhookPayload } from './webhooks.js';
import { cancelledEvents } from './schedule-view.js';
import { announcing, changed, now, param, parseBodyObject, read, requireNoBody, type AdminCall, type AdminContext, type AdminResult } from './admin-call.js';

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

export async function createToken(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
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

export async function listTokens(ctx: AdminContext): Promise<AdminResult> {
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
export async function revokeToken(ctx: AdminContext, call: AdminCall): Promise<AdminResult> {
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
