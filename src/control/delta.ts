/**
 * Turns one change-log delta into the updates the delivery loops apply (src/control/protocol.ts,
 * DeltaUpdate): the mapping texts the loops do not hold yet, the catalog bodies of the touched
 * environments (built here, in the control thread), and slices small enough that applying one
 * keeps a delivery loop busy for about SLICE_BUDGET_US at most.
 *
 * Slice sizing, measured on the 2-core development machine shared with other jobs (Node 20,
 * Directory.applyDelta on a 50,000-item environment, medians of 7 runs): applying a content item
 * costs 0.8-3.3 µs (its revision views, the map update, the mapping reference count; the spread is
 * the machine's load), a key or an environment entry less; compiling a mapping the loop has not
 * seen costs 14-37 µs per 100 bytes of its JSON text (a 2-rule mapping ~30-60 µs, a 40-rule one
 * ~1.1 ms). Receiving a slice costs little beside it now that contents cross as columns
 * (src/control/routed.ts): 0.06 ms for 1,000 items, where an object per item took 1.1-2.8 ms; the
 * 500 items of a slice received and applied on a 50,000-item environment took a median 1.5-1.8 µs
 * an item. The model charges an item 4 µs, and 0.5 µs a mapping byte: a 2 ms budget is 500 content
 * items without new mappings, fewer with them (the item cost keeps room for a loaded machine). Under delivery load
 * a slice also brings the loop its garbage (scavenges in the same turn): with the loop above the
 * rest of the process (--delivery-nice), the pauses left during an 8 MiB import were slices of 8-11
 * ms of the loop's own CPU at a 4 ms budget, 3-7 seconds over 10 ms in three runs, against 0-1
 * (that one the VM's) at 2 ms, the import answering no later (bench/README.md, "What each pause is
 * made of"). One item is never cut: a mapping whose compilation alone exceeds the budget is a slice of
 * its own (a mapping of the maximum 1,000 rules, src/mapping/rules/compile.ts, compiles in ~30 ms:
 * compiled mappings hold functions and RE2 programs, which cannot cross threads).
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
