/**
 * The admin state's rows as both stores hold them (SQLite, state-sqlite.ts, and PostgreSQL,
 * state-postgres.ts, read the same columns), how they become the API's entries, and the new rows
 * and refusals both stores make the same way.
 */
import { randomUUID } from 'node:crypto';
import { RcdError } from '../../runtime/errors.js';
import type { TokenRole, TokenScope } from './access.js';
import { openSealed } from './sealed.js';
import type { AdminTokenInfo, AuditEntry, NewAdminToken, NewAuditEntry, WebhookEvent, WebhookInfo, WebhookRegistration } from './state.js';

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

/** The entry a store returns for an audit entry it just wrote: `detail` is the JSON it stored. */
export function newAuditEntry(id: number, at: string, entry: NewAuditEntry, detail: string): AuditEntry {
  return {
    id,
    at,
    actor: entry.actor,
    tokenId: entry.tokenId,
    action: entry.action,
    env: entry.env,
    target: entry.target,
    detail: JSON.parse(detail) as unknown,
  };
}

export function webhookInfoFromRow(row: WebhookInfoRow): WebhookInfo {
  return { id: row.id, url: row.url, events: JSON.parse(row.events) as WebhookEvent[], createdAt: row.created_at };
}

/** A webhook row with its sealed secret (null: a row an older version wrote in clear, not sealed yet). */
export interface SealedWebhookRow extends WebhookInfoRow {
  secret_sealed: string | null;
}

export function newWebhookId(): string {
  return 'wh_' + randomUUID().replaceAll('-', '').slice(0, 16);
}

/**
 * The webhooks of `rows` with their secrets opened, for the dispatcher. A row whose secret does not
 * open with `sealKey` (the key file was replaced) is left out and logged once: `reported` holds the
 * ids already logged.
 */
export function openWebhookRows(rows: readonly SealedWebhookRow[], sealKey: Buffer, reported: Set<string>, log: (line: string) => void): WebhookRegistration[] {
  const out: WebhookRegistration[] = [];
  for (const row of rows) {
    const secret = row.secret_sealed === null ? null : openSealed(sealKey, row.secret_sealed, row.id);
    if (secret === null) {
      if (!reported.has(row.id)) {
        reported.add(row.id);
        log(`admin: webhook ${row.id}: its secret does not open with the current webhook key; not delivered until it is registered again`);
      }
      continue;
    }
    out.push({ ...webhookInfoFromRow(row), secret });
  }
  return out;
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

/** The row of a new token, as both stores insert it. */
export function newTokenRow(token: NewAdminToken): TokenRow {
  return {
    id: 'tok_' + randomUUID().replaceAll('-', '').slice(0, 16),
    name: token.name,
    digest: token.digest,
    role: token.role,
    scope: JSON.stringify(token.environments),
    created_at: new Date().toISOString(),
    created_by: token.createdBy,
    revoked_at: null,
  };
}

export function tokenNameTaken(name: string): RcdError {
  return new RcdError('conflict', `an admin token named "${name}" exists; revoke it first or pick another name`);
}
