/**
 * The front end's routing data: which key belongs to which environment, which content ids exist
 * there, their revisions (for the app-version choice) and mapping ids, and each environment's
 * catalog body, prebuilt.
 *
 * Built whole from a store snapshot at start (O(store)), then kept current by applying the change
 * log's deltas in place at O(what changed) (src/control/protocol.ts). A delta slice is applied in
 * one synchronous call, so a request sees the state before or after it, never a mix; a content's
 * view is replaced whole, never changed, because in-flight requests hold views. The hot path does
 * Map lookups.
 */
import { compileStoredMapping, type CompiledMapping } from '../mapping/index.js';
import { apiKeyDigest } from '../store/ids.js';
import type { RoutedDelta, RoutedSnapshot } from '../control/protocol.js';
import { PackedContentReader } from '../control/routed.js';
import type { KeyDigest, RevisionReader } from '../store/types.js';
import * as appVersion from '../shared/app-version.js';
import { NO_VERSION, lowerBoundOf, type ComparableVersion } from '../shared/app-version.js';
import { catalogTag } from '../shared/catalog-tag.js';
import { ShardedMap, integerShard, stringShard } from './sharded-map.js';

// chooseRevision's comparison, bound at load: an import is a cell read before each inlined call.
const { versionAtMost } = appVersion;

export interface RevisionView {
  readonly revId: number;
  readonly hash: string;
  /** minAppVersion as a comparison key (versionKey), or "" when absent (matches every v). */
  readonly minVersion: string;
  /** minAppVersion as a comparison number (app-version.ts lowerBoundOf: 0 when absent, TOO_WIDE when too wide for one). */
  readonly minVersionNum: number;
}

/**
 * One content item. It is also its own newest revision (revId, hash, minVersion are the newest's):
 * most items have one revision, and a revisions array (a pushed array gets 17 slots) plus a revision
 * object per item would be nearly half of the directory's heap, which every full collection of the
 * delivery loop marks (bench/results/FINDINGS.md, "Directory heap").
 */
export interface ContentView extends RevisionView {
  readonly id: string;
  /** The revisions before the newest, newest first, or null when there is only one. */
  readonly older: readonly RevisionView[] | null;
  readonly mappingId: number;
  /** Compiled rules (evaluated per wrapped request on the main thread), or null without a mapping. */
  readonly mapping: CompiledMapping | null;
  /** True when the stored mapping could not be compiled: wrapped requests answer 500 internal. */
  readonly mappingBroken: boolean;
}

/**
 * Compiled mappings by immutable id, kept across updates so a write compiles only the mapping it
 * changed. Ids no longer referenced are dropped (after a whole build, or at the end of a delta).
 */
export class MappingLibrary {
  private readonly reader: RevisionReader;
  /** Sharded: one mapping per content is possible, and this table lives on the delivery loop. */
  private readonly compiled = new ShardedMap<number, CompiledMapping | null>(integerShard);
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

  /** Forgets mappings not in `live` (after a whole rebuild). */
  retain(live: ReadonlyMap<number, unknown>): void {
    for (const id of this.compiled.keys()) if (!live.has(id)) this.compiled.delete(id);
  }

  /** Forgets one mapping no content references any more. */
  forget(mappingId: number): void {
    this.compiled.delete(mappingId);
  }
}

export interface EnvView {
  readonly id: string;
  /** Updated in place by deltas; each ContentView in it is replaced whole, never changed. */
  readonly contents: ReadonlyMap<string, ContentView>;
  /**
   * Bumped by every change to `contents`: what was derived from them (a combine plan,
   * src/delivery/combine-plan.ts) is current while the environment object and this number are.
   */
  readonly generation: number;
  /** The catalog, ready to send (built by the control thread, src/control/catalog.ts). */
  readonly catalog: CatalogView;
}

/** One environment's catalog as an update carries it (src/control/protocol.ts CatalogText). */
export interface CatalogView {
  /** `{"catalog":{...}}` in pieces to send in order (one for a small body). */
  readonly body: readonly Uint8Array[];
  readonly bodyBytes: number;
  /** The same as a gzip member in pieces, or null (the empty catalog is too small to compress). */
  readonly gzip: readonly Uint8Array[] | null;
  readonly gzipBytes: number;
  /** The catalog's entity tag (opaque part, src/delivery/etag.ts). */
  readonly tag: string;
}

