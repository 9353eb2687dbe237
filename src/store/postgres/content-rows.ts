/**
 * The PostgreSQL store's statements on environments, keys, content items, revisions and mappings,
 * run on the caller's transaction: the same operations as the SQLite store's StoreSql
 * (src/store/sqlite/sql.ts), whose row shapes they return. postgres.js prepares each statement once
 * per connection and reuses it.
 */
import type { ContentRow, EnvRow, KeyRow, MappingRow, RevisionArgs, RevisionRow } from '../sqlite/sql.js';
import type { ContentHead, NewRevision } from '../ops/rows.js';
import type { Tx } from './connection.js';

const REVISION_COLUMNS = 'rev_id, number, text, minified, hash, min_app_version, created_at';
const CONTENT_COLUMNS = 'content_pk, env_id, id_lower, id, mapping_id, created_at, updated_at';

export class PgContentRows {
  readonly tx: Tx;

  constructor(tx: Tx) {
    this.tx = tx;
  }

  /** The first row of a prepared statement's result, undefined when it has none. */
  protected async firstRow<Row>(text: string, params: readonly unknown[]): Promise<Row | undefined> {
    const rows = await this.tx.unsafe<Row[]>(text, params as never[], { prepare: true });
    return rows[0];
  }

  async getEnv(envId: string): Promise<EnvRow | undefined> {
    return this.firstRow<EnvRow>('SELECT env_id, created_at FROM environments WHERE env_id = $1', [envId]);
  }

  async insertEnv(envId: string, at: string): Promise<void> {
    await this.tx.unsafe('INSERT INTO environments (env_id, created_at) VALUES ($1, $2)', [envId, at], { prepare: true });
  }

  /** Deletes the environment with its keys, content, revisions and mappings (ON DELETE CASCADE). */
  async deleteEnv(envId: string): Promise<void> {
    await this.tx.unsafe('DELETE FROM environments WHERE env_id = $1', [envId]);
  }

