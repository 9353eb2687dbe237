/**
 * A sync's plan: what `POST /environments/:from/sync` would do to each item, with both sides' newest
 * text, minAppVersion and mapping so a console can show a per-item diff before the operator
 * confirms. Nothing is written. The decision per item follows the store's sync exactly: created when
 * the target lacks the id; updated when the newest revision's text or minAppVersion differs, or the
 * mapping differs (a mapping removed in the source is removed in the target); unchanged otherwise.
 */
import { RcdError } from '../../runtime/errors.js';
import { contentIdKey } from '../../store/ids.js';
import type { ContentDetail, Store } from '../../store/types.js';

export interface PlanSide {
  readonly id: string;
  readonly revision: number;
  readonly hash: string;
  readonly text: string;
  readonly minAppVersion: string | null;
  readonly mapping: unknown;
}

export interface PlanItem {
  readonly id: string;
  readonly action: 'created' | 'updated' | 'unchanged';
  readonly hash: string;
  readonly from: PlanSide;
  /** The target's current state, null when the sync would create the item. */
  readonly to: PlanSide | null;
}

export interface SyncPlan {
  readonly from: string;
  readonly to: string;
  readonly dryRun: true;
  readonly items: readonly PlanItem[];
}

export async function planSync(store: Store, from: string, to: string, ids: readonly string[] | undefined): Promise<SyncPlan> {
  // Both listings refuse an unknown environment (404 not_found), as the sync does.
  const sources = await store.listContent(from);
  await store.listContent(to);
  let chosen: string[];
  if (ids === undefined) {
    chosen = sources.map((c) => c.id);
  } else {
    const byKey = new Map(sources.map((c) => [contentIdKey(c.id), c.id]));
    const seen = new Set<string>();
    const missing: string[] = [];
    chosen = [];
    for (const id of ids) {
      const key = contentIdKey(id);
      if (seen.has(key)) continue;
      seen.add(key);
      const found = byKey.get(key);
      if (found === undefined) missing.push(id);
      else chosen.push(found);
    }
    if (missing.length > 0) {
      throw new RcdError('content_not_found', `not in environment ${JSON.stringify(from)}: ${missing.map((m) => JSON.stringify(m)).join(', ')}`, { missing });
    }
  }
  const items: PlanItem[] = [];
  for (const id of chosen) {
    const src = side(await store.getContent(from, id));
    if (src === null) continue; // deleted between the listing and this read
    const dst = side(await store.getContent(to, id));
    items.push({ id: dst?.id ?? src.id, action: actionOf(src, dst), hash: src.hash, from: src, to: dst });
  }
  return { from, to, dryRun: true, items };
}

function side(detail: ContentDetail | undefined): PlanSide | null {
  if (detail === undefined) return null;
  const newest = detail.revisions[detail.revisions.length - 1];
  if (newest === undefined) return null;
  return { id: detail.id, revision: newest.number, hash: newest.hash, text: newest.text, minAppVersion: newest.minAppVersion, mapping: detail.mapping };
}

function actionOf(src: PlanSide, dst: PlanSide | null): PlanItem['action'] {
  if (dst === null) return 'created';
  if (src.text !== dst.text || src.minAppVersion !== dst.minAppVersion) return 'updated';
  return JSON.stringify(src.mapping) === JSON.stringify(dst.mapping) ? 'unchanged' : 'updated';
}
