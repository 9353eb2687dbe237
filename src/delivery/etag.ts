/**
 * Entity tags of the delivery answers and the If-None-Match test.
 *
 * A tag names what an answer is made of, never a hash of its bytes computed per request; every
 * part is the same on every node of one store and across restarts:
 * - plain content: the revision's content hash (XXH3-128 of the delivered text): a comment-only
 *   edit makes a new revision with the same text and keeps the tag;
 * - wrapped and serialized: that hash, the mapping's immutable id, the applied rule combination and
 *   the uid (the answer carries meta.uid);
 * - combine: a SHA-1 of its description (kind, the ids as written, every item's parts without its
 *   rule combination, or "missing"), then the mapped items' combinations and the uid when dynamic:
 *   the hashed part is fixed for a query until an edit (src/delivery/combine-plan.ts keeps it), so
 *   a request hashes at most its mapped items' combinations, and only when they are long;
 * - catalog: XXH3-128 of the body, computed once by the control thread when it builds the body.
 * A content-coding is a different representation (RFC 9110 8.8.3), so the sent tag ends in `.gz`
 * or `.br` for a compressed answer; If-None-Match compares the part before that suffix (the weak
 * comparison RFC 9110 13.1.2 prescribes for it), so a client holding any encoding of the current
 * answer gets 304.
 *
 * HOT PATH: one comparison per request that sends If-None-Match.
 */
import { hash } from 'node:crypto';
import { rememberIn, type Combination } from '../mapping/index.js';
import { JobKind } from '../pool/protocol.js';

export const enum Coding {
  Identity = 0,
  Gzip = 1,
  Br = 2,
}

const SUFFIX = ['"', '.gz"', '.br"'];
/** The ETag value's end after the opaque part, per coding, as bytes (wire/header-block.ts writes them). */
export const SUFFIX_BYTES: readonly Uint8Array[] = SUFFIX.map((s) => Buffer.from(s, 'latin1'));

/** The ETag header value of `opaque` sent with `coding`. */
export function etagValue(opaque: string, coding: Coding): string {
  return '"' + opaque + SUFFIX[coding]!;
}

/** Combination keys longer than this are hashed into the tag (a 1,000-rule mapping makes long keys). */
const LONG_COMBINATION = 48;

/** The combination's part of a tag, memoized on the interned combination. */
function combinationPart(c: Combination | null): string {
  if (c === null) return '';
  if (c.tagKey === '' && c.key !== '') {
    c.tagKey = c.key.length <= LONG_COMBINATION ? c.key : 'h' + hash('sha1', c.key, 'base64url');
  }
  return c.tagKey;
}

/**
 * The item tags of items without a combination (a wrapped answer of unmapped content), the same
 * fields a Combination keeps for its own (src/mapping/rules/combination.ts): the last one, checked
 * first, and up to ITEM_TAG_MEMO kept before it.
 */
interface BareTagMemo {
  tag: string;
  kind: number;
  rev: number;
  mapping: number;
  readonly kept: ItemTagMemo[];
  next: number;
}

// Owned by itemTag (earlierBareTag fills it on a miss), for its next call: no string is built per
// request, and the tag the item's header block was kept for (wire/header-block.ts) is the same object,
// compared without reading its characters.
const bareTag: BareTagMemo = { tag: '', kind: -1, rev: -1, mapping: -1, kept: [], next: 0 };

/** What an item tag names of a revision: its id (what the memos compare) and its content hash. */
export interface TaggedRevision {
  readonly revId: number;
  readonly hash: string;
}

/**
 * The opaque tag of one wrapped or serialized item, without the uid (combine uses it per item). Kept
 * per combination (and for unmapped items) by revision id: hashes are slices of the directory's
 * text, which V8's string comparison hands to the runtime whenever two differ.
 */
export function itemTag(kind: JobKind, rev: TaggedRevision, mappingId: number, c: Combination | null): string {
  if (kind === JobKind.Plain) return rev.hash;
  if (c === null) {
    const bare = bareTag;
    if ((kind as number) !== bare.kind || mappingId !== bare.mapping || rev.revId !== bare.rev) earlierBareTag(kind, rev, mappingId);
    return bare.tag;
  }
  if (c.itemTagKind === (kind as number) && c.itemTagMapping === mappingId && c.itemTagRev === rev.revId) return c.itemTag;
  return earlierItemTag(kind, rev, mappingId, c);
}

/** An item tag kept before the last one (Combination.itemTags, or the bare tags of unmapped items). */
interface ItemTagMemo {
  readonly kind: number;
  readonly rev: number;
  readonly mapping: number;
  readonly tag: string;
}

/**
 * Tags kept per combination and of unmapped items. Several: clients of different app versions get
 * different revisions of one content, each its own tag, and with the last one alone every such
 * request would build its tag again (a string concatenation, then V8 flattening it to compare it in
 * the runtime with the tag the item's header block was kept for).
 */
const ITEM_TAG_MEMO = 8;