export interface KeyView {
  readonly keyId: string;
  readonly env: EnvView;
  /** The key-use round (key-use.ts) in which this loop last noted the key: noted once per round. */
  useRound: number;
}

/** An environment as the Directory holds it: the same object is updated by deltas. */
interface EnvState extends EnvView {
  /** Sharded (src/delivery/sharded-map.ts): growing it never copies the whole table in one slice. */
  readonly contents: ShardedMap<string, ContentView>;
  catalog: CatalogView;
  generation: number;
  /** Ids of its keys, so that deleting the environment drops them without a scan. */
  readonly keyIds: Set<string>;
}

interface KeyState {
  readonly digest: string;
  readonly env: EnvState;
}

/** Catalog bodies by environment id, as an update carries them. */
export type CatalogBodies = ReadonlyMap<string, CatalogView>;

const KEY_CACHE_LIMIT = 100_000;
const EMPTY_BODY = Buffer.from('{"catalog":{}}');
/** An environment no update described yet: the control thread's empty catalog has the same bytes and tag. */
const EMPTY_CATALOG: CatalogView = { body: [EMPTY_BODY], bodyBytes: EMPTY_BODY.byteLength, gzip: null, gzipBytes: 0, tag: catalogTag(EMPTY_BODY) };

export class Directory {
  private readonly byDigest = new Map<string, KeyView>();
  private readonly byKeyId = new Map<string, KeyState>();
  /**
   * Plain key → view, filled on first use so that a valid key costs one Map lookup instead of a
   * SHA-256 per request. Holds only keys that exist (bounded by the key count and a hard
   * cap); unknown keys are hashed every time, which keeps a key-guessing flood from growing memory.
   * Cleared whenever a key or an environment goes away, so a revoked key stops working at once
   * (refilling costs one hash per key still in use).
   */
  private readonly plainCache = new Map<string, KeyView>();
  /**
   * The last key found, compared before the map is asked: a header value is a new string on every
   * request, and hashing it for the map costs more than comparing it with the last
   * one, which is the same key for most requests of one game. Cleared with plainCache. (The compare
   * stops at the first differing character, as the map's own compare does on a hash match; a key
   * ships inside every game client, and nanoseconds do not cross a network's microseconds of jitter.)
   */
  private lastPlainKey = '';
  private lastKeyView: KeyView | undefined = undefined;
  private readonly envs = new Map<string, EnvState>();
  readonly environments: ReadonlyMap<string, EnvView> = this.envs;
  /** Mapping id → number of contents referencing it; ids that reach 0 are forgotten at the end of an update. */
  private readonly mappingRefs = new ShardedMap<number, number>(integerShard);
  /** Ids whose count reached 0 during the current update. */
  private readonly unreferenced = new Set<number>();
  private readonly mappings: MappingLibrary;
  /** The change-log sequence number the state reflects (a delta must start here; /healthz shows it). */
  seq: number;

  /** Whole, from a snapshot: O(store), at start and when the change log cannot be followed. */
  constructor(snapshot: RoutedSnapshot, mappings: MappingLibrary, catalogs: CatalogBodies) {
    this.mappings = mappings;
    this.seq = snapshot.seq;
    for (const envId of snapshot.environments) this.createEnv(envId, catalogs);
    const c = new PackedContentReader(snapshot.contents);
    while (c.next()) {
      const env = this.envs.get(c.envId) ?? this.createEnv(c.envId, catalogs);
      this.putContent(env, c);
    }
    mappings.retain(this.mappingRefs);
    for (const k of snapshot.keys) this.putKey(k);
  }

