/**
 * Prepared statements and the small synchronous operations the Store methods and bundle import are
 * built from. Nothing here opens a transaction: callers wrap their whole write (validation first,
 * then the writes) in one, so a refused write leaves nothing behind.
 */
import type { CompiledContent } from '../jsonc.js';
import type { Database, Statement } from './driver.js';

export interface EnvRow {
  env_id: string;
  created_at: string;
}

export interface ContentRow {
  content_pk: number;
  env_id: string;
  id_lower: string;
  id: string;
  mapping_id: number | null;
  created_at: string;
  updated_at: string;
}

export interface RevisionRow {
  rev_id: number;
  number: number;
  text: string;
  minified: string;
  hash: string;
  min_app_version: string | null;
  created_at: string;
}

/** A revision to write: its item, its number, its text, what is delivered of it, its minimum app version, when. */
export type RevisionArgs = [
  contentPk: number,
  number: number,
  text: string,
  compiled: Pick<CompiledContent, 'minified' | 'hash'>,
  minAppVersion: string | null,
  at: string,
];

export interface MappingRow {
  mapping_id: number;
  json: string;
  rule_count: number;
}

export interface KeyRow {
  key_id: string;
  env_id: string;
  digest: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export function nowIso(): string {
  return new Date().toISOString();
}

export class StoreSql {
  readonly db: Database;
  private readonly getEnvStmt: Statement<EnvRow>;
  private readonly insertEnvStmt: Statement<never>;
  private readonly keyByDigestStmt: Statement<KeyRow>;
  private readonly insertKeyStmt: Statement<never>;
  private readonly findContentStmt: Statement<ContentRow>;
  private readonly insertContentStmt: Statement<never>;
  private readonly touchContentStmt: Statement<never>;
  private readonly setMappingStmt: Statement<never>;
  private readonly newestRevisionStmt: Statement<RevisionRow>;
  private readonly newestHashStmt: Statement<{ hash: string }>;
  private readonly revisionsStmt: Statement<RevisionRow>;
  private readonly newestRevisionsStmt: Statement<RevisionRow>;
  private readonly insertRevisionStmt: Statement<never>;
  private readonly getMappingStmt: Statement<MappingRow>;
  private readonly insertMappingStmt: Statement<never>;

