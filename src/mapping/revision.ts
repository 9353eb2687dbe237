/**
 * App-version revisions: which revision of a content item a request gets.
 *
 * A request with v gets the newest revision whose minAppVersion is absent or <= v; a request without
 * v gets the newest revision. The front end builds one ladder per content item when it builds its
 * Directory (parsing every minAppVersion once), so the per-request cost is a parse of v (done once for
 * all items of a combine) and a short backwards scan with integer comparisons.
 */
import type { AppVersion, RevisionMeta } from '../store/types.js';
import { compareAppVersions, parseAppVersion } from './version.js';

export interface RevisionLadder {
  /** Oldest first, as in ContentMeta. Never empty. */
  readonly revisions: readonly RevisionMeta[];
  /** Parsed minAppVersion per revision (same index), null when absent. */
  readonly minVersions: readonly (AppVersion | null)[];
  /** True when no revision carries a minAppVersion: every request gets the newest, no scan. */
  readonly unconditional: boolean;
}

export function buildRevisionLadder(revisions: readonly RevisionMeta[]): RevisionLadder {
  const minVersions: (AppVersion | null)[] = [];
  let unconditional = true;
  for (const rev of revisions) {
    const parsed = rev.minAppVersion === null ? null : parseAppVersion(rev.minAppVersion);
    // A stored minAppVersion that does not parse cannot gate anything; the store validates it on
    // write, so this only guards against hand-edited databases.
    if (parsed !== null) unconditional = false;
    minVersions.push(parsed);
  }
  return { revisions, minVersions, unconditional };
}

/**
 * The revision to deliver, or undefined when every revision requires a newer app than v
 * (the caller answers content_not_found: there is nothing this app version can use).
 */
export function pickRevision(ladder: RevisionLadder, v: AppVersion | null): RevisionMeta | undefined {
  const revisions = ladder.revisions;
  if (v === null || ladder.unconditional) return revisions[revisions.length - 1];
  const minVersions = ladder.minVersions;
  for (let i = revisions.length - 1; i >= 0; i--) {
    const min = minVersions[i];
    if (min === null || compareAppVersions(min, v) <= 0) return revisions[i];
  }
  return undefined;
}
