/**
 * The admin state in SQLite: for `sqlite:PATH` stores its tables live in the store's database file
 * (their own `admin_` prefixed tables, their own connection, WAL so neither blocks the other); for
 * `memory:` stores they live in an in-memory database and vanish with the process, as the content
 * does.
 *
 * Webhook secrets are stored sealed (see sealed.ts); rows written by older versions in clear are
 * sealed when the state opens, with SQLite's secure_delete on so the clear bytes are overwritten
 * rather than left in free space, and the WAL is truncated afterwards.
 */
import { createRequire } from 'node:module';
import { RcdError } from '../../runtime/errors.js';
import { settle } from '../../shared/settle.js';
import { guardedView, LIVE_TOKEN_SQL, requireLiveToken, WRITE_GUARD, type WriteGuard } from '../../store/write-guard.js';
import { sealSecret } from './sealed.js';
import type { AdminStateStore, AdminTokenInfo, AuditEntry, NewAdminToken, NewAuditEntry, WebhookEvent, WebhookInfo, WebhookRegistration } from './state.js';
import { auditFromRow, newAuditEntry, newTokenRow, newWebhookId, openWebhookRows, tokenFromRow, tokenNameTaken, webhookInfoFromRow, type AuditRow, type TokenRow } from './state-rows.js';

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
  transaction<T>(fn: () => T): { (): T; immediate(): T };
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
CREATE TABLE IF NOT EXISTS admin_tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  digest TEXT NOT NULL UNIQUE,
  role TEXT NOT NULL,
  scope TEXT NOT NULL,
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL,
  revoked_at TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS admin_tokens_live_name ON admin_tokens (name) WHERE revoked_at IS NULL;
