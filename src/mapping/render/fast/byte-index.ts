/**
 * The base revision as UTF-8 bytes, with object members found lazily.
 *
 * The byte renderer (byte-splice.ts) never parses the whole content: it scans only the objects on the
 * patched paths, once per revision, and keeps their member offsets here keyed by the object's start
 * offset, found by the byte scanner of json-scan.ts; every offset here is a byte offset.
 * The cost is one scan of each object a render descends into (the first time only) and one Int32
 * triple per member; keys are decoded only for those objects.
 */

import { decodeKeyBytes, skipStringBytes, skipValueBytes, skipWsBytes } from '../json-scan.js';

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;

/** Member offsets of one base object. */
export interface ObjectIndex {
  /** Member position by key. */
  readonly keys: Map<string, number>;
  /** Where member i starts (its key's opening quote). */
  readonly keyStart: Int32Array;
  readonly valueStart: Int32Array;
  readonly valueEnd: Int32Array;
  /**
   * Members [0, intCount) have array-index keys ("0", "17"): JavaScript objects list those first,
   * ascending, so a key of that kind added by a patch is inserted among them, not appended.
   */
  readonly intCount: number;
  readonly intKeys: Float64Array;
  /**
   * False when the text is not what JSON.stringify produces for this object (duplicate keys, or
   * array-index keys not first and ascending): the byte renderer then leaves the render to the
   * copy-on-write renderer, whose output follows JavaScript's key order.
   */
  readonly canonical: boolean;
}

export interface ByteBase {
  /** The UTF-8 bytes of the base JSON text. */
  readonly bytes: Buffer;
  /** Where the root value starts and ends. */
  readonly rootStart: number;
  readonly rootEnd: number;
  /** Indexed objects by start offset (grows on first use, never changes afterwards). */
  readonly objects: Map<number, ObjectIndex>;
}

/**
 * `utf8`, when given, must be the UTF-8 bytes of `text` (e.g. the revision's plain body, already in
 * memory): it is used as is instead of encoding a second copy.
 */
export function createByteBase(text: string, utf8?: Uint8Array): ByteBase {
  const bytes = utf8 === undefined ? Buffer.from(text, 'utf8') : Buffer.from(utf8.buffer, utf8.byteOffset, utf8.byteLength);
  const rootStart = skipWsBytes(bytes, 0);
  return { bytes, rootStart, rootEnd: skipValueBytes(bytes, rootStart), objects: new Map() };
}

export function isObjectAt(base: ByteBase, start: number): boolean {
  return start >= 0 && base.bytes[start] === OPEN_OBJECT;
}

export function isArrayAt(base: ByteBase, start: number): boolean {
  return start >= 0 && base.bytes[start] === OPEN_ARRAY;
}

/** The end offset of the value starting at `start`. */
export function valueEndAt(base: ByteBase, start: number): number {
  return skipValueBytes(base.bytes, start);
}

/** The index of the object starting at `start` (which must be `{`), scanning it the first time. */
export function objectIndex(base: ByteBase, start: number): ObjectIndex {
  const known = base.objects.get(start);
  if (known !== undefined) return known;
  const index = scanObject(base.bytes, start);
  base.objects.set(start, index);
  return index;
}

/** JavaScript's "array index" keys, which every object lists first in ascending order. */
export function isArrayIndexKey(key: string): boolean {
  const n = key.length;
  if (n === 0 || n > 10) return false;
  const c0 = key.charCodeAt(0);
  if (c0 === 0x30) return n === 1;
  for (let i = 0; i < n; i++) {
    const c = key.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return n < 10 || Number(key) <= 4294967294;
}

function scanObject(b: Buffer, start: number): ObjectIndex {
  const keyStarts: number[] = [];
  const valueStarts: number[] = [];
  const valueEnds: number[] = [];
  const keys = new Map<string, number>();
  const intKeys: number[] = [];
  let canonical = true;
  let i = skipWsBytes(b, start + 1);
  while (b[i] !== CLOSE_OBJECT) {
    if (keyStarts.length > 0) i = skipWsBytes(b, i + 1); // past ","
    const keyEnd = skipStringBytes(b, i);
    const key = decodeKeyBytes(b, i, keyEnd);
    const colon = skipWsBytes(b, keyEnd);
    const valueStart = skipWsBytes(b, colon + 1);
    const end = skipValueBytes(b, valueStart);
    if (keys.has(key)) canonical = false;
    if (isArrayIndexKey(key)) {
      const k = Number(key);
      const lastInt = intKeys.at(-1);
      if (intKeys.length !== keyStarts.length || (lastInt !== undefined && lastInt >= k)) canonical = false;
      else intKeys.push(k);
    }
    keys.set(key, keyStarts.length);
    keyStarts.push(i);
    valueStarts.push(valueStart);
    valueEnds.push(end);
    i = skipWsBytes(b, end);
  }
  return {
    keys,
    keyStart: Int32Array.from(keyStarts),
    valueStart: Int32Array.from(valueStarts),
    valueEnd: Int32Array.from(valueEnds),
    intCount: intKeys.length,
    intKeys: Float64Array.from(intKeys),
    canonical,
  };
}
