/**
 * The store's routing rows cut down to what a delivery loop's Directory reads
 * (src/control/protocol.ts, RoutedContent): built in the control thread before an update is posted,
 * so the loops neither deserialize nor collect the fields only the control thread uses (creation
 * times, revision numbers, rule counts).
 */
import type { ContentMeta, DirectorySnapshot, RoutingDelta } from '../store/types.js';
import type { RoutedContent, RoutedRevision, RoutedSnapshot } from './protocol.js';

export function routedContent(c: ContentMeta): RoutedContent {
  const revisions = new Array<RoutedRevision>(c.revisions.length);
  for (let i = 0; i < c.revisions.length; i++) {
    const r = c.revisions[i]!;
    revisions[i] = { revId: r.revId, hash: r.hash, minAppVersion: r.minAppVersion };
  }
  return { envId: c.envId, id: c.id, idLower: c.idLower, revisions, mappingId: c.mappingId };
}

export function routedSnapshot(s: DirectorySnapshot): RoutedSnapshot {
  const contents = new Array<RoutedContent>(s.contents.length);
  for (let i = 0; i < s.contents.length; i++) contents[i] = routedContent(s.contents[i]!);
  return { seq: s.seq, environments: s.environments, keys: s.keys, contents };
}

/** One routed entry of a delta's contents. */
export function routedChange(c: RoutingDelta['contents'][number]): { readonly envId: string; readonly idLower: string; readonly meta: RoutedContent | null } {
  return { envId: c.envId, idLower: c.idLower, meta: c.meta === null ? null : routedContent(c.meta) };
}
