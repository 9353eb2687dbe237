/**
 * The control thread's copy of every environment's catalog entries ({id, h, d} per content item),
 * kept so that a routing update carries the catalog body of each environment it touched, built here
 * and not on a delivery loop: for a 50,000-item environment the body is ~3 MB of JSON.
 *
 * Built once from a snapshot, then updated from each routing delta by the same rules the delivery
 * loop's Directory applies (src/delivery/directory.ts): a touched environment that no longer exists
 * is dropped; one that exists and was already known was deleted and created again within the delta,
 * so its entries start over. Each entry keeps its JSON fragment and the body is cut into blocks
 * of consecutive entries with their bytes cached, so an edit re-encodes one block.
 *
 * A large body is sent as a list of pieces, not one buffer: each block's bytes (and its compressed
 * segment) live in a SharedArrayBuffer of their own, made when the block changes, and the list
 * names them in order between shared constant pieces. An edit then allocates and sends one block
 * instead of a fresh copy of the whole body, whose copies, and the SharedArrayBuffers left behind
 * to collect, would grow with the environment on every write. A small body (under JOIN_BELOW_BYTES) is still joined into one
 * buffer: it is served with one write, and copying it costs next to nothing.
 *
 * It also counts which mapping ids the contents reference: a delta needs to carry the text of a
 * mapping id only when no content referenced it before (the loops hold every referenced mapping
 * compiled).
 */
import type { ContentMeta, DirectorySnapshot, RoutingDelta } from '../store/types.js';
import type { CatalogChange, CatalogText, CatalogUpdate } from './protocol.js';
import { constants, crc32 } from 'node:zlib';
import { GZIP_HEADER, GzipBuilder, compressPart, crc32Combine, crc32Shift, gzipBound, gzipEnd, storedBlock, type CompressedPart } from '../shared/gzip.js';
import { catalogTag, catalogTagOfPieces } from '../shared/catalog-tag.js';

interface Entry {
  readonly idLower: string;
  /** `"<id>":{"h":"<hash>","d":<bool>}`, as JSON.stringify writes it. */
  readonly fragment: string;
  readonly mappingId: number | null;
}

/**
 * A run of consecutive entries in catalog order with its part of the body cached: an edit rebuilds
 * one block's bytes and the body is a concatenation, where rebuilding the whole body from fragments
 * (string join and UTF-8 encoding) grows with the environment.
 */
class Block {
  /**
   * The entries, sorted by idLower (plain string order); never empty. Held here, not looked up by
   * key when the block is encoded: no Map lookup per entry on each edit.
   */
  entries: Entry[];
  /** The entries' fragments joined by commas, in a SharedArrayBuffer (a piece of a large body). */
  bytes: Buffer | null = null;
  /** `bytes` compressed once: the gzip body is these parts joined, so an edit recompresses one block. */
  part: CompressedPart | null = null;
  /** `part`'s segment in a SharedArrayBuffer (a piece of a large body's gzip member). */
  segment: Buffer | null = null;

  constructor(entries: Entry[]) {
    this.entries = entries;
  }
}

/**
 * A catalog block is deflated at zlib's fastest level: its hex hashes hardly compress better at a
 * higher level, which takes about twice the time (memLevel 9, the most memory, is the faster one),
 * once per edit in every process of the store. Content bodies keep level 6 (src/shared/gzip.ts).
 */
const CATALOG_DEFLATE = { level: 1, memLevel: 9, finishFlush: constants.Z_SYNC_FLUSH };

/** Entries per block after a split or a bulk load; a block is split at twice this. */
const BLOCK_SIZE = 512;

class EnvCatalog {
  readonly entries = new Map<string, Entry>();
  blocks: Block[] = [];
  body: BuiltCatalog | null = null;
  /** The body last handed out for the loops, which hold it: the next one goes as a change to it. */
  sent: BuiltCatalog | null = null;
}

type BuiltCatalog = Omit<CatalogText, 'envId'>;

/** A body smaller than this is sent as one buffer; a larger one as its pieces. */
export const JOIN_BELOW_BYTES = 64 * 1024;