  /**
   * Applies one slice of a delta in place, at O(what it touches). Synchronous: no request runs in
   * the middle of it. Order: environments (a deleted one drops its keys and contents; one that
   * exists and was already here was deleted and created again within the delta, so it starts
   * empty), then keys, then contents, then the catalog bodies. `last` marks the final slice of an
   * update: the sequence number moves and mappings no longer referenced are forgotten only then,
   * so a mapping held before the update stays compiled while its slices arrive.
   * `changed` collects the display id of each content the slice changes, by environment (an
   * environment mapped to null changed whole and collects none).
   */
  applyDelta(delta: RoutedDelta, catalogs: CatalogBodies, last: boolean, changed: Map<string, string[] | null>): void {
    if (delta.fromSeq !== this.seq) {
      throw new Error(`delta ${delta.fromSeq}..${delta.toSeq} does not follow the applied sequence ${this.seq}`);
    }
    for (const e of delta.environments) {
      const known = this.envs.get(e.envId);
      if (known !== undefined) this.dropEnv(known);
      if (e.exists) this.createEnv(e.envId, catalogs);
    }
    for (const k of delta.keys) {
      const known = this.byKeyId.get(k.keyId);
      if (known !== undefined) {
        this.byKeyId.delete(k.keyId);
        this.byDigest.delete(known.digest);
        known.env.keyIds.delete(k.keyId);
        this.forgetPlainKeys();
      }
      if (k.key !== null) this.putKey(k.key);
    }
    const c = new PackedContentReader(delta.contents);
    while (c.next()) {
      const env = this.envs.get(c.envId);
      if (env === undefined) continue;
      const old = env.contents.get(c.idLower);
      noteChanged(changed, c.envId, c.revisionCount > 0 ? c.id : (old?.id ?? c.idLower));
      if (old !== undefined && old.mappingId !== 0) this.unref(old.mappingId);
      // putContent of an entry without revisions (a deleted content) removes it.
      this.putContent(env, c);
    }
    for (const [envId, catalog] of catalogs) {
      const env = this.envs.get(envId);
      if (env !== undefined) env.catalog = catalog;
    }
    if (!last) return;
    this.seq = delta.toSeq;
    for (const id of this.unreferenced) {
      if (this.mappingRefs.get(id) !== 0) continue;
      this.mappingRefs.delete(id);
      this.mappings.forget(id);
    }
    this.unreferenced.clear();
  }

  /**
   * The last key found (lookupKey), for a caller to compare before it calls: a call that returns at
   * once runs too little bytecode for V8 to optimize it, and lookupKey would run as baseline code.
   */
  get lastKey(): string {
    return this.lastPlainKey;
  }

  get lastView(): KeyView | undefined {
    return this.lastKeyView;
  }

  /** The environment of a plain API key, or undefined when unknown or revoked. */
  lookupKey(plainKey: string): KeyView | undefined {
    if (plainKey === this.lastPlainKey) return this.lastKeyView;
    const hit = this.plainCache.get(plainKey);
    if (hit !== undefined) {
      this.lastPlainKey = plainKey;
      this.lastKeyView = hit;
      return hit;
    }
    const view = this.byDigest.get(apiKeyDigest(plainKey));
    if (view !== undefined && this.plainCache.size < KEY_CACHE_LIMIT) this.plainCache.set(plainKey, view);
    return view;
  }

  /** A key by its public id, with its digest (stream tokens are signed with it), or undefined when revoked. */
  keyById(keyId: string): { readonly digest: string; readonly view: KeyView } | undefined {
    const k = this.byKeyId.get(keyId);
    if (k === undefined) return undefined;
    return { digest: k.digest, view: { keyId, env: k.env, useRound: -1 } };
  }

  private createEnv(envId: string, catalogs: CatalogBodies): EnvState {
    const catalog = catalogs.get(envId) ?? EMPTY_CATALOG;
    const env: EnvState = {
      id: envId,
      contents: new ShardedMap(stringShard),
      generation: 0,
      catalog,
      keyIds: new Set(),
    };
    this.envs.set(envId, env);
    return env;
  }

  /** Removes the environment with its keys; its object stays whole for requests that hold it. */
  private dropEnv(env: EnvState): void {
    this.envs.delete(env.id);
    for (const keyId of env.keyIds) {
      const k = this.byKeyId.get(keyId);
      if (k === undefined) continue;
      this.byKeyId.delete(keyId);
      this.byDigest.delete(k.digest);
    }
    for (const c of env.contents.values()) if (c.mappingId !== 0) this.unref(c.mappingId);
    this.forgetPlainKeys();
  }

  private forgetPlainKeys(): void {
    this.plainCache.clear();
    this.lastPlainKey = '';
    this.lastKeyView = undefined;
  }

