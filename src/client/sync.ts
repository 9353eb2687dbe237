/**
 * A refresh's exchange with the server: the catalog, then the dynamic combines of the ids whose
 * catalog hash changed and of the ids with a mapping (revalidated with the previous combines' tags).
 */
import { fetchCatalog, fetchCombine, type Endpoint } from './http.js';
import { setOwn, type Batch, type CacheState, type CachedItem, type CatalogEntry } from './state.js';

/**
 * One refresh against the server from `before`: the catalog read with its tag, then the combines of
 * planBatches. `state` is null when nothing needs storing; `fresh` says `before` is not what is
 * stored (another user context), so it is stored whatever the server answers.
 */
export async function syncState(
  endpoint: Endpoint,
  before: CacheState,
  fresh: boolean,
  contextText: string,
  maxCombineIds: number,
): Promise<{ state: CacheState | null; changed: string[] }> {
  const catalogAnswer = await fetchCatalog(endpoint, before.catalogTag);
  const catalog: Readonly<Record<string, CatalogEntry>> = catalogAnswer.status === 304 ? before.catalog : catalogAnswer.body;
  let dirty = fresh || (catalogAnswer.status === 200 && catalogAnswer.tag !== before.catalogTag);
  const items: Record<string, CachedItem> = { ...before.items };
  const changed: string[] = [];
  for (const id of Object.keys(items)) {
    if (!Object.prototype.hasOwnProperty.call(catalog, id)) {
      if (items[id]!.text !== null) changed.push(id);
      delete items[id];
      dirty = true;
    }
  }
  const stale: string[] = [];
  const mapped = new Set<string>();
  for (const [id, entry] of Object.entries(catalog)) {
    if (entry.d) mapped.add(id);
    if (items[id]?.h !== entry.h) stale.push(id);
  }

  const requests = planBatches(stale, mapped, before.batches, catalog, maxCombineIds);
  const batches: Batch[] = [];
  for (const request of requests) {
    const answer = await fetchCombine(endpoint, request.ids, contextText, request.tag);
    if (answer.status === 304) {
      batches.push({ ids: request.ids, tag: answer.tag ?? request.tag ?? '' });
      continue;
    }
    dirty = true;
    if (answer.tag !== null) batches.push({ ids: request.ids, tag: answer.tag });
    for (const id of request.ids) {
      const h = catalog[id]!.h;
      const wrapped = Object.prototype.hasOwnProperty.call(answer.body.items, id) ? answer.body.items[id] : undefined;
      const next: CachedItem =
        wrapped === undefined
          ? { h, text: null, hash: null, seg: [], source: 'server' }
          : { h, text: typeof wrapped.data === 'string' ? wrapped.data : JSON.stringify(wrapped.data), hash: wrapped.hash, seg: wrapped.meta.seg, source: 'server' };
      const previous = items[id];
      const differs = previous === undefined ? next.text !== null : previous.text !== next.text || JSON.stringify(previous.seg) !== JSON.stringify(next.seg);
      if (differs) changed.push(id);
      setOwn(items, id, next);
    }
  }
  if (batches.length !== before.batches.length) dirty = true;
  if (!dirty) return { state: null, changed };
  return { state: { version: before.version, context: contextText, catalogTag: catalogAnswer.tag, catalog, items, batches }, changed };
}

interface PlannedRequest {
  readonly ids: readonly string[];
  readonly tag: string | null;
}

/**
 * The combines of a refresh. When no catalog hash changed, the previous combines that held ids with a
 * mapping are repeated as they were, with their tags (the server answers 304 unless a mapping
 * changed what those ids deliver); ids with a mapping that no previous combine held are asked anew.
 * When hashes changed, the changed ids and the ids with a mapping are asked anew (the tags of the
 * previous lists cannot match a new list). Each list holds at most `max` ids.
 */
export function planBatches(
  stale: readonly string[],
  mapped: ReadonlySet<string>,
  previous: readonly Batch[],
  catalog: Readonly<Record<string, CatalogEntry>>,
  max: number,
): PlannedRequest[] {
  const planned: PlannedRequest[] = [];
  let fresh: string[];
  if (stale.length === 0) {
    const covered = new Set<string>();
    for (const batch of previous) {
      const holdsMapped = batch.ids.some((id) => mapped.has(id));
      const allListed = batch.ids.every((id) => Object.prototype.hasOwnProperty.call(catalog, id));
      if (holdsMapped && allListed) {
        planned.push({ ids: batch.ids, tag: batch.tag });
        for (const id of batch.ids) covered.add(id);
      }
    }
    fresh = [...mapped].filter((id) => !covered.has(id));
  } else {
    const set = new Set<string>(stale);
    for (const id of mapped) set.add(id);
    fresh = [...set];
  }
  for (let i = 0; i < fresh.length; i += max) planned.push({ ids: fresh.slice(i, i + max), tag: null });
  return planned;
}