const OPEN = Buffer.from('{"catalog":{');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from('}}');
/** The constant pieces of a large body and of its gzip member, shared once. */
const OPEN_PIECE = shared([OPEN]);
const COMMA_PIECE = shared([COMMA]);
const CLOSE_PIECE = shared([CLOSE]);
const GZIP_OPEN_PIECE = shared([GZIP_HEADER, storedBlock(OPEN)]);
const GZIP_COMMA_PIECE = shared([storedBlock(COMMA)]);
const GZIP_CLOSE = storedBlock(CLOSE);
/** CRC-32 of each constant piece's text and the shift of its length (for crc32Combine). */
const OPEN_CRC = crc32(OPEN);
const COMMA_CRC = crc32(COMMA);
const COMMA_SHIFT = crc32Shift(COMMA.byteLength);
const CLOSE_CRC = crc32(CLOSE);
const CLOSE_SHIFT = crc32Shift(CLOSE.byteLength);
/** Assembles the joined gzip bodies (one at a time, reused). */
const builder = new GzipBuilder();
const EMPTY_BODY = shared([Buffer.from('{"catalog":{}}')]);
const EMPTY_GZIP = shared([gzipOf([], [EMPTY_BODY])]);
const EMPTY_CATALOG: BuiltCatalog = { body: [EMPTY_BODY], bodyBytes: EMPTY_BODY.byteLength, gzip: [EMPTY_GZIP], gzipBytes: EMPTY_GZIP.byteLength, tag: catalogTag(EMPTY_BODY) };

export class CatalogBook {
  private readonly envs = new Map<string, EnvCatalog>();
  /** Mapping id -> number of contents that reference it. */
  private readonly mappingRefs = new Map<number, number>();

  constructor(snapshot: DirectorySnapshot) {
    for (const envId of snapshot.environments) this.envs.set(envId, new EnvCatalog());
    for (const c of snapshot.contents) {
      let env = this.envs.get(c.envId);
      if (env === undefined) this.envs.set(c.envId, (env = new EnvCatalog()));
      if (env.entries.has(c.idLower)) continue;
      this.put(env, c);
    }
    for (const env of this.envs.values()) {
      const sorted = [...env.entries.values()].sort(byIdLower);
      for (let i = 0; i < sorted.length; i += BLOCK_SIZE) env.blocks.push(new Block(sorted.slice(i, i + BLOCK_SIZE)));
    }
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
        removeEntry(env, c.idLower);
      } else {
        const entry = this.put(env, c.meta);
        if (old === undefined) insertEntry(env, entry);
        else replaceEntry(env, entry);
      }
      env.body = null;
      touched.add(c.envId);
    }
    return [...touched];
  }

  /** The catalog bodies of `envIds` that exist, whole. */
  bodies(envIds: Iterable<string>): CatalogText[] {
    const out: CatalogText[] = [];
    for (const envId of envIds) {
      const env = this.envs.get(envId);
      if (env !== undefined) {
        const built = bodyOf(env);
        env.sent = built;
        out.push(wholeOf(envId, built));
      }
    }
    return out;
  }

  /**
   * The catalog bodies of `envIds` that exist, for loops that hold the bodies handed out before: a
   * change to the held body when it has as many pieces (an edit that did not split or empty a
   * block), else whole (a new environment, a split or emptied block, a small body's one piece
   * growing into pieces).
   */
  changes(envIds: Iterable<string>): CatalogUpdate[] {
    const out: CatalogUpdate[] = [];
    for (const envId of envIds) {
      const env = this.envs.get(envId);
      if (env === undefined) continue;
      const held = env.sent;
      const built = bodyOf(env);
      env.sent = built;
      const sameShape = held !== null && held.body.length === built.body.length && held.gzip.length === built.gzip.length;
      out.push(sameShape ? changeOf(envId, held, built) : wholeOf(envId, built));
    }
    return out;
  }

  /** Every environment's catalog body (a snapshot update carries them all). */
  allBodies(): CatalogText[] {
    return this.bodies(this.envs.keys());
  }

  /** Sets the entry of `c` (its place among the blocks is the caller's). */
  private put(env: EnvCatalog, c: ContentMeta): Entry {
    const newest = c.revisions[c.revisions.length - 1];
    if (newest === undefined) throw new Error(`content ${JSON.stringify(c.id)} in ${JSON.stringify(c.envId)} has no revision`);
    const entry: Entry = {
      idLower: c.idLower,
      fragment: `${JSON.stringify(c.id)}:{"h":${JSON.stringify(newest.hash)},"d":${c.mappingRuleCount > 0 ? 'true' : 'false'}}`,
      mappingId: c.mappingId,
    };
    env.entries.set(c.idLower, entry);
    if (c.mappingId !== null) this.mappingRefs.set(c.mappingId, (this.mappingRefs.get(c.mappingId) ?? 0) + 1);
    return entry;
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
    env.blocks = [];
  }
}

