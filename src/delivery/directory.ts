/**
 * The front end's routing data: which key belongs to which environment, which content ids exist
 * there, their revisions (for the app-version choice) and mapping ids, and each environment's
 * catalog body, prebuilt.
 *
 * Built from a store snapshot at start and after every write, then swapped in whole, so a request
 * sees either the old or the new state, never a mix. Building is O(store size) and happens only on
 * change; the hot path does Map lookups.
 */
import { compileStoredMapping, type CompiledMapping } from '../mapping/index.js';
import { apiKeyDigest } from '../store/ids.js';
import type { ContentMeta, DirectorySnapshot, RevisionReader } from '../store/types.js';
import { NO_VERSION_KEY, versionKeyOf } from '../shared/app-version.js';

export interface RevisionView {
  readonly revId: number;
  readonly hash: string;
  /** minAppVersion as a comparison key (versionKey), or "" when absent (matches every v). */
  readonly minVersion: string;
}

export interface ContentView {
  readonly id: string;
  /** Newest first: the app-version choice scans until the first revision the client can take. */
  readonly revisions: readonly RevisionView[];
  readonly mappingId: number;
  /** Compiled rules (evaluated per wrapped request on the main thread), or null without a mapping. */
  readonly mapping: CompiledMapping | null;
  /** True when the stored mapping could not be compiled: wrapped requests answer 500 internal. */
  readonly mappingBroken: boolean;
}

/**
 * Compiled mappings by immutable id, kept across directory rebuilds so a write recompiles only the
 * mapping it changed. Ids no longer referenced are dropped after each build.
 */
export class MappingLibrary {
  private readonly reader: RevisionReader;
  private compiled = new Map<number, CompiledMapping | null>();
  private readonly onError: (mappingId: number, err: unknown) => void;

  constructor(reader: RevisionReader, onError: (mappingId: number, err: unknown) => void) {
    this.reader = reader;
    this.onError = onError;
  }

  /** The compiled mapping, or null when it cannot be read or compiled (reported once). */
  get(mappingId: number): CompiledMapping | null {
    const known = this.compiled.get(mappingId);
    if (known !== undefined) return known;
    let result: CompiledMapping | null = null;
    try {
      const text = this.reader.readMapping(mappingId);
      if (text === undefined) throw new Error('mapping row not found');
      result = compileStoredMapping(text);
    } catch (err) {
      this.onError(mappingId, err);
    }
    this.compiled.set(mappingId, result);
    return result;
  }

  /** Forgets mappings not in `live`. */
  retain(live: ReadonlySet<number>): void {
    for (const id of this.compiled.keys()) if (!live.has(id)) this.compiled.delete(id);
  }
}

export interface EnvView {
  readonly id: string;
  readonly contents: ReadonlyMap<string, ContentView>;
  /** `{"catalog":{...}}`, ready to send. */
  readonly catalogBody: Buffer;
}

export interface KeyView {
  readonly keyId: string;
  readonly env: EnvView;
}

const KEY_CACHE_LIMIT = 100_000;

export class Directory {
  private readonly byDigest: Map<string, KeyView>;
  /**
   * Plain key → view, filled on first use so that a valid key costs one Map lookup instead of a
   * SHA-256 per request (~1 µs). Holds only keys that exist (bounded by the key count and a hard
   * cap); unknown keys are hashed every time, which keeps a key-guessing flood from growing memory.
   * Dropped with the Directory on every change, so a revoked key stops working at once.
   */
  private readonly plainCache = new Map<string, KeyView>();
  readonly environments: ReadonlyMap<string, EnvView>;

  constructor(snapshot: DirectorySnapshot, mappings: MappingLibrary) {
    const envs = new Map<string, EnvView>();
    const grouped = new Map<string, ContentMeta[]>();
    for (const env of snapshot.environments) grouped.set(env, []);
    for (const c of snapshot.contents) {
      let list = grouped.get(c.envId);
      if (list === undefined) grouped.set(c.envId, (list = []));
      list.push(c);
    }
    for (const [envId, list] of grouped) envs.set(envId, buildEnv(envId, list, mappings));
    this.environments = envs;
    const live = new Set<number>();
    for (const c of snapshot.contents) if (c.mappingId !== null) live.add(c.mappingId);
    mappings.retain(live);

    this.byDigest = new Map();
    for (const k of snapshot.keys) {
      const env = envs.get(k.envId);
      if (env !== undefined) this.byDigest.set(k.digest, { keyId: k.keyId, env });
    }
  }

  /** The environment of a plain API key, or undefined when unknown or revoked. */
  lookupKey(plainKey: string): KeyView | undefined {
    const hit = this.plainCache.get(plainKey);
    if (hit !== undefined) return hit;
    const view = this.byDigest.get(apiKeyDigest(plainKey));
    if (view !== undefined && this.plainCache.size < KEY_CACHE_LIMIT) this.plainCache.set(plainKey, view);
    return view;
  }
}

function buildEnv(envId: string, list: readonly ContentMeta[], mappings: MappingLibrary): EnvView {
  const contents = new Map<string, ContentView>();
  const catalog: Record<string, { h: string; d: boolean }> = {};
  for (const c of list) {
    const revisions: RevisionView[] = [];
    for (let i = c.revisions.length - 1; i >= 0; i--) {
      const r = c.revisions[i]!;
      revisions.push({
        revId: r.revId,
        hash: r.hash,
        minVersion: r.minAppVersion === null ? NO_VERSION_KEY : versionKeyOf(r.minAppVersion),
      });
    }
    const mapping = c.mappingId === null ? null : mappings.get(c.mappingId);
    contents.set(c.idLower, {
      id: c.id,
      revisions,
      mappingId: c.mappingId ?? 0,
      mapping,
      mappingBroken: c.mappingId !== null && mapping === null,
    });
    // defineProperty, not assignment: an id spelled "__proto__" must become an own key of the catalog.
    Object.defineProperty(catalog, c.id, {
      value: { h: c.revisions[c.revisions.length - 1]!.hash, d: c.mappingRuleCount > 0 },
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return { id: envId, contents, catalogBody: Buffer.from(JSON.stringify({ catalog })) };
}

/**
 * The revision a client of app version `v` (a versionKey) gets: the newest whose minAppVersion is
 * absent or <= v. `v` = "" means "no version sent": the newest revision. Undefined when every
 * revision needs a newer app.
 */
export function chooseRevision(content: ContentView, v: string): RevisionView | undefined {
  const revs = content.revisions;
  if (v === NO_VERSION_KEY) return revs[0];
  for (let i = 0; i < revs.length; i++) {
    const r = revs[i]!;
    if (r.minVersion <= v) return r;
  }
  return undefined;
}