  constructor(db: Database) {
    this.db = db;
    this.getEnvStmt = db.prepare('SELECT env_id, created_at FROM environments WHERE env_id = ?');
    this.insertEnvStmt = db.prepare('INSERT INTO environments (env_id, created_at) VALUES (?, ?)');
    this.keyByDigestStmt = db.prepare(
      'SELECT key_id, env_id, digest, created_at, last_used_at, revoked_at FROM api_keys WHERE digest = ?',
    );
    this.insertKeyStmt = db.prepare('INSERT INTO api_keys (key_id, env_id, digest, created_at) VALUES (?, ?, ?, ?)');
    this.findContentStmt = db.prepare(
      'SELECT content_pk, env_id, id_lower, id, mapping_id, created_at, updated_at FROM contents WHERE env_id = ? AND id_lower = ?',
    );
    this.insertContentStmt = db.prepare(
      'INSERT INTO contents (env_id, id_lower, id, mapping_id, created_at, updated_at) VALUES (?, ?, ?, NULL, ?, ?)',
    );
    this.touchContentStmt = db.prepare('UPDATE contents SET updated_at = ? WHERE content_pk = ?');
    this.setMappingStmt = db.prepare('UPDATE contents SET mapping_id = ?, updated_at = ? WHERE content_pk = ?');
    this.newestRevisionStmt = db.prepare(
      'SELECT rev_id, number, text, minified, hash, min_app_version, created_at FROM revisions WHERE content_pk = ? ORDER BY number DESC LIMIT 1',
    );
    this.newestHashStmt = db.prepare('SELECT hash FROM revisions WHERE content_pk = ? ORDER BY number DESC LIMIT 1');
    this.revisionsStmt = db.prepare(
      'SELECT rev_id, number, text, minified, hash, min_app_version, created_at FROM revisions WHERE content_pk = ? ORDER BY number',
    );
    this.newestRevisionsStmt = db.prepare(
      'SELECT rev_id, number, text, minified, hash, min_app_version, created_at FROM revisions WHERE content_pk = ? ORDER BY number DESC LIMIT ?',
    );
    this.insertRevisionStmt = db.prepare(
      'INSERT INTO revisions (content_pk, number, text, minified, hash, min_app_version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.getMappingStmt = db.prepare('SELECT mapping_id, json, rule_count FROM mappings WHERE mapping_id = ?');
    this.insertMappingStmt = db.prepare(
      'INSERT INTO mappings (content_pk, json, rule_count, created_at) VALUES (?, ?, ?, ?)',
    );
  }

  getEnv(envId: string): EnvRow | undefined {
    return this.getEnvStmt.get(envId);
  }

  insertEnv(envId: string, at: string): void {
    this.insertEnvStmt.run(envId, at);
  }

  /** Deletes the environment with its keys, content, revisions and mappings (ON DELETE CASCADE). */
  deleteEnv(envId: string): void {
    this.db.prepare('DELETE FROM environments WHERE env_id = ?').run(envId);
  }

  countContents(envId: string): number {
    return this.db.prepare<{ n: number }>('SELECT count(*) AS n FROM contents WHERE env_id = ?').get(envId)?.n ?? 0;
  }

  envIds(): string[] {
    return this.db.prepare<{ env_id: string }>('SELECT env_id FROM environments ORDER BY env_id').all().map((r) => r.env_id);
  }

  keyByDigest(digest: string): KeyRow | undefined {
    return this.keyByDigestStmt.get(digest);
  }

  /** The environment owning each of `digests` (those stored). */
  keyOwners(digests: readonly string[]): Map<string, string> {
    const owners = new Map<string, string>();
    for (const digest of digests) {
      const row = this.keyByDigest(digest);
      if (row !== undefined) owners.set(digest, row.env_id);
    }
    return owners;
  }

  keyOf(envId: string, keyId: string): Pick<KeyRow, 'revoked_at'> | undefined {
    return this.db.prepare<{ revoked_at: string | null }>('SELECT revoked_at FROM api_keys WHERE env_id = ? AND key_id = ?').get(envId, keyId);
  }

  revokeKey(keyId: string, at: string): void {
    this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE key_id = ?').run(at, keyId);
  }

  insertKey(keyId: string, envId: string, digest: string, at: string): void {
    this.insertKeyStmt.run(keyId, envId, digest, at);
  }

  findContent(envId: string, idLower: string): ContentRow | undefined {
    return this.findContentStmt.get(envId, idLower);
  }

  insertContent(envId: string, idLower: string, id: string, at: string): ContentRow {
    const r = this.insertContentStmt.run(envId, idLower, id, at, at);
    return {
      content_pk: Number(r.lastInsertRowid),
      env_id: envId,
      id_lower: idLower,
      id,
      mapping_id: null,
      created_at: at,
      updated_at: at,
    };
  }

  newestRevision(contentPk: number): RevisionRow | undefined {
    return this.newestRevisionStmt.get(contentPk);
  }

  /** The newest revision's hash alone (its texts can be megabytes). */
  newestHash(contentPk: number): string | undefined {
    return this.newestHashStmt.get(contentPk)?.hash;
  }

  revisions(contentPk: number): RevisionRow[] {
    return this.revisionsStmt.all(contentPk);
  }

  /** The newest `count` revisions, oldest first. */
  newestRevisions(contentPk: number, count: number): RevisionRow[] {
    return this.newestRevisionsStmt.all(contentPk, count).reverse();
  }

  /**
   * Writes revision `number` without marking the content updated: for a content row created in the
   * same transaction, whose insert already put it in the change log with this updated_at.
   */
  insertRevision(...[contentPk, number, text, compiled, minAppVersion, at]: RevisionArgs): void {
    this.insertRevisionStmt.run(contentPk, number, text, compiled.minified, compiled.hash, minAppVersion, at);
  }

  /** Appends revision `number` (see nextNumber) and marks the content updated; returns the number. */
  appendRevision(...[contentPk, number, text, compiled, minAppVersion, at]: RevisionArgs): number {
    this.insertRevision(contentPk, number, text, compiled, minAppVersion, at);
    this.touchContentStmt.run(at, contentPk);
    return number;
  }

  getMapping(mappingId: number | null): MappingRow | undefined {
    return mappingId === null ? undefined : this.getMappingStmt.get(mappingId);
  }

  /** Stores a new immutable mapping row and makes it current; returns its id. */
  insertMapping(contentPk: number, json: string, ruleCount: number, at: string): number {
    const r = this.insertMappingStmt.run(contentPk, json, ruleCount, at);
    const mappingId = Number(r.lastInsertRowid);
    this.setMappingStmt.run(mappingId, at, contentPk);
    return mappingId;
  }

  clearMapping(contentPk: number, at: string): void {
    this.setMappingStmt.run(null, at, contentPk);
  }
}

/** Same revision for idempotency: same JSONC text (comments included) and same minAppVersion. */
export function sameRevision(
  row: Pick<RevisionRow, 'text' | 'min_app_version'>,
  text: string,
  minAppVersion: string | null,
): boolean {
  return row.text === text && row.min_app_version === minAppVersion;
}

/** The number of the revision that follows `newest` (1 for a new content item). */
export function nextNumber(newest: Pick<RevisionRow, 'number'> | undefined): number {
  return newest === undefined ? 1 : newest.number + 1;
}
