/**
 * Turns one change-log delta into the updates the delivery loops apply (src/control/protocol.ts,
 * DeltaUpdate): the mapping texts the loops do not hold yet, the catalog bodies of the touched
 * environments (built here, in the control thread), and slices small enough that applying one
 * keeps a delivery loop busy for about SLICE_BUDGET_US at most.
 *
 * Slice sizing: the cost model charges a content item a fixed cost (its revision views, the map
 * update, the mapping reference count; a key or an environment entry costs less) and a mapping the
 * loop has not seen a cost per byte of its JSON text (compiling it dominates). Receiving a slice
 * costs little beside applying it, since contents cross as columns (src/control/routed.ts). The
 * item cost keeps room for a loaded machine. Under delivery load a slice also brings the loop its
 * garbage (scavenges in the same turn), so a smaller budget leaves fewer long pauses, and an import
 * does not answer later for it. One item is never cut: a mapping whose compilation alone exceeds
 * the budget is a slice of its own (compiled mappings hold functions and RE2 programs, which cannot
 * cross threads).
 */
import type { RevisionReader, RoutingDelta } from '../store/types.js';
import type { CatalogBook } from './catalog.js';
import type { DeltaUpdate, MappingText } from './protocol.js';
import { packChanges } from './routed.js';

/** What one slice may cost a delivery loop, by the model below. */
export const SLICE_BUDGET_US = 2000;
/** Applying one environment, key or content entry. */
export const ITEM_COST_US = 4;
/** Compiling a mapping the loop does not hold: per byte of its JSON text. */
export const MAPPING_BYTE_COST_US = 0.5;

type EnvEntry = RoutingDelta['environments'][number];
type KeyEntry = RoutingDelta['keys'][number];
type ContentEntry = RoutingDelta['contents'][number];

interface Slice {
  environments: EnvEntry[];
  keys: KeyEntry[];
  contents: ContentEntry[];
  mappings: MappingText[];
  cost: number;
}

function emptySlice(): Slice {
  return { environments: [], keys: [], contents: [], mappings: [], cost: 0 };
}

/**
 * The updates that carry `delta`, in order; updates `book` to the state after it. Mapping texts are
 * looked up through `reader` (read beforehand by the caller, by immutable id); a mapping that cannot be read travels
 * without text and the loop marks its content's mapping broken, as a whole rebuild would.
 */
export function deltaUpdates(
  delta: RoutingDelta,
  book: CatalogBook,
  reader: Pick<RevisionReader, 'readMapping'>,
  budgetUs = SLICE_BUDGET_US,
): DeltaUpdate[] {
  // Which mapping ids the loops lack must be decided against the state before the delta.
  const sent = new Set<number>();
  const slices: Slice[] = [];
  let cur = emptySlice();
  const add = (cost: number): void => {
    if (cur.cost > 0 && cur.cost + cost > budgetUs) {
      slices.push(cur);
      cur = emptySlice();
    }
    cur.cost += cost;
  };
  for (const e of delta.environments) {
    add(ITEM_COST_US);
    cur.environments.push(e);
  }
  for (const k of delta.keys) {
    add(ITEM_COST_US);
    cur.keys.push(k);
  }
  for (const c of delta.contents) {
    const mappingId = c.meta?.mappingId ?? null;
    let text: MappingText | null = null;
    if (mappingId !== null && !sent.has(mappingId) && !book.knowsMapping(mappingId)) {
      sent.add(mappingId);
      const json = reader.readMapping(mappingId);
      if (json !== undefined) text = { id: mappingId, json };
    }
    add(ITEM_COST_US + (text === null ? 0 : text.json.length * MAPPING_BYTE_COST_US));
    cur.contents.push(c);
    if (text !== null) cur.mappings.push(text);
  }
  slices.push(cur);

  const touched = book.apply(delta);
  const catalogs = book.changes(touched);
  return slices.map((s, i) => {
    const last = i === slices.length - 1;
    return {
      kind: 'delta',
      delta: { fromSeq: delta.fromSeq, toSeq: delta.toSeq, environments: s.environments, keys: s.keys, contents: packChanges(s.contents) },
      mappings: s.mappings,
      catalogs: last ? catalogs : [],
      last,
    };
  });
}
