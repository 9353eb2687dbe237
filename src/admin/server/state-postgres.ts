/**
 * The admin state (audit log, webhook registrations) of a PostgreSQL store: tables of the same
 * database (created by the store's migrations, src/store/postgres/schema.ts), so every node of a
 * fleet lists the same audit and delivers the same webhooks. Secrets are sealed as in the SQLite
 * state, with the webhook key of --data-dir: the nodes of a fleet share that key file
 * (docs/fleet.md).
 */
import { RcdError } from '../../runtime/errors.js';
import { OnLost, connect, pgFailure, runOnPool, type Sql, type Tx } from '../../store/postgres/connection.js';
import { answeredWithin, CallsInFlight, STALL_MS } from '../../store/postgres/silence.js';
import { requireLiveTokenPg } from '../../store/postgres/token-guard.js';
import { transaction } from '../../store/postgres/transaction.js';
import { guardedView, WRITE_GUARD, type WriteGuard } from '../../store/write-guard.js';
import { sealSecret } from './sealed.js';
import type { AdminStateStore, AdminTokenInfo, AuditEntry, NewAdminToken, NewAuditEntry, WebhookEvent, WebhookInfo, WebhookRegistration } from './state.js';
import { auditFromRow, newAuditEntry, newTokenRow, newWebhookId, openWebhookRows, tokenFromRow, tokenNameTaken, webhookInfoFromRow, type AuditRow, type TokenRow } from './state-rows.js';

interface WebhookRow {
  id: string;
  url: string;
  events: string;
  secret_sealed: string;
  created_at: string;
}

/** The admin state's own small pool: audit writes never wait behind routing reads. */
const ADMIN_POOL_SIZE = 2;

export class PostgresAdminState implements AdminStateStore {
  /** The pool; replaced when the database falls silent (silent()). */
  private sql: Sql;
  private readonly url: string;
  private readonly connectTimeoutMs: number;
  private readonly inFlight = new CallsInFlight();
  private readonly sealKey: Buffer;
  private readonly log: (line: string) => void;
  private readonly reportedUnreadable = new Set<string>();
  /** Null here; a guarded view's (guarded()) admin token, checked by its token and webhook writes. */
  readonly [WRITE_GUARD]: WriteGuard | null = null;

  constructor(url: string, sealKey: Buffer, log: (line: string) => void, connectTimeoutMs: number) {
    this.url = url;
    this.connectTimeoutMs = connectTimeoutMs;
    this.sql = connect(url, { poolSize: ADMIN_POOL_SIZE, connectTimeoutMs });
    this.sealKey = sealKey;
    this.log = log;
  }

  /**
   * Runs a statement (connection.ts runOnPool: again on a connection a restart ended), sorting its
   * failure. A lost connection is tried once more for reads and for audit entries: were it lost
   * after the server committed an entry, the entry would be listed twice; not retried, it is lost,
   * and a scheduled change's entry is never written again. Webhook and token writes are not retried.
   * Every call here is a statement or two: one the database has not answered within STALL_MS means
   * it went silent, and every call in flight answers store_unavailable (silent()).
   */
  private async call<T>(fn: (signal: AbortSignal) => Promise<T>, onLost: OnLost): Promise<T> {
    try {
      return await this.inFlight.run((signal) => answeredWithin(runOnPool(() => fn(signal), ADMIN_POOL_SIZE, onLost), STALL_MS, (err) => this.silent(err)));
    } catch (err) {
      throw pgFailure(err);
    }
  }

  /** Gives up on every call in flight and replaces the pool, whose connections went silent. */
  private silent(err: Error): void {
    this.inFlight.giveUp(err);
    const old = this.sql;
    this.sql = connect(this.url, { poolSize: ADMIN_POOL_SIZE, connectTimeoutMs: this.connectTimeoutMs });
    old.end({ timeout: 0 }).catch(() => undefined);
  }

  guarded(guard: WriteGuard): AdminStateStore {
    return guardedView(this, guard);
  }

  /** `fn` on the pool, or, on a guarded view, in one transaction after the guard's check. */
  private write<T>(fn: (q: Pick<Tx, 'unsafe'>) => Promise<T>, signal: AbortSignal): Promise<T> {
    const guard = this[WRITE_GUARD];
    if (guard === null) return fn(this.sql);
    return transaction(
      this.sql,
      async (tx) => {
        await requireLiveTokenPg(tx, guard);
        return fn(tx);
      },
      '',
      signal,
    );
  }

  appendAudit(entry: NewAuditEntry): Promise<AuditEntry> {
    return this.call(async () => {
      const at = new Date().toISOString();
      const detail = JSON.stringify(entry.detail ?? null);
      const rows = await this.sql.unsafe<{ id: number }[]>(
        'INSERT INTO admin_audit (at, actor, token_id, action, env, target, detail) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id',
        [at, entry.actor, entry.tokenId, entry.action, entry.env, entry.target, detail],
        { prepare: true },
      );
      return newAuditEntry(rows[0]!.id, at, entry, detail);
    }, OnLost.RetryOnce);
  }

