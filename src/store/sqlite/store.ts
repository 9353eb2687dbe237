/**
 * The embedded Store: SQLite through better-sqlite3 (a file, or an in-memory database shared with
 * worker threads for `memory:`).
 *
 * better-sqlite3 is synchronous; the methods return promises only to satisfy the Store interface
 * (a PostgreSQL backend will need it), through `settle` so a refused call rejects rather than
 * throws at the call site. Every write runs in one IMMEDIATE transaction that validates
 * first and writes after, so a refused write (or a crash) leaves the previous state whole, and a
 * second process writing the same file waits (busy_timeout) instead of interleaving.
 */
import { compileContent } from '../jsonc.js';
import { RcdError } from '../../runtime/errors.js';
import { settle } from '../../shared/settle.js';
import { validateMapping } from '../../mapping/index.js';
import { exportBundle, importBundle } from '../bundle/bundle.js';
import type { Database, Statement } from './driver.js';
import {
  apiKeyDigest,
  appVersionProblem,
  contentIdKey,
  contentIdProblem,
  envIdProblem,
  generateKey,
  generateKeyId,
  plainKeyProblem,
} from '../ids.js';
import { StoreFiles } from './files.js';
import { migrate } from './schema.js';
import { nextNumber, nowIso, sameRevision, StoreSql, type ContentRow, type RevisionRow } from './sql.js';
import type {
  ContentDetail,
  ContentMeta,
  ContentSummary,
  DirectorySnapshot,
  EnvironmentInfo,
  ImportReport,
  KeyDigest,
  KeyInfo,
  PutContentResult,
  RevisionDetail,
  RevisionMeta,
  Store,
  SyncReport,
} from '../types.js';

type SyncItem = SyncReport['items'][number];

export class SqliteStore implements Store {
  readonly readerUrl: string;
  private readonly db: Database;
  private readonly sql: StoreSql;
  private closed = false;
  private directoryQueries: DirectoryQueries | undefined;
  private readonly files: StoreFiles | null;

  /** @param path the database file (null for an in-memory store): its files are watched for deletion. */
  constructor(db: Database, readerUrl: string, path: string | null = null) {
    migrate(db);
    this.db = db;
    this.sql = new StoreSql(db);
    this.readerUrl = readerUrl;
    // After migrate: the WAL connection has created its -wal and -shm files by now.
    this.files = path === null ? null : new StoreFiles([path, `${path}-wal`, `${path}-shm`]);
  }

  private write<T>(fn: () => T): T {
    if (this.closed) throw new RcdError('internal', 'the store is closed');
    this.requireOwnFiles();
    let result: T;
    try {
      result = this.db.transaction(fn).immediate();
    } catch (err) {
      throw sqliteFailure(err);
    }
    // Checked again after the commit: a file deleted meanwhile took the commit with it, and a
    // write that is not durable must not be acknowledged.
    this.requireOwnFiles();
    return result;
  }

  private read<T>(fn: () => T): T {
    if (this.closed) throw new RcdError('internal', 'the store is closed');
    // A deferred transaction gives the several SELECTs of one answer a consistent snapshot.
    try {
      return this.db.transaction(fn)();
    } catch (err) {
      throw sqliteFailure(err);
    }
  }

  private requireOwnFiles(): void {
    const problem = this.files?.problem() ?? null;
    if (problem !== null) throw unavailable(problem);
  }

  unavailableReason(): string | null {
    return this.files?.problem() ?? null;
  }

  private requireEnv(envId: string): void {
    if (this.sql.getEnv(envId) === undefined) throw new RcdError('not_found', `environment ${JSON.stringify(envId)} does not exist`);
  }

  private requireContent(envId: string, id: string): ContentRow {
    this.requireEnv(envId);
    const row = typeof id === 'string' ? this.sql.findContent(envId, contentIdKey(id)) : undefined;
    if (row === undefined) {
      throw new RcdError('content_not_found', `content ${JSON.stringify(id)} does not exist in environment ${JSON.stringify(envId)}`);
    }
    return row;
  }