CREATE TABLE IF NOT EXISTS admin_webhooks (
  id TEXT PRIMARY KEY,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at TEXT NOT NULL,
  secret_sealed TEXT
);
`;

/** `secret` is '' once sealed; it holds the clear secret only in rows an older version wrote. */
interface WebhookRow {
  id: string;
  url: string;
  events: string;
  secret: string;
  secret_sealed: string | null;
  created_at: string;
}

export class SqliteAdminState implements AdminStateStore {
  private readonly db: SqliteDatabase;
  private readonly insertAudit: SqliteStatement;
  private readonly selectAudit: SqliteStatement;
  private readonly selectAuditBefore: SqliteStatement;
  private readonly insertWebhook: SqliteStatement;
  private readonly selectWebhooks: SqliteStatement;
  private readonly removeWebhook: SqliteStatement;
  private readonly insertToken: SqliteStatement;
  private readonly selectTokens: SqliteStatement;
  private readonly selectLiveTokenByName: SqliteStatement;
  private readonly selectLiveTokenByDigest: SqliteStatement;
  private readonly markTokenRevoked: SqliteStatement;
  private readonly selectTokenState: SqliteStatement;
  private readonly sealKey: Buffer;
  private readonly log: (line: string) => void;
  /** Webhooks already reported as unopenable, so each is logged once per process. */
  private readonly reportedUnreadable = new Set<string>();
  /** Null here; a guarded view's (guarded()) admin token, checked by its token and webhook writes. */
  readonly [WRITE_GUARD]: WriteGuard | null = null;

  /** @param shared a database the store writes too (a file, or the store's in-memory database) */
  constructor(filename: string, sealKey: Buffer, log: (line: string) => void, busyTimeoutMs: number, shared: 'file' | 'memory' | 'none') {
    this.sealKey = sealKey;
    this.log = log;
    this.db = new Database(filename);
    if (shared === 'file') this.db.pragma('journal_mode = WAL');
    // The delivery store writes to the same database through its own connection.
    if (shared !== 'none') this.db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    // Deleted or rewritten rows are zeroed, not left in free pages: a removed webhook's sealed
    // secret and the clear secrets replaced by sealing do not linger in the file.
    this.db.pragma('secure_delete = ON');
    this.db.exec(SCHEMA);
    if (!(this.db.prepare('PRAGMA table_info(admin_webhooks)').all() as { name: string }[]).some((c) => c.name === 'secret_sealed')) {
      this.db.exec('ALTER TABLE admin_webhooks ADD COLUMN secret_sealed TEXT');
    }
    this.sealClearSecrets(shared === 'file');
    this.insertAudit = this.db.prepare(
      'INSERT INTO admin_audit (at, actor, token_id, action, env, target, detail) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.selectAudit = this.db.prepare('SELECT * FROM admin_audit ORDER BY id DESC LIMIT ?');
    this.selectAuditBefore = this.db.prepare('SELECT * FROM admin_audit WHERE id < ? ORDER BY id DESC LIMIT ?');
    this.insertWebhook = this.db.prepare(
      "INSERT INTO admin_webhooks (id, url, events, secret, secret_sealed, created_at) VALUES (?, ?, ?, '', ?, ?)",
    );
    this.selectWebhooks = this.db.prepare('SELECT * FROM admin_webhooks ORDER BY created_at, id');
    this.removeWebhook = this.db.prepare('DELETE FROM admin_webhooks WHERE id = ?');
    this.insertToken = this.db.prepare(
      'INSERT INTO admin_tokens (id, name, digest, role, scope, created_at, created_by, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)',
    );
    this.selectTokens = this.db.prepare('SELECT * FROM admin_tokens ORDER BY created_at, id');
    this.selectLiveTokenByName = this.db.prepare('SELECT * FROM admin_tokens WHERE name = ? AND revoked_at IS NULL');
    this.selectLiveTokenByDigest = this.db.prepare('SELECT * FROM admin_tokens WHERE digest = ? AND revoked_at IS NULL');
    this.markTokenRevoked = this.db.prepare('UPDATE admin_tokens SET revoked_at = ? WHERE id = ?');
    this.selectTokenState = this.db.prepare(LIVE_TOKEN_SQL + '?');
  }

  guarded(guard: WriteGuard): AdminStateStore {
    return guardedView(this, guard);
  }

  /** `fn` in one IMMEDIATE transaction after the guard's check when this is a guarded view; else `fn` alone. */
  private write<T>(fn: () => T): T {
    const guard = this[WRITE_GUARD];
    if (guard === null) return fn();
    return this.db.transaction(() => {
      requireLiveToken(this.selectTokenState.all(guard.tokenId)[0] as { revoked_at: string | null } | undefined);
      return fn();
    }).immediate();
  }

  createToken(token: NewAdminToken): Promise<AdminTokenInfo> {
    return settle(() => this.write(() => {
      const row = newTokenRow(token);
      try {
        this.insertToken.run(row.id, row.name, row.digest, row.role, row.scope, row.created_at, row.created_by);
      } catch (err) {
        if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw tokenNameTaken(token.name);
        throw err;
      }
      return tokenFromRow(row);
    }));
  }

  listTokens(): Promise<AdminTokenInfo[]> {
    return settle(() => (this.selectTokens.all() as TokenRow[]).map(tokenFromRow));
  }

  revokeToken(name: string): Promise<AdminTokenInfo> {
    return settle(() => this.write(() => {
      const row = (this.selectLiveTokenByName.all(name) as TokenRow[])[0];
      if (row === undefined) throw new RcdError('not_found', `no live admin token named "${name}"`);
      const at = new Date().toISOString();
      this.markTokenRevoked.run(at, row.id);
      return tokenFromRow({ ...row, revoked_at: at });
    }));
  }

  findToken(digest: string): Promise<AdminTokenInfo | undefined> {
    return settle(() => {
      const row = (this.selectLiveTokenByDigest.all(digest) as TokenRow[])[0];
      return row === undefined ? undefined : tokenFromRow(row);
    });
  }

  /** Seals every secret an older version stored in clear, in one transaction. */
  private sealClearSecrets(onDisk: boolean): void {
    const clear = this.db.prepare('SELECT id, secret FROM admin_webhooks WHERE secret_sealed IS NULL').all() as { id: string; secret: string }[];
    if (clear.length === 0) return;
    const update = this.db.prepare("UPDATE admin_webhooks SET secret_sealed = ?, secret = '' WHERE id = ?");
    this.db.transaction(() => {
      for (const row of clear) update.run(sealSecret(this.sealKey, row.secret, row.id), row.id);
    })();
    // Until a checkpoint copies the rewritten pages back, the database file still holds the clear
    // ones (and a WAL left by a crash may hold older frames with them); TRUNCATE does the copy and
    // empties the WAL file.
    const checkpoint = onDisk ? (this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[])[0] : undefined;
    this.log(`admin: sealed ${clear.length} webhook secret(s) stored in clear by an older version`);
    if (checkpoint !== undefined && checkpoint.busy !== 0) {
      this.log('admin: the store was busy; the clear copies leave the database file at its next checkpoint');
    }
  }

  appendAudit(entry: NewAuditEntry): Promise<AuditEntry> {
    return settle(() => {
      const at = new Date().toISOString();
      const detail = JSON.stringify(entry.detail ?? null);
      const info = this.insertAudit.run(at, entry.actor, entry.tokenId, entry.action, entry.env, entry.target, detail);
      return newAuditEntry(Number(info.lastInsertRowid), at, entry, detail);
    });
  }

  appendAudits(entries: readonly NewAuditEntry[]): Promise<void> {
    return settle(() => {
      const at = new Date().toISOString();
      this.db.transaction(() => {
        for (const e of entries) this.insertAudit.run(at, e.actor, e.tokenId, e.action, e.env, e.target, JSON.stringify(e.detail ?? null));
      })();
    });
  }

  listAudit(limit: number, before?: number): Promise<AuditEntry[]> {
    return settle(() => {
      const rows = (before === undefined ? this.selectAudit.all(limit) : this.selectAuditBefore.all(before, limit)) as AuditRow[];
      return rows.map(auditFromRow);
    });
  }

  addWebhook(url: string, events: readonly WebhookEvent[], secret: string): Promise<WebhookRegistration> {
    return settle(() => this.write(() => {
      const id = newWebhookId();
      const createdAt = new Date().toISOString();
      this.insertWebhook.run(id, url, JSON.stringify(events), sealSecret(this.sealKey, secret, id), createdAt);
      return { id, url, events: [...events], createdAt, secret };
    }));
  }

  listWebhooks(): Promise<WebhookRegistration[]> {
    return settle(() => openWebhookRows(this.selectWebhooks.all() as WebhookRow[], this.sealKey, this.reportedUnreadable, this.log));
  }

  listWebhookInfo(): Promise<WebhookInfo[]> {
    return settle(() => (this.selectWebhooks.all() as WebhookRow[]).map(webhookInfoFromRow));
  }

  deleteWebhook(id: string): Promise<void> {
    return settle(() => this.write(() => {
      if (this.removeWebhook.run(id).changes === 0) throw new RcdError('not_found', `no webhook with id "${id}"`);
    }));
  }

  close(): Promise<void> {
    return settle(() => {
      this.db.close();
    });
  }
}