  async appendAudits(entries: readonly NewAuditEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const at = new Date().toISOString();
    await this.call(() =>
      this.sql.unsafe(
        `INSERT INTO admin_audit (at, actor, token_id, action, env, target, detail)
         SELECT $1, a, t, c, e, g, d FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY AS u(a, t, c, e, g, d, n) ORDER BY n`,
        [
          at,
          entries.map((e) => e.actor),
          entries.map((e) => e.tokenId),
          entries.map((e) => e.action),
          entries.map((e) => e.env),
          entries.map((e) => e.target),
          entries.map((e) => JSON.stringify(e.detail ?? null)),
        ] as never[],
      ),
      OnLost.RetryOnce,
    );
  }

  listAudit(limit: number, before?: number): Promise<AuditEntry[]> {
    return this.call(async () => {
      const rows =
        before === undefined
          ? await this.sql.unsafe<AuditRow[]>('SELECT * FROM admin_audit ORDER BY id DESC LIMIT $1', [limit])
          : await this.sql.unsafe<AuditRow[]>('SELECT * FROM admin_audit WHERE id < $1 ORDER BY id DESC LIMIT $2', [before, limit]);
      return rows.map(auditFromRow);
    }, OnLost.RetryOnce);
  }

  addWebhook(url: string, events: readonly WebhookEvent[], secret: string): Promise<WebhookRegistration> {
    return this.call(async (signal) => {
      const id = newWebhookId();
      const createdAt = new Date().toISOString();
      await this.write((q) => q.unsafe('INSERT INTO admin_webhooks (id, url, events, secret_sealed, created_at) VALUES ($1, $2, $3, $4, $5)', [
        id,
        url,
        JSON.stringify(events),
        sealSecret(this.sealKey, secret, id),
        createdAt,
      ]), signal);
      return { id, url, events: [...events], createdAt, secret };
    }, OnLost.Throw);
  }

  private rows(): Promise<WebhookRow[]> {
    return this.sql.unsafe<WebhookRow[]>('SELECT * FROM admin_webhooks ORDER BY created_at COLLATE "C", id COLLATE "C"');
  }

  listWebhooks(): Promise<WebhookRegistration[]> {
    return this.call(async () => openWebhookRows(await this.rows(), this.sealKey, this.reportedUnreadable, this.log), OnLost.RetryOnce);
  }

  listWebhookInfo(): Promise<WebhookInfo[]> {
    return this.call(async () => (await this.rows()).map(webhookInfoFromRow), OnLost.RetryOnce);
  }

  deleteWebhook(id: string): Promise<void> {
    return this.call(async (signal) => {
      const result = await this.write((q) => q.unsafe('DELETE FROM admin_webhooks WHERE id = $1', [id]), signal);
      if (result.count === 0) throw new RcdError('not_found', `no webhook with id "${id}"`);
    }, OnLost.Throw);
  }

  createToken(token: NewAdminToken): Promise<AdminTokenInfo> {
    const row = newTokenRow(token);
    return this.call(async (signal) => {
      try {
        await this.write((q) => q.unsafe(
          'INSERT INTO admin_tokens (id, name, digest, role, scope, created_at, created_by, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)',
          [row.id, row.name, row.digest, row.role, row.scope, row.created_at, row.created_by],
        ), signal);
      } catch (err) {
        // 23505: unique_violation (the live-name index; a digest collision of 256-bit tokens does not happen).
        if ((err as { code?: unknown }).code === '23505') throw tokenNameTaken(token.name);
        throw err;
      }
      return tokenFromRow(row);
    }, OnLost.Throw);
  }

  listTokens(): Promise<AdminTokenInfo[]> {
    return this.call(async () =>
      (await this.sql.unsafe<TokenRow[]>('SELECT * FROM admin_tokens ORDER BY created_at COLLATE "C", id COLLATE "C"')).map(tokenFromRow),
      OnLost.RetryOnce,
    );
  }

  revokeToken(name: string): Promise<AdminTokenInfo> {
    return this.call(async (signal) => {
      const at = new Date().toISOString();
      const rows = await this.write((q) => q.unsafe<TokenRow[]>(
        'UPDATE admin_tokens SET revoked_at = $1 WHERE name = $2 AND revoked_at IS NULL RETURNING *',
        [at, name],
      ), signal);
      const row = rows[0];
      if (row === undefined) throw new RcdError('not_found', `no live admin token named "${name}"`);
      return tokenFromRow(row);
    }, OnLost.Throw);
  }

  findToken(digest: string): Promise<AdminTokenInfo | undefined> {
    return this.call(async () => {
      const rows = await this.sql.unsafe<TokenRow[]>('SELECT * FROM admin_tokens WHERE digest = $1 AND revoked_at IS NULL', [digest], { prepare: true });
      return rows[0] === undefined ? undefined : tokenFromRow(rows[0]);
    }, OnLost.RetryOnce);
  }

  async close(): Promise<void> {
    this.inFlight.giveUp(new RcdError('internal', 'the admin state is closed'));
    await this.sql.end({ timeout: 1 });
  }
}

