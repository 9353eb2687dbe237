/**
 * The row-level statements of the PostgreSQL store, run on the caller's transaction: the same
 * operations as the SQLite store's StoreSql (src/store/sqlite/sql.ts), whose row shapes they return.
 * postgres.js prepares each statement once per connection and reuses it.
 */
import type { CompiledContent } from '../jsonc.js';
import type { ContentRow, EnvRow, KeyRow, MappingRow, RevisionRow } from '../sqlite/sql.js';
import type { Tx } from './connection.js';

const REVISION_COLUMNS = 'rev_id, number, text, minified, hash, min_app_version, created_at';
const CONTENT_COLUMNS = 'content_pk, env_id, id_lower, id, mapping_id, created_at, updated_at';

export class PgRows {
  readonly tx: Tx;

  constructor(tx: Tx) {
    this.tx = tx;
  }

  async getEnv(envId: string): Promise<EnvRow | undefined> {
    const rows = await this.tx.unsafe<EnvRow[]>('SELECT env_id, created_at FROM environments WHERE env_id = $1', [envId], { prepare: true });
    return rows[0];
  }

  async insertEnv(envId: string, at: string): Promise<void> {
    await this.tx.unsafe('INSERT INTO environments (env_id, created_at) VALUES ($1, $2)', [envId, at], { prepare: true });
  }

  async keyByDigest(digest: string): Promise<KeyRow | undefined> {
    const rows = await this.tx.unsafe<KeyRow[]>(
      'SELECT key_id, env_id, digest, created_at, last_used_at, revoked_at FROM api_keys WHERE digest = $1',
      [digest],
      { prepare: true },
    );
    return rows[0];
  }

  /** The environment owning each of `digests` (those stored). */
  async keyOwners(digests: readonly string[]): Promise<Map<string, string>> {
    const owners = new Map<string, string>();
    if (digests.length === 0) return owners;
    const rows = await this.tx.unsafe<{ digest: string; env_id: string }[]>(
      'SELECT digest, env_id FROM api_keys WHERE digest = ANY($1::text[])',
      [digests as string[]],
    );
    for (const r of rows) owners.set(r.digest, r.env_id);
    return owners;
  }

  async insertKey(keyId: string, envId: string, digest: string, at: string): Promise<void> {
    await this.tx.unsafe('INSERT INTO api_keys (key_id, env_id, digest, created_at) VALUES ($1, $2, $3, $4)', [keyId, envId, digest, at], {
      prepare: true,
    });
  }

  async findContent(envId: string, idLower: string): Promise<ContentRow | undefined> {
    const rows = await this.tx.unsafe<ContentRow[]>(`SELECT ${CONTENT_COLUMNS} FROM contents WHERE env_id = $1 AND id_lower = $2`, [envId, idLower], {
      prepare: true,
    });
    return rows[0];
  }

  async contentsOf(envId: string): Promise<ContentRow[]> {
    return this.tx.unsafe<ContentRow[]>(`SELECT ${CONTENT_COLUMNS} FROM contents WHERE env_id = $1 ORDER BY id_lower`, [envId], { prepare: true });
  }

  async insertContent(envId: string, idLower: string, id: string, at: string): Promise<ContentRow> {
    const rows = await this.tx.unsafe<{ content_pk: number }[]>(
      'INSERT INTO contents (env_id, id_lower, id, mapping_id, created_at, updated_at) VALUES ($1, $2, $3, NULL, $4, $4) RETURNING content_pk',
      [envId, idLower, id, at],
      { prepare: true },
    );
    return { content_pk: rows[0]!.content_pk, env_id: envId, id_lower: idLower, id, mapping_id: null, created_at: at, updated_at: at };
  }

  async newestRevision(contentPk: number): Promise<RevisionRow | undefined> {
    const rows = await this.tx.unsafe<RevisionRow[]>(
      `SELECT ${REVISION_COLUMNS} FROM revisions WHERE content_pk = $1 ORDER BY number DESC LIMIT 1`,
      [contentPk],
      { prepare: true },
    );
    return rows[0];
  }