/** `built` whole, as the loops receive it. */
function wholeOf(envId: string, built: BuiltCatalog): CatalogText {
  return { envId, body: built.body, bodyBytes: built.bodyBytes, gzip: built.gzip, gzipBytes: built.gzipBytes, tag: built.tag };
}

/** `built` as a change to `held` (as many pieces each): the pieces that are not the same memory. */
function changeOf(envId: string, held: BuiltCatalog, built: BuiltCatalog): CatalogChange {
  const body = newPieces(held.body, built.body);
  const gzip = newPieces(held.gzip, built.gzip);
  return {
    envId,
    bodyPieces: built.body.length,
    bodyAt: body.at,
    body: body.pieces,
    bodyBytes: built.bodyBytes,
    gzipPieces: built.gzip.length,
    gzipAt: gzip.at,
    gzip: gzip.pieces,
    gzipBytes: built.gzipBytes,
    tag: built.tag,
  };
}

/** The indexes where `built` has another piece than `held`, and those pieces. */
function newPieces(held: readonly Uint8Array[], built: readonly Uint8Array[]): { at: number[]; pieces: Uint8Array[] } {
  const at: number[] = [];
  const pieces: Uint8Array[] = [];
  for (let i = 0; i < built.length; i++) {
    if (built[i] === held[i]) continue;
    at.push(i);
    pieces.push(built[i]!);
  }
  return { at, pieces };
}

function clearBlock(block: Block): void {
  block.bytes = null;
  block.part = null;
  block.segment = null;
}

/**
 * The body, its gzip member and its tag. A block whose entries changed is encoded and compressed
 * again; the others keep their bytes and compressed part. The tag hashes the whole body (XXH3-128,
 * fast enough to run on every edit).
 */
function bodyOf(env: EnvCatalog): BuiltCatalog {
  if (env.body !== null) return env.body;
  if (env.blocks.length === 0) return (env.body = EMPTY_CATALOG);
  let bodyBytes = OPEN.byteLength + (env.blocks.length - 1) * COMMA.byteLength + CLOSE.byteLength;
  for (const block of env.blocks) {
    if (block.bytes === null) {
      const fragments = new Array<string>(block.entries.length);
      for (let i = 0; i < block.entries.length; i++) fragments[i] = block.entries[i]!.fragment;
      block.bytes = shared([Buffer.from(fragments.join(','))]);
    }
    block.part ??= compressPart(block.bytes, CATALOG_DEFLATE);
    bodyBytes += block.bytes.byteLength;
  }
  return (env.body = bodyBytes < JOIN_BELOW_BYTES ? joined(env.blocks) : inPieces(env.blocks, bodyBytes));
}

/** A small body as one buffer, and its gzip member as one. */
function joined(blocks: readonly Block[]): BuiltCatalog {
  const parts: Buffer[] = [OPEN];
  const compressed: CompressedPart[] = [];
  for (let b = 0; b < blocks.length; b++) {
    if (b > 0) parts.push(COMMA);
    parts.push(blocks[b]!.bytes!);
    compressed.push(blocks[b]!.part!);
  }
  parts.push(CLOSE);
  const body = shared(parts);
  const gzip = shared([gzipOf(compressed, [OPEN, COMMA, CLOSE])]);
  return { body: [body], bodyBytes: body.byteLength, gzip: [gzip], gzipBytes: gzip.byteLength, tag: catalogTag(body) };
}

/**
 * A large body as its pieces: OPEN, the blocks' bytes separated by COMMA, CLOSE. Its gzip member
 * is the same walk: the header with OPEN as a stored block, each block's segment (byte-aligned, so
 * stored blocks may sit between them) separated by COMMA stored, then CLOSE stored, the final block
 * and the trailer, whose CRC is combined from the pieces' CRCs without reading their bytes.
 */
