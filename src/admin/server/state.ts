/**
 * What the management plane's own state is, apart from routing data: the audit log, the webhook
 * registrations and the named admin tokens, and the store interface both backends implement
 * (SQLite, state-sqlite.ts; PostgreSQL, state-postgres.ts; open-state.ts picks one for a store URL).
 */
import type { TokenRole, TokenScope } from './access.js';
import type { WriteGuard } from '../../store/write-guard.js';

export const WEBHOOK_EVENTS = [
  'content.updated',
  'content.deleted',
  'mapping.updated',
  'environment.synced',
  'schedule.created',
  'schedule.applied',
  'schedule.failed',
  'schedule.cancelled',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export interface AuditEntry {
  /** Increasing, never reused: `before` pages on it. */
  readonly id: number;
  readonly at: string;
  /** Who: the label a client declared (the CLI says "cli") or else `token:<tokenId>`. */
  readonly actor: string;
  /** First 8 hex digits of SHA-256 of the admin token used; never the token. */
  readonly tokenId: string;
  /** What, e.g. `content.put`, `key.revoke`, `environment.sync`. */
  readonly action: string;
  readonly env: string | null;
  /** The content id, key id or webhook id acted on. */
  readonly target: string | null;
  /** Small structured facts about the change (hash, revision, counts); never secrets. */
  readonly detail: unknown;
}

/** An entry before the store numbers and timestamps it. */
export type NewAuditEntry = Omit<AuditEntry, 'id' | 'at'>;

export interface WebhookInfo {
  readonly id: string;
  readonly url: string;
  readonly events: readonly WebhookEvent[];
  readonly createdAt: string;
}

/** With the secret opened for signing; the API returns it only when a webhook is created. */
export interface WebhookRegistration extends WebhookInfo {
  readonly secret: string;
}

/** A named admin token as listed: never the token, never its digest. */
export interface AdminTokenInfo {
  /** `tok_` + 16 hex digits; the audit log's token id for this token. */
  readonly id: string;
  readonly name: string;
  readonly role: TokenRole;
  readonly environments: TokenScope;
  readonly createdAt: string;
  /** The audit actor of the call that created it. */
  readonly createdBy: string;
  readonly revokedAt: string | null;
}

export interface NewAdminToken {
  readonly name: string;
  readonly role: TokenRole;
  readonly environments: TokenScope;
  /** Hex SHA-256 of the token; the token itself is never stored. */
  readonly digest: string;
  readonly createdBy: string;
}

export interface AdminStateStore {
  /** RcdError conflict when a token that is not revoked already has this name. */
  createToken(token: NewAdminToken): Promise<AdminTokenInfo>;
  /** Oldest first, revoked ones included. */
  listTokens(): Promise<AdminTokenInfo[]>;
  /** Revokes the live token of that name; RcdError not_found when there is none. */
  revokeToken(name: string): Promise<AdminTokenInfo>;
  /** The live token with this digest, read from the store on every call so a revocation holds on every node at once. */
  findToken(digest: string): Promise<AdminTokenInfo | undefined>;
  appendAudit(entry: NewAuditEntry): Promise<AuditEntry>;
  /** Several entries in one transaction, in order (a batch of scheduled changes applied together). */
  appendAudits(entries: readonly NewAuditEntry[]): Promise<void>;
  /** Newest first; at most `limit`; only ids below `before` when given. */
  listAudit(limit: number, before?: number): Promise<AuditEntry[]>;
  addWebhook(url: string, events: readonly WebhookEvent[], secret: string): Promise<WebhookRegistration>;
  /**
   * Oldest first, with secrets opened, for the dispatcher. A webhook whose sealed secret does not
   * open with the current key (the key file was replaced) is left out and logged once.
   */
  listWebhooks(): Promise<WebhookRegistration[]>;
  /** Oldest first, every webhook, never a secret: what the API lists. */
  listWebhookInfo(): Promise<WebhookInfo[]>;
  /** RcdError not_found when there is no such webhook. */
  deleteWebhook(id: string): Promise<void>;
  /**
   * This state, whose token and webhook writes first check, in their own transaction, that the
   * admin token of `guard` is not revoked (src/store/write-guard.ts). Audit entries are not checked:
   * they record a change already made.
   */
  guarded(guard: WriteGuard): AdminStateStore;
  close(): Promise<void>;
}