  private putKey(k: KeyDigest): void {
    const env = this.envs.get(k.envId);
    if (env === undefined) return;
    const view: KeyView = { keyId: k.keyId, env, useRound: -1 };
    this.byDigest.set(k.digest, view);
    this.byKeyId.set(k.keyId, { digest: k.digest, env });
    env.keyIds.add(k.keyId);
  }

  /** The reader's current entry into `env`; an entry without revisions (gone) is removed. */
  private putContent(env: EnvState, c: PackedContentReader): void {
    const count = c.revisionCount;
    env.generation++;
    if (count === 0) {
      env.contents.delete(c.idLower);
      return;
    }
    const newest = count - 1;
    let older: RevisionView[] | null = null;
    if (count > 1) {
      // Sized up front: an array grown by push starts with room for 17.
      older = new Array<RevisionView>(count - 1);
      for (let i = count - 2, at = 0; i >= 0; i--, at++) {
        const min = lowerBoundOf(c.minAppVersion(i));
        older[at] = { revId: c.revId(i), hash: c.hash(i), minVersion: min.key, minVersionNum: min.num };
      }
    }
    const mappingId = c.mappingId;
    let mapping: CompiledMapping | null = null;
    if (mappingId !== null) {
      mapping = this.mappings.get(mappingId);
      this.mappingRefs.set(mappingId, (this.mappingRefs.get(mappingId) ?? 0) + 1);
    }
    const newestMin = lowerBoundOf(c.minAppVersion(newest));
    env.contents.set(c.idLower, {
      revId: c.revId(newest),
      hash: c.hash(newest),
      minVersion: newestMin.key,
      minVersionNum: newestMin.num,
      id: c.id,
      older,
      mappingId: mappingId ?? 0,
      mapping,
      mappingBroken: mappingId !== null && mapping === null,
    });
  }

  private unref(mappingId: number): void {
    const n = (this.mappingRefs.get(mappingId) ?? 1) - 1;
    this.mappingRefs.set(mappingId, n);
    if (n === 0) this.unreferenced.add(mappingId);
  }
}

/** The last single-content lookup (lastLookup): the content read for `id` under `env` at `generation`. */
interface LastLookup {
  env: EnvView | null;
  generation: number;
  id: string;
  content: ContentView | undefined;
}

// Owned by lookupContent, for its next call. A game's clients ask for the same few ids, and the
// content map hashes the id into a shard (stringShard reads up to 12 characters) and again for the
// shard's Map on every request. Valid while the environment object and its generation (bumped by
// every content change) are the ones it was read under.
const lastLookup: LastLookup = { env: null, generation: -1, id: '', content: undefined };

/** `env.contents.get(idLower)`, answered from the last lookup when nothing changed since (HOT PATH). */
export function lookupContent(env: EnvView, idLower: string): ContentView | undefined {
  const last = lastLookup;
  if (env === last.env && env.generation === last.generation && idLower === last.id) return last.content;
  const content = env.contents.get(idLower);
  last.env = env;
  last.generation = env.generation;
  last.id = idLower;
  last.content = content;
  return content;
}

/**
 * The revision a client of app version `v` gets: the newest whose minAppVersion is absent or <= v.
 * NO_VERSION means "no version sent": the newest revision. Undefined when every revision needs a
 * newer app.
 */
export function chooseRevision(content: ContentView, v: ComparableVersion): RevisionView | undefined {
  if (v === NO_VERSION || versionAtMost(content.minVersion, content.minVersionNum, v)) return content;
  const older = content.older;
  if (older === null) return undefined;
  for (let i = 0; i < older.length; i++) {
    const r = older[i]!;
    if (versionAtMost(r.minVersion, r.minVersionNum, v)) return r;
  }
  return undefined;
}

/** Every revision of `content`, newest first (tests and diagnostics; the hot path uses chooseRevision). */
export function revisionsOf(content: ContentView): RevisionView[] {
  const newest: RevisionView = { revId: content.revId, hash: content.hash, minVersion: content.minVersion, minVersionNum: content.minVersionNum };
  return content.older === null ? [newest] : [newest, ...content.older];
}

/** Adds `id` to the changes noted for `envId` (none when the environment changed whole). */
function noteChanged(changed: Map<string, string[] | null>, envId: string, id: string): void {
  const ids = changed.get(envId);
  if (ids === null) return;
  if (ids === undefined) changed.set(envId, [id]);
  else ids.push(id);
}