function inPieces(blocks: readonly Block[], bodyBytes: number): BuiltCatalog {
  const body: Uint8Array[] = [OPEN_PIECE];
  const gzip: Uint8Array[] = [GZIP_OPEN_PIECE];
  let gzipBytes = GZIP_OPEN_PIECE.byteLength;
  let crc = OPEN_CRC;
  for (let b = 0; b < blocks.length; b++) {
    const block = blocks[b]!;
    const part = block.part!;
    if (b > 0) {
      body.push(COMMA_PIECE);
      gzip.push(GZIP_COMMA_PIECE);
      gzipBytes += GZIP_COMMA_PIECE.byteLength;
      crc = crc32Combine(crc, COMMA_CRC, COMMA_SHIFT);
    }
    block.segment ??= shared([part.segment]);
    body.push(block.bytes!);
    gzip.push(block.segment);
    gzipBytes += block.segment.byteLength;
    crc = crc32Combine(crc, part.crc, part.shift);
  }
  body.push(CLOSE_PIECE);
  crc = crc32Combine(crc, CLOSE_CRC, CLOSE_SHIFT);
  const end = shared([GZIP_CLOSE, gzipEnd(crc, bodyBytes)]);
  gzip.push(end);
  gzipBytes += end.byteLength;
  return { body, bodyBytes, gzip, gzipBytes, tag: catalogTagOfPieces(body) };
}

/**
 * OPEN, the blocks' parts separated by COMMA, CLOSE, as one gzip member (`glue` is [OPEN, COMMA,
 * CLOSE]); with no block, glue's pieces are written as they are.
 */
function gzipOf(blocks: readonly CompressedPart[], glue: readonly Buffer[]): Buffer {
  let compressedBytes = 0;
  for (const p of blocks) compressedBytes += p.segment.byteLength;
  const out = Buffer.allocUnsafe(gzipBound(compressedBytes, 16 + blocks.length, 2 * blocks.length + 2));
  builder.begin(out);
  if (blocks.length === 0) {
    for (const g of glue) builder.raw(g);
    return out.subarray(0, builder.end());
  }
  builder.raw(glue[0]!);
  for (let b = 0; b < blocks.length; b++) {
    if (b > 0) builder.raw(glue[1]!);
    builder.part(blocks[b]!);
  }
  builder.raw(glue[2]!);
  return out.subarray(0, builder.end());
}

/**
 * The bytes of `parts` in a SharedArrayBuffer: posting it to the delivery loops shares the memory
 * instead of copying it into each (a copy's cost grows with the body and with the machine's load).
 * Never written after it is built, so sharing is safe.
 */
function shared(parts: readonly Uint8Array[]): Buffer {
  let total = 0;
  for (const p of parts) total += p.byteLength;
  const out = Buffer.from(new SharedArrayBuffer(total));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

function byIdLower(a: Entry, b: Entry): number {
  return a.idLower < b.idLower ? -1 : a.idLower > b.idLower ? 1 : 0;
}

/** The index of the first entry whose idLower is >= `key` in a sorted list. */
function lowerBound(entries: readonly Entry[], key: string): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid]!.idLower < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The index of the block that holds `key`, or would: the first whose last key is >= it, else the last. */
function blockIndex(env: EnvCatalog, key: string): number {
  let lo = 0;
  let hi = env.blocks.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const entries = env.blocks[mid]!.entries;
    if (entries[entries.length - 1]!.idLower < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insertEntry(env: EnvCatalog, entry: Entry): void {
  if (env.blocks.length === 0) {
    env.blocks.push(new Block([entry]));
    return;
  }
  const at = blockIndex(env, entry.idLower);
  const block = env.blocks[at]!;
  block.entries.splice(lowerBound(block.entries, entry.idLower), 0, entry);
  clearBlock(block);
  if (block.entries.length >= 2 * BLOCK_SIZE) {
    env.blocks.splice(at + 1, 0, new Block(block.entries.slice(BLOCK_SIZE)));
    block.entries = block.entries.slice(0, BLOCK_SIZE);
  }
}

/** Puts `entry` in the place of the one with its idLower, which the blocks hold. */
function replaceEntry(env: EnvCatalog, entry: Entry): void {
  const block = env.blocks[blockIndex(env, entry.idLower)]!;
  block.entries[lowerBound(block.entries, entry.idLower)] = entry;
  clearBlock(block);
}

function removeEntry(env: EnvCatalog, key: string): void {
  const at = blockIndex(env, key);
  const block = env.blocks[at]!;
  const i = lowerBound(block.entries, key);
  if (block.entries[i]?.idLower !== key) return;
  block.entries.splice(i, 1);
  clearBlock(block);
  if (block.entries.length === 0) env.blocks.splice(at, 1);
}