  loadDirectory(): Promise<DirectorySnapshot> {
    return settle(() => {
      // Runs after every write (the front end rebuilds its Directory before the write answers), so
      // its statements are prepared once, on first use.
      return this.read(() => {
        const q = (this.directoryQueries ??= prepareDirectoryQueries(this.db));
        const environments = q.environments.all().map((r) => r.env_id);
        const keys: KeyDigest[] = q.keys.all().map((r) => ({ digest: r.digest, keyId: r.key_id, envId: r.env_id }));
        const revs = new Map<number, RevisionMeta[]>();
        for (const r of q.revisions.all()) {
          let list = revs.get(r.content_pk);
          if (list === undefined) {
            list = [];
            revs.set(r.content_pk, list);
          }
          list.push(revisionMeta(r));
        }
        const contents: ContentMeta[] = q.contents.all().map((c) => ({
          envId: c.env_id,
          id: c.id,
          idLower: c.id_lower,
          revisions: revs.get(c.content_pk) ?? [],
          mappingId: c.mapping_id,
          mappingRuleCount: c.rule_count ?? 0,
          createdAt: c.created_at,
          updatedAt: c.updated_at,
        }));
        return { environments, keys, contents };
      });
    });
  }

  listEnvironments(): Promise<EnvironmentInfo[]> {
    return settle(() => {
      return this.read(() =>
        this.db
          .prepare<{ env_id: string; created_at: string; content_count: number; key_count: number }>(
            `SELECT e.env_id, e.created_at,
                    (SELECT count(*) FROM contents c WHERE c.env_id = e.env_id) AS content_count,
                    (SELECT count(*) FROM api_keys k WHERE k.env_id = e.env_id AND k.revoked_at IS NULL) AS key_count
               FROM environments e ORDER BY e.env_id`,
          )
          .all()
          .map((r) => ({ id: r.env_id, createdAt: r.created_at, contentCount: r.content_count, keyCount: r.key_count })),
      );
    });
  }

  putEnvironment(envId: string): Promise<boolean> {
    return settle(() => {
      const problem = envIdProblem(envId);
      if (problem !== '') throw new RcdError('invalid_request', problem);
      return this.write(() => {
        if (this.sql.getEnv(envId) !== undefined) return false;
        this.sql.insertEnv(envId, nowIso());
        return true;
      });
    });
  }

  deleteEnvironment(envId: string, force: boolean): Promise<void> {
    return settle(() => {
      this.write(() => {
        this.requireEnv(envId);
        const n = this.db.prepare<{ n: number }>('SELECT count(*) AS n FROM contents WHERE env_id = ?').get(envId);
        if (n !== undefined && n.n > 0 && !force) {
          throw new RcdError('conflict', `environment ${JSON.stringify(envId)} holds ${n.n} content item(s); delete them first or force`);
        }
        // Keys, content, revisions and mappings go with it (ON DELETE CASCADE).
        this.db.prepare('DELETE FROM environments WHERE env_id = ?').run(envId);
      });
    });
  }

  createKey(envId: string, plainKey?: string): Promise<{ id: string; key: string }> {
    return settle(() => {
      if (plainKey !== undefined) {
        const problem = plainKeyProblem(plainKey);
        if (problem !== '') throw new RcdError('invalid_request', problem);
      }
      const key = plainKey ?? generateKey();
      return this.write(() => {
        this.requireEnv(envId);
        const digest = apiKeyDigest(key);
        const existing = this.sql.keyByDigest(digest);
        if (existing !== undefined) {
          throw new RcdError(
            'conflict',
            existing.env_id === envId ? 'this API key already exists in this environment' : 'this API key already belongs to another environment',
          );
        }
        const id = generateKeyId();
        this.sql.insertKey(id, envId, digest, nowIso());
        return { id, key };
      });
    });
  }

  listKeys(envId: string): Promise<KeyInfo[]> {
    return settle(() =>
      this.read(() => {
        this.requireEnv(envId);
        return this.db
          .prepare<{ key_id: string; env_id: string; created_at: string; last_used_at: string | null; revoked_at: string | null }>(
            'SELECT key_id, env_id, created_at, last_used_at, revoked_at FROM api_keys WHERE env_id = ? ORDER BY created_at, key_id',
          )
          .all(envId)
          .map((r) => ({ id: r.key_id, envId: r.env_id, createdAt: r.created_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at }));
      })
    );
  }

