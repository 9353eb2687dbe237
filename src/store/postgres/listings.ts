/**
 * The admin plane's read-only listings (environments, keys, content) on PostgreSQL, run inside the
 * caller's read transaction. Text columns are ordered COLLATE "C": the binary order SQLite lists in.
 */
import { contentSummary, environmentInfo, keyInfo, type ContentListRow, type EnvironmentListRow, type KeyListRow } from '../rows.js';
import type { ContentSummary, EnvironmentInfo, KeyInfo } from '../types.js';
import type { Tx } from './connection.js';

export async function listEnvironments(tx: Tx): Promise<EnvironmentInfo[]> {
  const rows = await tx.unsafe<EnvironmentListRow[]>(
    `SELECT e.env_id, e.created_at,
            (SELECT count(*) FROM contents c WHERE c.env_id = e.env_id)::int AS content_count,
            (SELECT count(*) FROM api_keys k WHERE k.env_id = e.env_id AND k.revoked_at IS NULL)::int AS key_count
       FROM environments e ORDER BY e.env_id COLLATE "C"`,
  );
  return rows.map(environmentInfo);
}

export async function listKeys(tx: Tx, envId: string): Promise<KeyInfo[]> {
  const rows = await tx.unsafe<KeyListRow[]>(
    'SELECT key_id, env_id, created_at, last_used_at, revoked_at FROM api_keys WHERE env_id = $1 ORDER BY created_at COLLATE "C", key_id COLLATE "C"',
    [envId],
  );
  return rows.map(keyInfo);
}

export async function listContent(tx: Tx, envId: string): Promise<ContentSummary[]> {
  const rows = await tx.unsafe<ContentListRow[]>(
    `SELECT c.id, r.hash, c.mapping_id, c.updated_at,
            (SELECT count(*) FROM revisions x WHERE x.content_pk = c.content_pk)::int AS revision_count
       FROM contents c
       JOIN revisions r ON r.content_pk = c.content_pk
                       AND r.number = (SELECT max(number) FROM revisions y WHERE y.content_pk = c.content_pk)
      WHERE c.env_id = $1
      ORDER BY c.id_lower COLLATE "C"`,
    [envId],
  );
  return rows.map(contentSummary);
}
