/**
 * Management-plane state that is not routing data: the audit log and the webhook registrations.
 *
 * It lives beside the Store rather than inside it because neither is needed to serve a request:
 * the Store interface stays the delivery contract (and the future PostgreSQL backend does not have
 * to grow admin-only methods). For `sqlite:PATH` stores the tables live in the same database file
 * (their own `admin_` prefixed tables, their own connection, WAL so neither blocks the other); for
 * `memory:` stores they live in a private in-memory SQLite database and vanish with the process,
 * exactly like the content does.
 *
 * Webhook secrets are stored sealed (see sealed.ts); rows written by older versions in clear are
 * sealed when the state opens, with SQLite's secure_delete on so the clear bytes are overwritten
 * rather than left in free space, and the WAL is truncated afterwards.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { RcdError } from '../../runtime/errors.js';
import type { TokenRole, TokenScope } from './access.js';
import { settle } from '../../shared/settle.js';
import { makeStoreFilesPrivate, memdbFilename } from '../../store/sqlite/driver.js';
import { guardedView, LIVE_TOKEN_SQL, requireLiveToken, WRITE_GUARD, type WriteGuard } from '../../store/write-guard.js';
import { DEFAULT_PG_CONNECT_TIMEOUT_MS } from '../../store/postgres/connection.js';
import { enableUriFilenames, isPostgresUrl } from '../../store/url.js';
import { ephemeralSealKey, loadSealKey, openSealed, sealSecret } from './sealed.js';
import { PostgresAdminState } from './state-postgres.js';
import { auditFromRow, tokenFromRow, webhookInfoFromRow, type AuditRow, type TokenRow } from './state-rows.js';
import { makeDirectories } from '../../runtime/directories.js';

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


class SqliteAdminState implements AdminStateStore {
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
      const id = 'wh_' + randomUUID().replaceAll('-', '').slice(0, 16);
      const createdAt = new Date().toISOString();
      this.insertWebhook.run(id, url, JSON.stringify(events), sealSecret(this.sealKey, secret, id), createdAt);
      return { id, url, events: [...events], createdAt, secret };
    }));
  }

  listWebhooks(): Promise<WebhookRegistration[]> {
    return settle(() => {
      const out: WebhookRegistration[] = [];
      for (const row of this.selectWebhooks.all() as WebhookRow[]) {
        const secret = row.secret_sealed === null ? null : openSealed(this.sealKey, row.secret_sealed, row.id);
        if (secret === null) {
          if (!this.reportedUnreadable.has(row.id)) {
            this.reportedUnreadable.add(row.id);
            this.log(`admin: webhook ${row.id}: its secret does not open with the current webhook key; not delivered until it is registered again`);
          }
          continue;
        }
        out.push({ ...webhookInfoFromRow(row), secret });
      }
      return out;
    });
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

export interface AdminStateOptions {
  /**
   * Where the webhook key file is kept (`sqlite:` stores only). Default: the database file's
   * folder, the same default as `--data-dir`.
   */
  readonly dataDir?: string;
  /** Operator-facing notes (secrets sealed on upgrade, a secret that no longer opens). */
  readonly log?: (line: string) => void;
  /** How long a write waits for another connection's lock (default 5000 ms), as --store-busy-timeout. */
  readonly busyTimeoutMs?: number;
}

/**
 * Opens the admin state for a store URL: `sqlite:PATH` shares the store's database file and seals
 * webhook secrets with `<dataDir>/webhook-key`; `postgres://` keeps it in the store's database
 * (state-postgres.ts), sealed with `<dataDir>/webhook-key`; `memory:NAME` keeps it in the in-memory
 * store of that name (the store's readerUrl), `memory:` in a database of its own; both in this process
 * only, sealed with a key that is never written anywhere. A guarded write (guarded()) of a store reads
 * the tokens from the store's database, so a store's admin state is opened on the store's URL.
 */
export function openAdminState(storeUrl: string, opts: AdminStateOptions = {}): AdminStateStore {
  const log = opts.log ?? (() => undefined);
  const busyTimeoutMs = opts.busyTimeoutMs ?? 5000;
  if (storeUrl === 'memory:') return new SqliteAdminState(':memory:', ephemeralSealKey(), log, busyTimeoutMs, 'none');
  if (storeUrl.startsWith('memory:')) {
    enableUriFilenames();
    return new SqliteAdminState(memdbFilename(storeUrl.slice('memory:'.length)), ephemeralSealKey(), log, busyTimeoutMs, 'memory');
  }
  if (isPostgresUrl(storeUrl)) {
    const { key } = loadSealKey(opts.dataDir ?? resolve('data'));
    return new PostgresAdminState(storeUrl, key, log, DEFAULT_PG_CONNECT_TIMEOUT_MS);
  }
  if (storeUrl.startsWith('sqlite:')) {
    const path = storeUrl.slice('sqlite:'.length);
    if (path === '') throw new RcdError('invalid_request', 'store URL "sqlite:" needs a file path');
    makeDirectories(dirname(path), 0o700);
    makeStoreFilesPrivate(path);
    const { key } = loadSealKey(opts.dataDir ?? dirname(resolve(path)));
    return new SqliteAdminState(path, key, log, busyTimeoutMs, 'file');
  }
  throw new RcdError('invalid_request', `unsupported store URL "${storeUrl}" (expected sqlite:PATH, memory: or postgres://...)`);
}
