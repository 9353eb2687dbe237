/**
 * The admin state's rows as both stores hold them (SQLite, src/admin/server/state.ts, and
 * PostgreSQL, state-postgres.ts, read the same columns) and how they become the API's entries.
 */
import type { TokenRole, TokenScope } from './access.js';
import type { AdminTokenInfo, AuditEntry, WebhookEvent, WebhookInfo } from './state.js';

export interface AuditRow {
  id: number;
  at: string;
  actor: string;
  token_id: string;
  action: string;
  env: string | null;
  target: string | null;
  detail: string;
}

/** The columns of a webhook row every store has (the secret columns differ by store). */
export interface WebhookInfoRow {
  id: string;
  url: string;
  events: string;
  created_at: string;
}

export function auditFromRow(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    at: row.at,
    actor: row.actor,
    tokenId: row.token_id,
    action: row.action,
    env: row.env,
    target: row.target,
    detail: JSON.parse(row.detail) as unknown,
  };
}

export function webhookInfoFromRow(row: WebhookInfoRow): WebhookInfo {
  return { id: row.id, url: row.url, events: JSON.parse(row.events) as WebhookEvent[], createdAt: row.created_at };
}

export interface TokenRow {
  id: string;
  name: string;
  /** Hex SHA-256 of the token. */
  digest: string;
  role: string;
  /** JSON: `"*"` or an array of environment ids. */
  scope: string;
  created_at: string;
  created_by: string;
  revoked_at: string | null;
}

export function tokenFromRow(row: TokenRow): AdminTokenInfo {
  return {
    id: row.id,
    name: row.name,
    role: row.role as TokenRole,
    environments: JSON.parse(row.scope) as TokenScope,
    createdAt: row.created_at,
    createdBy: row.created_by,
    revokedAt: row.revoked_at,
  };
}
