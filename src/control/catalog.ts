/**
 * The control thread's copy of every environment's catalog entries ({id, h, d} per content item),
 * kept so that a routing update carries the catalog body of each environment it touched, built here
 * and not on a delivery loop: for a 50,000-item environment the body is ~3 MB of JSON.
 *
 * Built once from a snapshot, then updated from each routing delta by the same rules the delivery
 * loop's Directory applies (src/delivery/directory.ts): a touched environment that no longer exists
 * is dropped; one that exists and was already known was deleted and created again within the delta,
 * so its entries start over. Each entry keeps its JSON fragment, so rebuilding a body joins strings
 * and serializes nothing.
 *
 * It also counts which mapping ids the contents reference: a delta needs to carry the text of a
 * mapping id only when no content referenced it before (the loops hold every referenced mapping
 * compiled).
 */
import type { ContentMeta, DirectorySnapshot, RoutingDelta } from '../store/types.js';

interface Entry {
  readonly idLower: string;
  /** `"<id>":{"h":"<hash>","d":<bool>}`, as JSON.stringify writes it. */
  readonly fragment: string;
  readonly mappingId: number | null;
}

class EnvCatalog {
  readonly entries = new Map<string, Entry>();
  /** idLower in catalog order (plain string order): a fresh build and an updated one list alike. */
  order: string[] = [];
  /** False while `order` needs sorting (after a bulk load or an insertion batch). */
  sorted = true;
  body: Buffer | null = null;
}

export interface CatalogBody {
  readonly envId: string;
  readonly body: Uint8Array;
}

const EMPTY_CATALOG = Buffer.from('{"catalog":{}}');

export class CatalogBook {
  private readonly envs = new Map<string, EnvCatalog>();
  /** Mapping id -> number of contents that reference it. */
  private readonly mappingRefs = new Map<number, number>();

  constructor(snapshot: DirectorySnapshot) {
    for (const envId of snapshot.environments) this.envs.set(envId, new EnvCatalog());
    for (const c of snapshot.contents) {
      let env = this.envs.get(c.envId);
      if (env === undefined) this.envs.set(c.envId, (env = new EnvCatalog()));
      if (!env.entries.has(c.idLower)) env.order.push(c.idLower);
      this.put(env, c);
    }
    // Sorted once, when a body is first built.
    for (const env of this.envs.values()) env.sorted = env.order.length < 2;
  }

  /** True when some content references the mapping id (so every loop holds it compiled). */
  knowsMapping(mappingId: number): boolean {
    return this.mappingRefs.has(mappingId);
  }

  /** Applies a delta; returns the ids of environments whose catalog body changed (existing ones only). */
  apply(delta: RoutingDelta): string[] {
    const touched = new Set<string>();
    for (const e of delta.environments) {
      const known = this.envs.get(e.envId);
      if (known !== undefined) this.dropAll(known);
      if (e.exists) {
        this.envs.set(e.envId, new EnvCatalog());
        touched.add(e.envId);
      } else {
        this.envs.delete(e.envId);
      }
    }
    for (const c of delta.contents) {
      const env = this.envs.get(c.envId);
      if (env === undefined) continue;
      const old = env.entries.get(c.idLower);
      if (old !== undefined) this.unref(old.mappingId);
      if (c.meta === null) {
        if (old === undefined) continue;
        env.entries.delete(c.idLower);
        removeSorted(env, c.idLower);
      } else {
        if (old === undefined) {
          if (env.sorted) insertSorted(env.order, c.idLower);
          else env.order.push(c.idLower);
        }
        this.put(env, c.meta);
      }
      env.body = null;
      touched.add(c.envId);
    }
    return [...touched];
  }

  /** The catalog bodies of `envIds` that exist. */
  bodies(envIds: Iterable<string>): CatalogBody[] {
    const out: CatalogBody[] = [];
    for (const envId of envIds) {
      const env = this.envs.get(envId);
      if (env !== undefined) out.push({ envId, body: bodyOf(env) });
    }
    return out;
  }

  /** Every environment's catalog body (a snapshot update carries them all). */
  allBodies(): CatalogBody[] {
    return this.bodies(this.envs.keys());
  }

  /** Sets the entry of `c` (its place in `order` is the caller's). */
  private put(env: EnvCatalog, c: ContentMeta): void {
    const newest = c.revisions[c.revisions.length - 1];
    if (newest === undefined) throw new Error(`content ${JSON.stringify(c.id)} in ${JSON.stringify(c.envId)} has no revision`);
    const entry: Entry = {
      idLower: c.idLower,
      fragment: `${JSON.stringify(c.id)}:{"h":${JSON.stringify(newest.hash)},"d":${c.mappingRuleCount > 0 ? 'true' : 'false'}}`,
      mappingId: c.mappingId,
    };
    env.entries.set(c.idLower, entry);
    if (c.mappingId !== null) this.mappingRefs.set(c.mappingId, (this.mappingRefs.get(c.mappingId) ?? 0) + 1);
    env.body = null;
  }

  private unref(mappingId: number | null): void {
    if (mappingId === null) return;
    const n = (this.mappingRefs.get(mappingId) ?? 0) - 1;
    if (n > 0) this.mappingRefs.set(mappingId, n);
    else this.mappingRefs.delete(mappingId);
  }

  private dropAll(env: EnvCatalog): void {
    for (const e of env.entries.values()) this.unref(e.mappingId);
    env.entries.clear();
    env.order = [];
  }
}

function bodyOf(env: EnvCatalog): Buffer {
  if (env.body !== null) return env.body;
  if (env.entries.size === 0) return (env.body = EMPTY_CATALOG);
  if (!env.sorted) {
    env.order.sort();
    env.sorted = true;
  }
  const parts = new Array<string>(env.order.length);
  for (let i = 0; i < env.order.length; i++) parts[i] = env.entries.get(env.order[i]!)!.fragment;
  return (env.body = Buffer.from(`{"catalog":{${parts.join(',')}}}`));
}

/** Binary search then splice: a memmove of pointers, ~20 µs at 50,000 entries. */
function insertSorted(order: string[], idLower: string): void {
  let lo = 0;
  let hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (order[mid]! < idLower) lo = mid + 1;
    else hi = mid;
  }
  order.splice(lo, 0, idLower);
}

function removeSorted(env: EnvCatalog, idLower: string): void {
  if (!env.sorted) {
    env.order.splice(env.order.indexOf(idLower), 1);
    return;
  }
  let lo = 0;
  let hi = env.order.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (env.order[mid]! < idLower) lo = mid + 1;
    else hi = mid;
  }
  if (env.order[lo] === idLower) env.order.splice(lo, 1);
}