  revokeKey(envId: string, keyId: string): Promise<void> {
    return settle(() => {
      this.write(() => {
        this.requireEnv(envId);
        const row = this.db
          .prepare<{ revoked_at: string | null }>('SELECT revoked_at FROM api_keys WHERE env_id = ? AND key_id = ?')
          .get(envId, keyId);
        if (row === undefined) throw new RcdError('not_found', `key ${JSON.stringify(keyId)} does not exist in environment ${JSON.stringify(envId)}`);
        // Revoking twice keeps the first revocation time.
        if (row.revoked_at === null) this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE key_id = ?').run(nowIso(), keyId);
      });
    });
  }

  recordKeyUse(keyIds: readonly string[], at: string): Promise<void> {
    return settle(() => {
      if (keyIds.length === 0) return;
      this.write(() => {
        const stmt = this.db.prepare(
          'UPDATE api_keys SET last_used_at = ? WHERE key_id = ? AND (last_used_at IS NULL OR last_used_at < ?)',
        );
        for (const id of keyIds) stmt.run(at, id, at);
      });
    });
  }

  listContent(envId: string): Promise<ContentSummary[]> {
    return settle(() =>
      this.read(() => {
        this.requireEnv(envId);
        return this.db
          .prepare<{ id: string; hash: string; revision_count: number; mapping_id: number | null; updated_at: string }>(
            `SELECT c.id, r.hash, c.mapping_id, c.updated_at,
                    (SELECT count(*) FROM revisions x WHERE x.content_pk = c.content_pk) AS revision_count
               FROM contents c
               JOIN revisions r ON r.content_pk = c.content_pk
                               AND r.number = (SELECT max(number) FROM revisions y WHERE y.content_pk = c.content_pk)
              WHERE c.env_id = ?
              ORDER BY c.id_lower`,
          )
          .all(envId)
          .map((r) => ({
            id: r.id,
            hash: r.hash,
            revisionCount: r.revision_count,
            hasMapping: r.mapping_id !== null,
            updatedAt: r.updated_at,
          }));
      })
    );
  }

  putContent(envId: string, id: string, text: string, minAppVersion: string | null): Promise<PutContentResult> {
    return settle(() => {
      const idProblem = contentIdProblem(id);
      if (idProblem !== '') throw new RcdError('invalid_request', idProblem);
      if (minAppVersion !== null) {
        const vProblem = appVersionProblem(minAppVersion);
        if (vProblem !== '') throw new RcdError('invalid_request', vProblem);
      }
      if (typeof text !== 'string') throw new RcdError('invalid_request', 'content text must be a string');
      // Compiled before the transaction: the CPU work does not hold the write lock, and an invalid
      // text is refused before anything is touched.
      const compiled = compileContent(text);
      return this.write(() => {
        this.requireEnv(envId);
        const at = nowIso();
        const key = contentIdKey(id);
        const content = this.sql.findContent(envId, key) ?? this.sql.insertContent(envId, key, id, at);
        const newest = this.sql.newestRevision(content.content_pk);
        if (newest !== undefined && sameRevision(newest, text, minAppVersion)) {
          return { id: content.id, hash: newest.hash, revision: newest.number, changed: false };
        }
        const number = this.sql.appendRevision(content.content_pk, nextNumber(newest), text, compiled, minAppVersion, at);
        return { id: content.id, hash: compiled.hash, revision: number, changed: true };
      });
    });
  }

  getContent(envId: string, id: string): Promise<ContentDetail | undefined> {
    return settle(() =>
      this.read(() => {
        if (typeof id !== 'string') return undefined;
        const content = this.sql.findContent(envId, contentIdKey(id));
        if (content === undefined) return undefined;
        const revisions: RevisionDetail[] = this.sql.revisions(content.content_pk).map((r) => ({
          revId: r.rev_id,
          number: r.number,
          hash: r.hash,
          minAppVersion: r.min_app_version,
          createdAt: r.created_at,
          text: r.text,
        }));
        const mapping = this.sql.getMapping(content.mapping_id);
        return {
          id: content.id,
          envId: content.env_id,
          revisions,
          mapping: mapping === undefined ? null : (JSON.parse(mapping.json) as unknown),
          createdAt: content.created_at,
          updatedAt: content.updated_at,
        };
      })
    );
  }

