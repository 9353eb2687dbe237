/**
 * The admin plane's read-only listings (environments, keys, content), run inside the caller's read
 * transaction.
 */
import type { Database } from './driver.js';
import { contentSummary, environmentInfo, keyInfo, type ContentListRow, type EnvironmentListRow, type KeyListRow } from '../rows.js';
import type { ContentSummary, EnvironmentInfo, KeyInfo } from '../types.js';

export function listEnvironments(db: Database): EnvironmentInfo[] {
  return db
    .prepare<EnvironmentListRow>(
      `SELECT e.env_id, e.created_at,
              (SELECT count(*) FROM contents c WHERE c.env_id = e.env_id) AS content_count,
              (SELECT count(*) FROM api_keys k WHERE k.env_id = e.env_id AND k.revoked_at IS NULL) AS key_count
         FROM environments e ORDER BY e.env_id`,
    )
    .all()
    .map(environmentInfo);
}

export function listKeys(db: Database, envId: string): KeyInfo[] {
  return db
    .prepare<KeyListRow>('SELECT key_id, env_id, created_at, last_used_at, revoked_at FROM api_keys WHERE env_id = ? ORDER BY created_at, key_id')
    .all(envId)
    .map(keyInfo);
}

export function listContent(db: Database, envId: string): ContentSummary[] {
  return db
    .prepare<ContentListRow>(
      `SELECT c.id, r.hash, c.mapping_id, c.updated_at,
              (SELECT count(*) FROM revisions x WHERE x.content_pk = c.content_pk) AS revision_count
         FROM contents c
         JOIN revisions r ON r.content_pk = c.content_pk
                         AND r.number = (SELECT max(number) FROM revisions y WHERE y.content_pk = c.content_pk)
        WHERE c.env_id = ?
        ORDER BY c.id_lower`,
    )
    .all(envId)
    .map(contentSummary);
}