  async countContents(envId: string): Promise<number> {
    return (await this.tx.unsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM contents WHERE env_id = $1', [envId]))[0]?.n ?? 0;
  }

  async envIds(): Promise<string[]> {
    return (await this.tx.unsafe<{ env_id: string }[]>('SELECT env_id FROM environments ORDER BY env_id COLLATE "C"')).map((r) => r.env_id);
  }

  async keyOf(envId: string, keyId: string): Promise<Pick<KeyRow, 'revoked_at'> | undefined> {
    return (await this.tx.unsafe<{ revoked_at: string | null }[]>('SELECT revoked_at FROM api_keys WHERE env_id = $1 AND key_id = $2', [envId, keyId]))[0];
  }

  async revokeKey(keyId: string, at: string): Promise<void> {
    await this.tx.unsafe('UPDATE api_keys SET revoked_at = $1 WHERE key_id = $2', [at, keyId]);
  }

  async keyByDigest(digest: string): Promise<KeyRow | undefined> {
    return this.firstRow<KeyRow>('SELECT key_id, env_id, digest, created_at, last_used_at, revoked_at FROM api_keys WHERE digest = $1', [digest]);
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
    return this.firstRow<ContentRow>(`SELECT ${CONTENT_COLUMNS} FROM contents WHERE env_id = $1 AND id_lower = $2`, [envId, idLower]);
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

  async contentHeads(envId: string, keys: readonly string[]): Promise<ContentHead[]> {
    if (keys.length === 0) return [];
    const rows = await this.tx.unsafe<(ContentRow & { k: string; rev_id: number | null; number: number | null; text: string | null; minified: string | null; hash: string | null; min_app_version: string | null; rev_created_at: string | null })[]>(
      `SELECT u.k, c.content_pk, c.env_id, c.id_lower, c.id, c.mapping_id, c.created_at, c.updated_at,
              r.rev_id, r.number, r.text, r.minified, r.hash, r.min_app_version, r.created_at AS rev_created_at
         FROM unnest($2::text[]) WITH ORDINALITY AS u(k, n)
         LEFT JOIN contents c ON c.env_id = $1 AND c.id_lower = u.k
         LEFT JOIN LATERAL (SELECT ${REVISION_COLUMNS} FROM revisions x WHERE x.content_pk = c.content_pk ORDER BY x.number DESC LIMIT 1) r ON true
        ORDER BY u.n`,
      [envId, keys as string[]],
    );
    return rows.map((r) => ({
      content: r.content_pk === null ? undefined : { content_pk: r.content_pk, env_id: r.env_id, id_lower: r.id_lower, id: r.id, mapping_id: r.mapping_id, created_at: r.created_at, updated_at: r.updated_at },
      newest:
        r.rev_id === null
          ? undefined
          : { rev_id: r.rev_id, number: r.number!, text: r.text!, minified: r.minified!, hash: r.hash!, min_app_version: r.min_app_version, created_at: r.rev_created_at! },
    }));
  }

  async insertContents(envId: string, items: readonly { readonly idLower: string; readonly id: string }[], at: string): Promise<ContentRow[]> {
    if (items.length === 0) return [];
    const rows = await this.tx.unsafe<{ content_pk: number; id_lower: string }[]>(
      `INSERT INTO contents (env_id, id_lower, id, mapping_id, created_at, updated_at)
       SELECT $1, k, i, NULL, $4, $4 FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS u(k, i, n) ORDER BY n
       RETURNING content_pk, id_lower`,
      [envId, items.map((i) => i.idLower), items.map((i) => i.id), at],
    );
    const pk = new Map(rows.map((r) => [r.id_lower, r.content_pk]));
    return items.map((i) => ({ content_pk: pk.get(i.idLower)!, env_id: envId, id_lower: i.idLower, id: i.id, mapping_id: null, created_at: at, updated_at: at }));
  }

  async insertRevisions(revisions: readonly NewRevision[], at: string): Promise<void> {
    if (revisions.length === 0) return;
    await this.tx.unsafe(
      `INSERT INTO revisions (content_pk, number, text, minified, hash, min_app_version, created_at)
       SELECT p, n, t, m, h, v, $7 FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(p, n, t, m, h, v)`,
      [
        revisions.map((r) => r.contentPk),
        revisions.map((r) => r.number),
        revisions.map((r) => r.text),
        revisions.map((r) => r.compiled.minified),
        revisions.map((r) => r.compiled.hash),
        revisions.map((r) => r.minAppVersion),
        at,
      ] as never[],
    );
    const touched = revisions.filter((r) => r.touch).map((r) => r.contentPk);
    if (touched.length > 0) await this.tx.unsafe('UPDATE contents SET updated_at = $1 WHERE content_pk = ANY($2::bigint[])', [at, touched]);
  }

  async deleteContent(contentPk: number): Promise<void> {
    await this.tx.unsafe('DELETE FROM contents WHERE content_pk = $1', [contentPk], { prepare: true });
  }

  async newestRevision(contentPk: number): Promise<RevisionRow | undefined> {
    return this.firstRow<RevisionRow>(`SELECT ${REVISION_COLUMNS} FROM revisions WHERE content_pk = $1 ORDER BY number DESC LIMIT 1`, [contentPk]);
  }

  async revision(contentPk: number, number: number): Promise<RevisionRow | undefined> {
    return this.firstRow<RevisionRow>(`SELECT ${REVISION_COLUMNS} FROM revisions WHERE content_pk = $1 AND number = $2`, [contentPk, number]);
  }

  async revisions(contentPk: number): Promise<RevisionRow[]> {
    return this.tx.unsafe<RevisionRow[]>(`SELECT ${REVISION_COLUMNS} FROM revisions WHERE content_pk = $1 ORDER BY number`, [contentPk], { prepare: true });
  }

  /** The newest revision's hash alone (its texts can be megabytes). */
  async newestHash(contentPk: number): Promise<string | undefined> {
    return (await this.firstRow<{ hash: string }>('SELECT hash FROM revisions WHERE content_pk = $1 ORDER BY number DESC LIMIT 1', [contentPk]))?.hash;
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
  async insertRevision(...[contentPk, number, text, compiled, minAppVersion, at]: RevisionArgs): Promise<void> {
    await this.tx.unsafe(
      'INSERT INTO revisions (content_pk, number, text, minified, hash, min_app_version, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [contentPk, number, text, compiled.minified, compiled.hash, minAppVersion, at],
      { prepare: true },
    );
  }

  /** Appends revision `number` and marks the content updated (which puts it in the change log). */
  async appendRevision(...[contentPk, number, text, compiled, minAppVersion, at]: RevisionArgs): Promise<number> {
    await this.insertRevision(contentPk, number, text, compiled, minAppVersion, at);
    await this.tx.unsafe('UPDATE contents SET updated_at = $1 WHERE content_pk = $2', [at, contentPk], { prepare: true });
    return number;
  }

  async getMapping(mappingId: number | null): Promise<MappingRow | undefined> {
    if (mappingId === null) return undefined;
    return this.firstRow<MappingRow>('SELECT mapping_id, json, rule_count FROM mappings WHERE mapping_id = $1', [mappingId]);
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