  deleteContent(envId: string, id: string): Promise<void> {
    return settle(() => {
      this.write(() => {
        const content = this.requireContent(envId, id);
        // Revisions and mappings go with it (ON DELETE CASCADE); their ids are never reused.
        this.db.prepare('DELETE FROM contents WHERE content_pk = ?').run(content.content_pk);
      });
    });
  }

  rollback(envId: string, id: string, to: number): Promise<PutContentResult> {
    return settle(() => {
      if (!Number.isSafeInteger(to) || to < 1) throw new RcdError('invalid_request', 'the revision to roll back to must be a positive integer');
      return this.write(() => {
        const content = this.requireContent(envId, id);
        const target = this.db
          .prepare<RevisionRow>(
            'SELECT rev_id, number, text, minified, hash, min_app_version, created_at FROM revisions WHERE content_pk = ? AND number = ?',
          )
          .get(content.content_pk, to);
        if (target === undefined) throw new RcdError('not_found', `revision ${to} of ${JSON.stringify(content.id)} does not exist`);
        const newest = this.sql.newestRevision(content.content_pk);
        if (newest !== undefined && sameRevision(newest, target.text, target.min_app_version)) {
          return { id: content.id, hash: newest.hash, revision: newest.number, changed: false };
        }
        const number = this.sql.appendRevision(content.content_pk, nextNumber(newest), target.text, target, target.min_app_version, nowIso());
        return { id: content.id, hash: target.hash, revision: number, changed: true };
      });
    });
  }

  putMapping(envId: string, id: string, mapping: unknown): Promise<{ mappingId: number; ruleCount: number }> {
    return settle(() =>
      this.write(() => {
        const content = this.requireContent(envId, id);
        const newest = this.sql.newestRevision(content.content_pk);
        if (newest === undefined) throw new RcdError('internal', `content ${JSON.stringify(content.id)} has no revision`);
        const compiled = validateMapping(mapping, JSON.parse(newest.minified));
        const json = JSON.stringify(mapping);
        const current = this.sql.getMapping(content.mapping_id);
        if (current !== undefined && current.json === json) return { mappingId: current.mapping_id, ruleCount: current.rule_count };
        const mappingId = this.sql.insertMapping(content.content_pk, json, compiled.ruleCount, nowIso());
        return { mappingId, ruleCount: compiled.ruleCount };
      })
    );
  }

  deleteMapping(envId: string, id: string): Promise<void> {
    return settle(() => {
      this.write(() => {
        const content = this.requireContent(envId, id);
        if (content.mapping_id === null) throw new RcdError('not_found', `content ${JSON.stringify(content.id)} has no mapping`);
        this.sql.clearMapping(content.content_pk, nowIso());
      });
    });
  }

  sync(from: string, to: string, ids?: readonly string[]): Promise<SyncReport> {
    return settle(() => {
      if (from === to) throw new RcdError('invalid_request', 'sync needs two different environments');
      if (ids !== undefined) {
        // Checked through an unknown copy (ids come from a JSON body): narrowing `ids` itself would
        // make it any[].
        const given: unknown = ids;
        if (!Array.isArray(given)) throw new RcdError('invalid_request', 'ids must be an array of content ids');
        for (const id of ids) {
          if (typeof id !== 'string' || id.length === 0) throw new RcdError('invalid_request', 'ids must be non-empty strings');
        }
      }
      return this.write(() => {
        this.requireEnv(from);
        this.requireEnv(to);
        let sources: ContentRow[];
        if (ids === undefined) {
          sources = this.db
            .prepare<ContentRow>(
              'SELECT content_pk, env_id, id_lower, id, mapping_id, created_at, updated_at FROM contents WHERE env_id = ? ORDER BY id_lower',
            )
            .all(from);
        } else {
          sources = [];
          const seen = new Set<string>();
          const missing: string[] = [];
          for (const id of ids) {
            const key = contentIdKey(id);
            if (seen.has(key)) continue;
            seen.add(key);
            const row = this.sql.findContent(from, key);
            if (row === undefined) missing.push(id);
            else sources.push(row);
          }
          if (missing.length > 0) {
            throw new RcdError('content_not_found', `not in environment ${JSON.stringify(from)}: ${missing.map((m) => JSON.stringify(m)).join(', ')}`, {
              missing,
            });
          }
        }
        const at = nowIso();
        const items: SyncItem[] = [];
        for (const src of sources) items.push(this.syncOne(src, to, at));
        return { from, to, items };
      });
    });
  }

