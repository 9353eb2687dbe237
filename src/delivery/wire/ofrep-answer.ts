/**
 * OFREP answers built from the render cache: an OFREP evaluation of an item is the wrapped answer of
 * endpoint 1 (the same front-cache entry, the same render) in another envelope.
 *
 * A wrapped head is `{"data":` DATA `,"hash":"…","meta":{"uid":`; its DATA bytes are the flag's value
 * as they are (byte for byte endpoint 1's data). What an evaluation adds around them depends on the
 * item (key, reason, variant, hash, seg: prepared once per rendered head, kept beside it) and on the
 * user (uid, mod: written per answer):
 *
 *   {"key":"Shop","value":DATA,"reason":"SPLIT","variant":"shop:B","metadata":{"hash":"…","seg":"[…]","uid":N,"mod":N}}
 *
 * The prepared parts live in a WeakMap keyed by the cached head, so they go when the front cache
 * drops it; the front cache itself is not changed. Answers are written into the reply's reused buffer
 * (answer-buffer.ts answerBuffer), as a combine is.
 *
 * Reason and variant from meta.seg (docs/openfeature.md): no rule applied → `STATIC`, variant
 * `default`; an A/B variant among the applied rules → `SPLIT`; segments only → `TARGETING_MATCH`. The
 * variant names the applied rules in rule order, `segment` or `segment:variant`, joined by `,`.
 */
import type { WireItem } from './item-scratch.js';
import * as tail from './tail.js';

// The writers used here, as this module's own consts (wire/README.md, "Module consts").
const { checkUser, digitCount, writeDecimal } = tail;

/** An item's parts, prepared once per rendered head (and per content id spelling). */
interface OfrepItem {
  /** The content id the key prefix was built for. */
  id: string;
  /** `{"key":"<id>","value":` */
  keyPrefix: Buffer;
  /** The value: the data bytes of the wrapped head (a view, no copy). */
  readonly value: Uint8Array;
  /** `,"reason":"…","variant":"…","metadata":{"hash":"…","seg":"…","uid":` */
  readonly middle: Buffer;
}

const items = new WeakMap<WireItem, OfrepItem>();

const WRAPPED_PREFIX_BYTES = '{"data":'.length;
/** `,"hash":"` + hash + `","meta":{"uid":` */
const SUFFIX_FIXED_BYTES = ',"hash":"'.length + '","meta":{"uid":'.length;
const MOD_MEMBER = Buffer.from(',"mod":', 'latin1');
const CLOSE = 0x7d; // '}'

interface SegEntry {
  readonly n: string;
  readonly v: string | null;
}

/** The parts of `item` (a wrapped head of the revision whose hash is `hash`) for the content `id`. */
function itemOf(item: WireItem, hash: string, id: string): OfrepItem {
  let parts = items.get(item);
  if (parts === undefined) {
    parts = prepare(item, hash, id);
    items.set(item, parts);
  } else if (parts.id !== id) {
    parts.id = id;
    parts.keyPrefix = keyPrefixOf(id);
  }
  return parts;
}

function keyPrefixOf(id: string): Buffer {
  return Buffer.from('{"key":' + JSON.stringify(id) + ',"value":', 'utf8');
}

function prepare(item: WireItem, hash: string, id: string): OfrepItem {
  const head = item.head;
  const segText = Buffer.from(item.seg.buffer, item.seg.byteOffset, item.seg.byteLength).toString('utf8');
  const seg = (segText === '' ? [] : JSON.parse(segText)) as SegEntry[];
  let reason = 'STATIC';
  let variant = 'default';
  if (seg.length > 0) {
    reason = seg.some((s) => s.v !== null) ? 'SPLIT' : 'TARGETING_MATCH';
    variant = seg.map((s) => (s.v === null ? s.n : s.n + ':' + s.v)).join(',');
  }
  const middle = `,"reason":"${reason}","variant":${JSON.stringify(variant)},"metadata":{"hash":"${hash}","seg":${JSON.stringify(segText === '' ? '[]' : segText)},"uid":`;
  return {
    id,
    keyPrefix: keyPrefixOf(id),
    value: head.subarray(WRAPPED_PREFIX_BYTES, head.byteLength - SUFFIX_FIXED_BYTES - hash.length),
    middle: Buffer.from(middle, 'utf8'),
  };
}

