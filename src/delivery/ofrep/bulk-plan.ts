/**
 * What an OFREP bulk evaluation lists: every content item of the key's environment, in one order on
 * every node (by the id's lookup key, so answers and their tags agree across a fleet), prepared once
 * per state of the environment's id set rather than per request.
 *
 * An environment's catalog object is replaced whenever an id is added, removed or respelled
 * (src/delivery/directory.ts applies it in the same synchronous update), so a plan is kept per
 * environment with the catalog object it was built under; the item count guards the moments between
 * the slices of a large write, when the contents already changed and the catalog follows with the
 * last slice.
 */
import { RcdError } from '../../runtime/errors.js';
import type { CatalogView, EnvView } from '../directory.js';

/** One item of a plan. */
export interface BulkEntry {
  /** Its directory lookup key (contentIdKey). */
  readonly lookup: string;
  /** The id as created: the flag key of the answer. */
  readonly id: string;
  /** Its part of the answer's tag description, before the item's own tag (`|length:id=`, ids may hold any character). */
  readonly tagPrefix: string;
}

export interface BulkPlan {
  /** The catalog object and item count it was built under. */
  readonly catalog: CatalogView;
  readonly size: number;
  readonly entries: readonly BulkEntry[];
}

const plans = new WeakMap<EnvView, BulkPlan>();

/**
 * The plan of `env`; throws `ofrep_bulk_too_large` when it holds more than `maxItems` (checked before
 * anything is built, so a large environment costs a size read per request).
 */
export function bulkPlanOf(env: EnvView, maxItems: number): BulkPlan {
  const size = env.contents.size;
  if (size > maxItems) {
    throw new RcdError(
      'ofrep_bulk_too_large',
      `this environment holds ${size} content items, more than an OFREP bulk evaluation may (--ofrep-bulk-max-items ${maxItems}); ` +
        'evaluate flags one by one (POST /ofrep/v1/evaluate/flags/{key}), or read the catalog (GET /api/v1/env/catalog) and combine the items you need (POST /api/v1/combine)',
    );
  }
  const known = plans.get(env);
  if (known !== undefined && known.catalog === env.catalog && known.size === size) return known;
  const entries: BulkEntry[] = [];
  for (const [lookup, content] of env.contents) entries.push({ lookup, id: content.id, tagPrefix: '|' + content.id.length + ':' + content.id + '=' });
  entries.sort(byLookup);
  const plan: BulkPlan = { catalog: env.catalog, size, entries };
  plans.set(env, plan);
  return plan;
}

function byLookup(a: BulkEntry, b: BulkEntry): number {
  return a.lookup < b.lookup ? -1 : a.lookup > b.lookup ? 1 : 0;
}