  async revision(contentPk: number, number: number): Promise<RevisionRow | undefined> {
    const rows = await this.tx.unsafe<RevisionRow[]>(`SELECT ${REVISION_COLUMNS} FROM revisions WHERE content_pk = $1 AND number = $2`, [contentPk, number], {
      prepare: true,
    });
    return rows[0];
  }

  async revisions(contentPk: number): Promise<RevisionRow[]> {
    return this.tx.unsafe<RevisionRow[]>(`SELECT ${REVISION_COLUMNS} FROM revisions WHERE content_pk = $1 ORDER BY number`, [contentPk], { prepare: true });
  }

  /** The newest revision's hash alone (its texts can be megabytes). */
  async newestHash(contentPk: number): Promise<string | undefined> {
    const rows = await this.tx.unsafe<{ hash: string }[]>('SELECT hash FROM revisions WHERE content_pk = $1 ORDER BY number DESC LIMIT 1', [contentPk], { prepare: true });
    return rows[0]?.hash;
  }

  /** The newest `count` revisions, oldest first. */
  async newestRevisions(contentPk: number, count: number): Promise<RevisionRow[]> {
    const rows = await this.tx.unsafe<RevisionRow[]>(
      `SELECT ${REVISION_COLUMNS} FROM revisions WHERE content_pk = $1 ORDER BY number DESC LIMIT $2`,
      [contentPk, count],
      { prepare: true },
    );
    return [...rows].reverse();
  }

  /** Writes revision `number` without marking the content updated: for a content row created in the same transaction. */
  async insertRevision(
    contentPk: number,
    number: number,
    text: string,
    compiled: Pick<CompiledContent, 'minified' | 'hash'>,
    minAppVersion: string | null,
    at: string,
  ): Promise<void> {
    await this.tx.unsafe(
      'INSERT INTO revisions (content_pk, number, text, minified, hash, min_app_version, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [contentPk, number, text, compiled.minified, compiled.hash, minAppVersion, at],
      { prepare: true },
    );
  }

  /** Appends revision `number` and marks the content updated (which puts it in the change log). */
  async appendRevision(
    contentPk: number,
    number: number,
    text: string,
    compiled: Pick<CompiledContent, 'minified' | 'hash'>,
    minAppVersion: string | null,
    at: string,
  ): Promise<number> {
    await this.insertRevision(contentPk, number, text, compiled, minAppVersion, at);
    await this.tx.unsafe('UPDATE contents SET updated_at = $1 WHERE content_pk = $2', [at, contentPk], { prepare: true });
    return number;
  }

  async getMapping(mappingId: number | null): Promise<MappingRow | undefined> {
    if (mappingId === null) return undefined;
    const rows = await this.tx.unsafe<MappingRow[]>('SELECT mapping_id, json, rule_count FROM mappings WHERE mapping_id = $1', [mappingId], {
      prepare: true,
    });
    return rows[0];
  }

  async insertMapping(contentPk: number, json: string, ruleCount: number, at: string): Promise<number> {
    const rows = await this.tx.unsafe<{ mapping_id: number }[]>(
      'INSERT INTO mappings (content_pk, json, rule_count, created_at) VALUES ($1, $2, $3, $4) RETURNING mapping_id',
      [contentPk, json, ruleCount, at],
      { prepare: true },
    );
    const mappingId = rows[0]!.mapping_id;
    await this.setMapping(contentPk, mappingId, at);
    return mappingId;
  }

  async clearMapping(contentPk: number, at: string): Promise<void> {
    await this.setMapping(contentPk, null, at);
  }

  private async setMapping(contentPk: number, mappingId: number | null, at: string): Promise<void> {
    await this.tx.unsafe('UPDATE contents SET mapping_id = $1, updated_at = $2 WHERE content_pk = $3', [mappingId, at, contentPk], { prepare: true });
  }
}
