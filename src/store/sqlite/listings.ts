/**
 * The admin plane's read-only listings (environments, keys, content, one item's revisions), run
 * inside the caller's read transaction.
 */
import { contentIdKey } from '../ids.js';
import type { Database } from './driver.js';
import { contentDetail } from '../rows.js';
import type { StoreSql } from './sql.js';
import type { ContentDetail, ContentSummary, EnvironmentInfo, KeyInfo } from '../types.js';

export function listEnvironments(db: Database): EnvironmentInfo[] {
  return db
    .prepare<{ env_id: string; created_at: string; content_count: number; key_count: number }>(
      `SELECT e.env_id, e.created_at,
              (SELECT count(*) FROM contents c WHERE c.env_id = e.env_id) AS content_count,
              (SELECT count(*) FROM api_keys k WHERE k.env_id = e.env_id AND k.revoked_at IS NULL) AS key_count
         FROM environments e ORDER BY e.env_id`,
    )
    .all()
    .map((r) => ({ id: r.env_id, createdAt: r.created_at, contentCount: r.content_count, keyCount: r.key_count }));
}

export function listKeys(db: Database, envId: string): KeyInfo[] {
  return db
    .prepare<{ key_id: string; env_id: string; created_at: string; last_used_at: string | null; revoked_at: string | null }>(
      'SELECT key_id, env_id, created_at, last_used_at, revoked_at FROM api_keys WHERE env_id = ? ORDER BY created_at, key_id',
    )
    .all(envId)
    .map((r) => ({ id: r.key_id, envId: r.env_id, createdAt: r.created_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at }));
}

export function listContent(db: Database, envId: string): ContentSummary[] {
  return db
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
}

export function getContent(sql: StoreSql, envId: string, id: string): ContentDetail | undefined {
  const content = sql.findContent(envId, contentIdKey(id));
  if (content === undefined) return undefined;
  return contentDetail(content, sql.revisions(content.content_pk), sql.getMapping(content.mapping_id)?.json);
}
