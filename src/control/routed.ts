/**
 * The store's routing rows as they cross to a delivery loop (src/control/protocol.ts,
 * PackedContents): the control thread packs the fields a loop's Directory reads into columns before
 * an update is posted, and the loop reads them back entry by entry with a PackedContentReader, which
 * makes no object per entry (the strings it hands out are the only allocations).
 *
 * The strings a reader hands out are slices of the one received `text`: V8 keeps a slice of 13
 * characters or more as a view of it, so the text of a snapshot lives as long as any id or hash read
 * from it (at most the snapshot's own size, ~70 bytes an item; it goes with the next snapshot).
 */
import type { DirectorySnapshot } from '../store/types.js';
import type { PackedContents, RoutedContent, RoutedSnapshot } from './protocol.js';

/** One entry to pack: the content's current state, or null when it is gone (a delta's delete). */
export interface PackEntry {
  readonly envId: string;
  readonly idLower: string;
  readonly meta: RoutedContent | null;
}

/** Packs `entries` in order: a delta's content changes (meta null: deleted), or a snapshot's contents. */
export function packChanges(entries: readonly PackEntry[]): PackedContents {
  const count = entries.length;
  let revisions = 0;
  for (let i = 0; i < count; i++) revisions += entries[i]!.meta?.revisions.length ?? 0;
  const envIndex = new Map<string, number>();
  const envIds: string[] = [];
  const env = new Uint32Array(count);
  const revisionCounts = new Uint32Array(count);
  const mappingIds = new Float64Array(count);
  const revIds = new Float64Array(revisions);
  const lengths = new Int32Array(2 * count + 2 * revisions);
  const parts = new Array<string>(2 * count + 2 * revisions);
  let r = 0;
  let s = 0;
  for (let i = 0; i < count; i++) {
    const e = entries[i]!;
    let at = envIndex.get(e.envId);
    if (at === undefined) {
      at = envIds.length;
      envIds.push(e.envId);
      envIndex.set(e.envId, at);
    }
    env[i] = at;
    const meta = e.meta;
    parts[s] = meta?.id ?? '';
    lengths[s++] = meta?.id.length ?? 0;
    parts[s] = e.idLower;
    lengths[s++] = e.idLower.length;
    if (meta === null) {
      mappingIds[i] = -1;
      continue;
    }
    revisionCounts[i] = meta.revisions.length;
    mappingIds[i] = meta.mappingId ?? -1;
    for (const rev of meta.revisions) {
      revIds[r++] = rev.revId;
      parts[s] = rev.hash;
      lengths[s++] = rev.hash.length;
      parts[s] = rev.minAppVersion ?? '';
      lengths[s++] = rev.minAppVersion === null ? -1 : rev.minAppVersion.length;
    }
  }
  return { count, envIds, env, revisionCounts, mappingIds, revIds, text: parts.join(''), lengths };
}

/** Every content of a snapshot (the store's rows carry more fields; only the routed ones are packed). */
export function packContents(contents: readonly RoutedContent[]): PackedContents {
  const entries = new Array<PackEntry>(contents.length);
  for (let i = 0; i < contents.length; i++) {
    const c = contents[i]!;
    entries[i] = { envId: c.envId, idLower: c.idLower, meta: c };
  }
  return packChanges(entries);
}

export function routedSnapshot(s: DirectorySnapshot): RoutedSnapshot {
  return { seq: s.seq, environments: s.environments, keys: s.keys, contents: packContents(s.contents) };
}

/** A routed delta with no content changes (environments and keys only). */
export const NO_CONTENTS: PackedContents = packChanges([]);

/**
 * An id read from a Float64Array, as a small integer (a Smi) where it is one. V8 boxes every element
 * it loads from a Float64Array (a HeapNumber, also for 7), and a field first given a HeapNumber keeps
 * every value of that field boxed: each ContentView carried two boxes (revId, mappingId), 32 bytes of
 * directory heap an item, and every read of them on the delivery path loaded the box from another
 * line (a cache miss per mapped item of a combine). Ids past the Smi range stay numbers as they are.
 */
function smallId(v: number): number {
  const i = v | 0;
  return i === v ? i : v;
}

/**
 * Reads PackedContents entry by entry: `next()` moves to the following entry and fills the fields;
 * revision `i` (0 = oldest) of the current entry is read with revId/hash/minAppVersion. One reader
 * per update; its fields are overwritten by each `next()`.
 */
export class PackedContentReader {
  envId = '';
  /** '' for a content that is gone. */
  id = '';
  idLower = '';
  /** 0: the content is gone. */
  revisionCount = 0;
  mappingId: number | null = null;
  private readonly packed: PackedContents;
  private entry = -1;
  /** Index in revIds of the current entry's first revision. */
  private firstRev = 0;
  /** Index in lengths of the next string, and its offset in text. */
  private str = 0;
  private at = 0;
  private readonly hashes: string[] = [];
  private readonly minVersions: (string | null)[] = [];

  constructor(packed: PackedContents) {
    this.packed = packed;
  }

  next(): boolean {
    const p = this.packed;
    this.firstRev += this.revisionCount;
    const i = ++this.entry;
    if (i >= p.count) return false;
    this.envId = p.envIds[p.env[i]!]!;
    this.id = this.take();
    this.idLower = this.take();
    const revisions = p.revisionCounts[i]!;
    this.revisionCount = revisions;
    const mappingId = p.mappingIds[i]!;
    this.mappingId = mappingId < 0 ? null : smallId(mappingId);
    for (let k = 0; k < revisions; k++) {
      this.hashes[k] = this.take();
      this.minVersions[k] = this.takeNullable();
    }
    return true;
  }

  revId(i: number): number {
    return smallId(this.packed.revIds[this.firstRev + i]!);
  }

  hash(i: number): string {
    return this.hashes[i]!;
  }

  minAppVersion(i: number): string | null {
    return this.minVersions[i]!;
  }

  private take(): string {
    const length = this.packed.lengths[this.str++]!;
    const start = this.at;
    this.at = start + length;
    return this.packed.text.slice(start, this.at);
  }

  private takeNullable(): string | null {
    const length = this.packed.lengths[this.str]!;
    if (length >= 0) return this.take();
    this.str++;
    return null;
  }
}
