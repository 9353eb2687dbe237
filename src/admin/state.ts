/**
 * Management-plane state that is not routing data: the audit log and the webhook registrations.
 *
 * It lives beside the Store rather than inside it because neither is needed to serve a request:
 * the Store interface stays the delivery contract (and the future PostgreSQL backend does not have
 * to grow admin-only methods). For `sqlite:PATH` stores the tables live in the same database file
 * (their own `admin_` prefixed tables, their own connection, WAL so neither blocks the other); for
 * `memory:` stores they live in a private in-memory SQLite database and vanish with the process,
 * exactly like the content does.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { RcdError } from '../errors.js';

export const WEBHOOK_EVENTS = ['content.updated', 'content.deleted', 'mapping.updated', 'environment.synced'] as const;
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

/** The secret is kept in clear because signing needs it; it is only ever returned when created. */
export interface WebhookRegistration extends WebhookInfo {
  readonly secret: string;
}

export interface AdminStateStore {
  appendAudit(entry: NewAuditEntry): Promise<AuditEntry>;
  /** Newest first; at most `limit`; only ids below `before` when given. */
  listAudit(limit: number, before?: number): Promise<AuditEntry[]>;
  addWebhook(url: string, events: readonly WebhookEvent[], secret: string): Promise<WebhookRegistration>;
  /** Oldest first, with secrets (the dispatcher needs them; the API strips them). */
  listWebhooks(): Promise<WebhookRegistration[]>;
  /** RcdError not_found when there is no such webhook. */
  deleteWebhook(id: string): Promise<void>;
  close(): Promise<void>;
}

// better-sqlite3 ships no types and the project has no @types package for it; this is the small
// surface used here, typed once instead of leaking `any`.
interface SqliteStatement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  all(...params: unknown[]): unknown[];
}
interface SqliteDatabase {
  pragma(source: string): unknown;
  exec(source: string): unknown;
  prepare(source: string): SqliteStatement;
  close(): void;
}
type SqliteConstructor = new (filename: string) => SqliteDatabase;

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as SqliteConstructor;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS admin_audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  actor TEXT NOT NULL,
  token_id TEXT NOT NULL,
  action TEXT NOT NULL,
  env TEXT,
  target TEXT,
  detail TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS admin_webhooks (
  id TEXT PRIMARY KEY,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at TEXT NOT NULL
);
`;

interface AuditRow {
  id: number;
  at: string;
  actor: string;
  token_id: string;
  action: string;
  env: string | null;
  target: string | null;
  detail: string;
}

interface WebhookRow {
  id: string;
  url: string;
  events: string;
  secret: string;
  created_at: string;
}

function auditFromRow(row: AuditRow): AuditEntry {
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

function webhookFromRow(row: WebhookRow): WebhookRegistration {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as WebhookEvent[],
    createdAt: row.created_at,
    secret: row.secret,
  };
}

class SqliteAdminState implements AdminStateStore {
  private readonly db: SqliteDatabase;
  private readonly insertAudit: SqliteStatement;
  private readonly selectAudit: SqliteStatement;
  private readonly selectAuditBefore: SqliteStatement;
  private readonly insertWebhook: SqliteStatement;
  private readonly selectWebhooks: SqliteStatement;
  private readonly removeWebhook: SqliteStatement;

  constructor(filename: string) {
    this.db = new Database(filename);
    if (filename !== ':memory:') {
      this.db.pragma('journal_mode = WAL');
      // The delivery store writes to the same file through its own connection.
      this.db.pragma('busy_timeout = 5000');
    }
    this.db.exec(SCHEMA);
    this.insertAudit = this.db.prepare(
      'INSERT INTO admin_audit (at, actor, token_id, action, env, target, detail) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.selectAudit = this.db.prepare('SELECT * FROM admin_audit ORDER BY id DESC LIMIT ?');
    this.selectAuditBefore = this.db.prepare('SELECT * FROM admin_audit WHERE id < ? ORDER BY id DESC LIMIT ?');
    this.insertWebhook = this.db.prepare(
      'INSERT INTO admin_webhooks (id, url, events, secret, created_at) VALUES (?, ?, ?, ?, ?)',
    );
    this.selectWebhooks = this.db.prepare('SELECT * FROM admin_webhooks ORDER BY created_at, id');
    this.removeWebhook = this.db.prepare('DELETE FROM admin_webhooks WHERE id = ?');
  }

  async appendAudit(entry: NewAuditEntry): Promise<AuditEntry> {
    const at = new Date().toISOString();
    const detail = JSON.stringify(entry.detail ?? null);
    const info = this.insertAudit.run(at, entry.actor, entry.tokenId, entry.action, entry.env, entry.target, detail);
    return {
      id: Number(info.lastInsertRowid),
      at,
      actor: entry.actor,
      tokenId: entry.tokenId,
      action: entry.action,
      env: entry.env,
      target: entry.target,
      detail: JSON.parse(detail) as unknown,
    };
  }

  async listAudit(limit: number, before?: number): Promise<AuditEntry[]> {
    const rows = (before === undefined ? this.selectAudit.all(limit) : this.selectAuditBefore.all(before, limit)) as AuditRow[];
    return rows.map(auditFromRow);
  }

  async addWebhook(url: string, events: readonly WebhookEvent[], secret: string): Promise<WebhookRegistration> {
    const id = 'wh_' + randomUUID().replaceAll('-', '').slice(0, 16);
    const createdAt = new Date().toISOString();
    this.insertWebhook.run(id, url, JSON.stringify(events), secret, createdAt);
    return { id, url, events: [...events], createdAt, secret };
  }

  async listWebhooks(): Promise<WebhookRegistration[]> {
    return (this.selectWebhooks.all() as WebhookRow[]).map(webhookFromRow);
  }

  async deleteWebhook(id: string): Promise<void> {
    if (this.removeWebhook.run(id).changes === 0) throw new RcdError('not_found', `no webhook with id "${id}"`);
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

/**
 * Opens the admin state for a store URL: `sqlite:PATH` shares the store's database file,
 * `memory:` (any name) keeps the state in this process only.
 */
export function openAdminState(storeUrl: string): AdminStateStore {
  if (storeUrl.startsWith('memory:')) return new SqliteAdminState(':memory:');
  if (storeUrl.startsWith('sqlite:')) {
    const path = storeUrl.slice('sqlite:'.length);
    if (path === '') throw new RcdError('invalid_request', 'store URL "sqlite:" needs a file path');
    mkdirSync(dirname(path), { recursive: true });
    return new SqliteAdminState(path);
  }
  throw new RcdError('invalid_request', `unsupported store URL "${storeUrl}" (expected sqlite:PATH or memory:)`);
}