function findTag(memo: readonly object[], kind: number, revId: number, mappingId: number): ItemTagMemo | undefined {
  for (let i = 0; i < memo.length; i++) {
    const m = memo[i] as ItemTagMemo;
    if (m.rev === revId && m.kind === kind && m.mapping === mappingId) return m;
  }
  return undefined;
}

/** An item tag's text: kind, revision hash, mapping and the combination's part ("" without one). */
function tagText(kind: JobKind, rev: TaggedRevision, mappingId: number, part: string): string {
  return (kind === JobKind.Wrapped ? 'w' : 's') + rev.hash + '.' + mappingId + '.' + part;
}

/** itemTag when the combination's last tag is another's: a kept one, else built and kept. */
function earlierItemTag(kind: JobKind, rev: TaggedRevision, mappingId: number, c: Combination): string {
  let m = findTag(c.itemTags, kind, rev.revId, mappingId);
  if (m === undefined) {
    m = { kind, rev: rev.revId, mapping: mappingId, tag: tagText(kind, rev, mappingId, combinationPart(c)) };
    c.itemTagNext = rememberIn(c.itemTags, m, ITEM_TAG_MEMO, c.itemTagNext);
  }
  c.itemTag = m.tag;
  c.itemTagKind = kind;
  c.itemTagRev = rev.revId;
  c.itemTagMapping = mappingId;
  return m.tag;
}

/** Makes bareTag's last tag the tag of this unmapped item: a kept one, else built and kept. */
function earlierBareTag(kind: JobKind, rev: TaggedRevision, mappingId: number): void {
  const bare = bareTag;
  let m = findTag(bare.kept, kind, rev.revId, mappingId);
  if (m === undefined) {
    m = { kind, rev: rev.revId, mapping: mappingId, tag: tagText(kind, rev, mappingId, '') };
    bare.next = rememberIn(bare.kept, m, ITEM_TAG_MEMO, bare.next);
  }
  bare.tag = m.tag;
  bare.kind = kind;
  bare.rev = rev.revId;
  bare.mapping = mappingId;
}

/** The opaque tag of a single wrapped or serialized answer: the item and the user's uid. */
export function wrappedTag(kind: JobKind, rev: TaggedRevision, mappingId: number, c: Combination | null, uid: number): string {
  return withUid(itemTag(kind, rev, mappingId, c), uid);
}

/** An item tag with the user's uid: a wrapped answer's whole tag (wire/header-block.ts writes the same bytes). */
export function withUid(tag: string, uid: number): string {
  return tag + '.' + uid;
}

/** `c` + the SHA-1 of a description: a combine's fixed part, or an OFREP bulk answer's whole tag. */
export function describedTag(description: string): string {
  return 'c' + hash('sha1', description, 'base64url');
}

/** Adds mapped item `index`'s combination to a combine's per-request part (items in answer order). */
export function withMappedPart(parts: string, index: number, c: Combination | null): string {
  return index === 0 ? combinationPart(c) : parts + '|' + combinationPart(c);
}

/**
 * The opaque tag of a combine: its described part, the mapped items' combinations (hashed when long,
 * as one long combination is) and the uid for dynamic kinds.
 */
export function combineTag(base: string, kind: JobKind, uid: number, mappedParts: string, mappedCount: number): string {
  if (kind === JobKind.Plain) return base;
  return withUid(combineTagPrefix(base, mappedParts, mappedCount), uid);
}

/** A dynamic combine's tag before the uid: its described part and the mapped items' combinations. */
export function combineTagPrefix(base: string, mappedParts: string, mappedCount: number): string {
  if (mappedCount === 0) return base;
  return base + '.' + (mappedParts.length <= LONG_COMBINATION ? mappedParts : 'h' + hash('sha1', mappedParts, 'base64url'));
}

/**
 * matchIfNoneMatch's `star` on the content POSTs: `*` names no copy the client holds, so it matches
 * nothing there and the request is answered as without it (docs/api.md, "If-None-Match: *").
 */
export const STAR_IGNORED = -1;

/**
 * Whether If-None-Match names `opaque` in any coding: the coding it names (so a 304 repeats the tag the
 * client holds), or -1. `*` answers `star`: the coding a GET's 304 goes out with (`*` matches any
 * current answer), or STAR_IGNORED. Tags carry no quote inside, so a quoted occurrence of the opaque
 * part is a whole tag of the list; a `W/` prefix does not matter (weak comparison).
 */
export function matchIfNoneMatch(header: string, opaque: string, star: Coding | typeof STAR_IGNORED): number {
  if (header.length === 0) return -1;
  if (header === '*' || header.trim() === '*') return star;
  let at = header.indexOf(opaque);
  while (at !== -1) {
    const after = at + opaque.length;
    if (at > 0 && header.charCodeAt(at - 1) === 0x22) {
      if (header.charCodeAt(after) === 0x22) return Coding.Identity;
      if (header.startsWith('.gz"', after)) return Coding.Gzip;
      if (header.startsWith('.br"', after)) return Coding.Br;
    }
    at = header.indexOf(opaque, after);
  }
  return -1;
}
