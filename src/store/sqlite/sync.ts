/**
 * Sync (promote): copies the newest revision and the mapping of content items from one environment
 * to another inside the caller's write transaction, so a sync is all or nothing.
 */
import { RcdError } from '../../runtime/errors.js';
import { contentIdKey } from '../ids.js';
import { nextNumber, nowIso, sameRevision, type ContentRow, type StoreSql } from './sql.js';
import type { SyncReport } from '../types.js';

type SyncItem = SyncReport['items'][number];

/** Both environments exist (checked by the caller); `ids` omitted means every item of `from`. */
export function syncEnvironments(sql: StoreSql, from: string, to: string, ids: readonly string[] | undefined): SyncReport {
  let sources: ContentRow[];
  if (ids === undefined) {
    sources = sql.db
      .prepare<ContentRow>('SELECT content_pk, env_id, id_lower, id, mapping_id, created_at, updated_at FROM contents WHERE env_id = ? ORDER BY id_lower')
      .all(from);
  } else {
    sources = [];
    const seen = new Set<string>();
    const missing: string[] = [];
    for (const id of ids) {
      const key = contentIdKey(id);
      if (seen.has(key)) continue;
      seen.add(key);
      const row = sql.findContent(from, key);
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
  for (const src of sources) items.push(syncOne(sql, src, to, at));
  return { from, to, items };
}

function syncOne(sql: StoreSql, src: ContentRow, to: string, at: string): SyncItem {
  const srcRev = sql.newestRevision(src.content_pk);
  if (srcRev === undefined) throw new RcdError('internal', `content ${JSON.stringify(src.id)} has no revision`);
  const srcMapping = sql.getMapping(src.mapping_id);
  let target = sql.findContent(to, src.id_lower);
  let action: SyncItem['action'] = 'unchanged';
  if (target === undefined) {
    target = sql.insertContent(to, src.id_lower, src.id, at);
    action = 'created';
  }
  const newest = sql.newestRevision(target.content_pk);
  if (newest === undefined || !sameRevision(newest, srcRev.text, srcRev.min_app_version)) {
    sql.appendRevision(target.content_pk, nextNumber(newest), srcRev.text, srcRev, srcRev.min_app_version, at);
    if (action === 'unchanged') action = 'updated';
  }
  const targetMapping = sql.getMapping(target.mapping_id);
  if (srcMapping === undefined) {
    if (targetMapping !== undefined) {
      sql.clearMapping(target.content_pk, at);
      if (action === 'unchanged') action = 'updated';
    }
  } else if (targetMapping === undefined || targetMapping.json !== srcMapping.json) {
    sql.insertMapping(target.content_pk, srcMapping.json, srcMapping.rule_count, at);
    if (action === 'unchanged') action = 'updated';
  }
  return { id: target.id, action, hash: srcRev.hash };
}