  private syncOne(src: ContentRow, to: string, at: string): SyncItem {
    const srcRev = this.sql.newestRevision(src.content_pk);
    if (srcRev === undefined) throw new RcdError('internal', `content ${JSON.stringify(src.id)} has no revision`);
    const srcMapping = this.sql.getMapping(src.mapping_id);
    let target = this.sql.findContent(to, src.id_lower);
    let action: SyncItem['action'] = 'unchanged';
    if (target === undefined) {
      target = this.sql.insertContent(to, src.id_lower, src.id, at);
      action = 'created';
    }
    const newest = this.sql.newestRevision(target.content_pk);
    if (newest === undefined || !sameRevision(newest, srcRev.text, srcRev.min_app_version)) {
      this.sql.appendRevision(target.content_pk, nextNumber(newest), srcRev.text, srcRev, srcRev.min_app_version, at);
      if (action === 'unchanged') action = 'updated';
    }
    const targetMapping = this.sql.getMapping(target.mapping_id);
    if (srcMapping === undefined) {
      if (targetMapping !== undefined) {
        this.sql.clearMapping(target.content_pk, at);
        if (action === 'unchanged') action = 'updated';
      }
    } else if (targetMapping === undefined || targetMapping.json !== srcMapping.json) {
      this.sql.insertMapping(target.content_pk, srcMapping.json, srcMapping.rule_count, at);
      if (action === 'unchanged') action = 'updated';
    }
    return { id: target.id, action, hash: srcRev.hash };
  }

  importBundle(bundle: unknown): Promise<ImportReport> {
    return settle(() => this.write(() => importBundle(this.sql, bundle)));
  }

  exportBundle(): Promise<unknown> {
    return settle(() => this.read(() => exportBundle(this.sql)));
  }

  close(): Promise<void> {
    return settle(() => {
      if (this.closed) return;
      this.closed = true;
      this.db.close();
    });
  }
}

function unavailable(problem: string): RcdError {
  return new RcdError('store_unavailable', `the store is unavailable (${problem}); writes are refused until the server is restarted on an intact store`);
}

/**
 * SQLITE_BUSY: another connection held the lock past the busy timeout; the caller may retry.
 * SQLITE_READONLY_DBMOVED: SQLite noticed the file was moved or deleted. Anything else is a bug or
 * damage and stays as it is (logged, answered 500).
 */
function sqliteFailure(err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return err;
  if (code.startsWith('SQLITE_BUSY')) return new RcdError('store_busy', 'the store is locked by another connection; retry shortly');
  if (code === 'SQLITE_READONLY_DBMOVED') return unavailable('the database file was moved or deleted');
  return err;
}

interface DirectoryQueries {
  readonly environments: Statement<{ env_id: string }>;
  readonly keys: Statement<{ digest: string; key_id: string; env_id: string }>;
  readonly revisions: Statement<{
    content_pk: number;
    rev_id: number;
    number: number;
    hash: string;
    min_app_version: string | null;
    created_at: string;
  }>;
  readonly contents: Statement<ContentRow & { rule_count: number | null }>;
}

function prepareDirectoryQueries(db: Database): DirectoryQueries {
  return {
    environments: db.prepare('SELECT env_id FROM environments ORDER BY env_id'),
    keys: db.prepare('SELECT digest, key_id, env_id FROM api_keys WHERE revoked_at IS NULL ORDER BY key_id'),
    revisions: db.prepare('SELECT content_pk, rev_id, number, hash, min_app_version, created_at FROM revisions ORDER BY content_pk, number'),
    contents: db.prepare(
      `SELECT c.content_pk, c.env_id, c.id_lower, c.id, c.mapping_id, c.created_at, c.updated_at, m.rule_count
         FROM contents c LEFT JOIN mappings m ON m.mapping_id = c.mapping_id
        ORDER BY c.env_id, c.id_lower`,
    ),
  };
}

function revisionMeta(r: { rev_id: number; number: number; hash: string; min_app_version: string | null; created_at: string }): RevisionMeta {
  return { revId: r.rev_id, number: r.number, hash: r.hash, minAppVersion: r.min_app_version, createdAt: r.created_at };
}
