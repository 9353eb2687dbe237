/**
 * The client's cache: what it knows of the server, serialized as one JSON text into its storage.
 *
 * - `catalog` and `catalogTag`: the last catalog and its ETag (sent as If-None-Match).
 * - `items`: per content id, the catalog hash `h` the item was fetched under (compared with the
 *   catalog's, never with the delivered `hash`: an older app version may be served an older
 *   revision, whose hash never equals the catalog's), the delivered JSON text (null when no revision
 *   fits the app version), its hash and the applied segments.
 * - `batches`: the id lists of the last combine requests and their ETags, so that revalidating the
 *   ids with a mapping repeats a request the server can answer 304.
 * - `context`: the user context the items were fetched for; another context refetches everything.
 */
import type { ClientDefaults } from './defaults.js';

export const STATE_VERSION = 1;

export interface Segment {
  readonly n: string;
  readonly v: string | null;
  readonly i?: string;
}

export interface CatalogEntry {
  readonly h: string;
  readonly d: boolean;
}

export interface CachedItem {
  readonly h: string;
  /** Minified JSON text as delivered; null when the server has no revision for this app version. */
  readonly text: string | null;
  readonly hash: string | null;
  readonly seg: readonly Segment[];
  /** 'defaults' until the server delivered the item once. */
  readonly source: 'server' | 'defaults';
}

export interface Batch {
  readonly ids: readonly string[];
  readonly tag: string;
}

export interface CacheState {
  readonly version: typeof STATE_VERSION;
  readonly context: string;
  readonly catalogTag: string | null;
  readonly catalog: Readonly<Record<string, CatalogEntry>>;
  readonly items: Readonly<Record<string, CachedItem>>;
  readonly batches: readonly Batch[];
}

export function emptyState(context: string): CacheState {
  return { version: STATE_VERSION, context, catalogTag: null, catalog: {}, items: {}, batches: [] };
}

/**
 * The first-launch state from defaults: every item known under its exported catalog hash, so the
 * first refresh fetches only what changed since the export. Items with a mapping keep `h` too; they
 * are revalidated at every refresh anyway.
 */
export function stateFromDefaults(defaults: ClientDefaults, context: string): CacheState {
  const items: Record<string, CachedItem> = {};
  for (const [id, item] of Object.entries(defaults.items)) {
    setOwn(items, id, { h: item.h, text: JSON.stringify(item.data), hash: item.hash, seg: [], source: 'defaults' });
  }
  return { ...emptyState(context), items };
}

/** Parses a stored state; null when it is missing, unreadable or of another version (start cold). */
export function parseState(text: string | null): CacheState | null {
  if (text === null) return null;
  try {
    const value = JSON.parse(text) as Partial<CacheState> | null;
    if (value === null || typeof value !== 'object' || value.version !== STATE_VERSION) return null;
    if (typeof value.context !== 'string' || typeof value.items !== 'object' || typeof value.catalog !== 'object' || !Array.isArray(value.batches)) return null;
    return value as CacheState;
  } catch {
    return null;
  }
}

/** Content ids such as "__proto__" are valid: a plain assignment would set a prototype instead. */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