/** Bytes of one evaluation of `item` for the user (uid, mod). */
function evaluationLength(parts: OfrepItem, uid: number, mod: number): number {
  return parts.keyPrefix.byteLength + parts.value.byteLength + parts.middle.byteLength + digitCount(uid) + MOD_MEMBER.byteLength + digitCount(mod) + 2;
}

/** Writes one evaluation at `pos` (room is the caller's; `words` a DataView of `out`); returns the end. */
function writeEvaluation(out: Uint8Array, words: DataView, pos: number, parts: OfrepItem, uid: number, mod: number): number {
  out.set(parts.keyPrefix, pos);
  pos += parts.keyPrefix.byteLength;
  out.set(parts.value, pos);
  pos += parts.value.byteLength;
  out.set(parts.middle, pos);
  pos += parts.middle.byteLength;
  pos = writeDecimal(words, pos, uid);
  out.set(MOD_MEMBER, pos);
  pos = writeDecimal(words, pos + MOD_MEMBER.byteLength, mod);
  out[pos] = CLOSE;
  out[pos + 1] = CLOSE;
  return pos + 2;
}

/**
 * The answer of a single-flag evaluation, written into `buffer(size)` (the reply's reused buffer;
 * `words()` is a DataView of the buffer it last returned).
 */
export function singleAnswer(buffer: (size: number) => Buffer, words: () => DataView, item: WireItem, hash: string, id: string, uid: number, mod: number): Uint8Array {
  checkUser(uid, mod);
  const parts = itemOf(item, hash, id);
  const size = evaluationLength(parts, uid, mod);
  const out = buffer(size);
  const end = writeEvaluation(out, words(), 0, parts, uid, mod);
  if (end !== size) throw new Error(`wire: an OFREP evaluation of ${end} bytes, sized ${size}`);
  return out.subarray(0, end);
}

const FLAGS_OPEN = Buffer.from('{"flags":[', 'latin1');
const FLAGS_CLOSE = 0x5d; // ']'
const COMMA = 0x2c;

/** One item of a bulk answer: an evaluation (`item` set) or a failure (`failure`, a whole JSON object). */
export interface BulkItem {
  /** Set when the pool's render arrives, for an item the front cache lacked. */
  item: WireItem | null;
  readonly hash: string;
  readonly id: string;
  /** Set instead when the item cannot be evaluated (deleted meanwhile, no revision for the app version, …). */
  failure: Buffer | null;
}

/**
 * `{"flags":[…],"eventStreams":[…]}` (the streams member is `streams`, possibly empty), written into
 * `buffer(size)`: sizes first, then one pass of copies.
 */
export function bulkAnswer(buffer: (size: number) => Buffer, words: () => DataView, list: readonly BulkItem[], uid: number, mod: number, streams: Buffer): Uint8Array {
  checkUser(uid, mod);
  const parts = new Array<OfrepItem | null>(list.length);
  let total = FLAGS_OPEN.byteLength + 1 + streams.byteLength + 1;
  for (let i = 0; i < list.length; i++) {
    const b = list[i]!;
    if (i > 0) total++;
    if (b.item === null) {
      parts[i] = null;
      total += b.failure!.byteLength;
      continue;
    }
    const p = itemOf(b.item, b.hash, b.id);
    parts[i] = p;
    total += evaluationLength(p, uid, mod);
  }
  const out = buffer(total);
  const outWords = words();
  out.set(FLAGS_OPEN, 0);
  let pos = FLAGS_OPEN.byteLength;
  for (let i = 0; i < list.length; i++) {
    if (i > 0) out[pos++] = COMMA;
    const p = parts[i] ?? null;
    if (p === null) {
      const failure = list[i]!.failure!;
      out.set(failure, pos);
      pos += failure.byteLength;
    } else {
      pos = writeEvaluation(out, outWords, pos, p, uid, mod);
    }
  }
  out[pos++] = FLAGS_CLOSE;
  out.set(streams, pos);
  pos += streams.byteLength;
  out[pos++] = CLOSE;
  // One set of parts per entry (itemOf): an entry listed twice under two ids would size one key and write another.
  if (pos !== total) throw new Error(`wire: an OFREP bulk answer of ${pos} bytes, sized ${total}`);
  return out.subarray(0, pos);
}
