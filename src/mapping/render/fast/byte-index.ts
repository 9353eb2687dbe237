/**
 * The base revision as UTF-8 bytes, with object members found lazily.
 *
 * The byte renderer (byte-splice.ts) never parses the whole content: it scans only the objects on the
 * patched paths, once per revision, and keeps their member offsets here keyed by the object's start
 * offset. JSON's structural characters are ASCII and never occur inside a multi-byte UTF-8 sequence,
 * so a byte scan finds the same structure as a character scan; every offset here is a byte offset.
 * The cost is one scan of each object a render descends into (the first time only) and one Int32
 * triple per member; keys are decoded only for those objects.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

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
  const rootStart = skipWs(bytes, 0);
  return { bytes, rootStart, rootEnd: skipValue(bytes, rootStart), objects: new Map() };
}

export function isObjectAt(base: ByteBase, start: number): boolean {
  return start >= 0 && base.bytes[start] === OPEN_OBJECT;
}

export function isArrayAt(base: ByteBase, start: number): boolean {
  return start >= 0 && base.bytes[start] === OPEN_ARRAY;
}

/** The end offset of the value starting at `start`. */
export function valueEndAt(base: ByteBase, start: number): number {
  return skipValue(base.bytes, start);
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
  let i = skipWs(b, start + 1);
  while (b[i] !== CLOSE_OBJECT) {
    if (keyStarts.length > 0) i = skipWs(b, i + 1); // past ","
    const keyEnd = skipString(b, i);
    const key = decodeKey(b, i, keyEnd);
    const colon = skipWs(b, keyEnd);
    const valueStart = skipWs(b, colon + 1);
    const end = skipValue(b, valueStart);
    if (keys.has(key)) canonical = false;
    if (isArrayIndexKey(key)) {
      const k = Number(key);
      if (intKeys.length !== keyStarts.length || (intKeys.length > 0 && intKeys[intKeys.length - 1] >= k)) canonical = false;
      else intKeys.push(k);
    }
    keys.set(key, keyStarts.length);
    keyStarts.push(i);
    valueStarts.push(valueStart);
    valueEnds.push(end);
    i = skipWs(b, end);
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

function decodeKey(b: Buffer, start: number, end: number): string {
  // Keys without escapes are the common case: the bytes between the quotes are the key.
  for (let i = start + 1; i < end - 1; i++) {
    if (b[i] === BACKSLASH) return JSON.parse(b.toString('utf8', start, end)) as string;
  }
  return b.toString('utf8', start + 1, end - 1);
}

function skipWs(b: Buffer, i: number): number {
  let c = b[i];
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++i];
  return i;
}

/** `i` at the opening quote; returns the offset after the closing quote. */
function skipString(b: Buffer, i: number): number {
  i++;
  for (;;) {
    const c = b[i];
    if (c === QUOTE) return i + 1;
    i += c === BACKSLASH ? 2 : 1;
  }
}

/** `i` at the first byte of a value; returns the offset after it. */
function skipValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (;;) {
      const d = b[i];
      if (d === QUOTE) {
        i = skipString(b, i);
        continue;
      }
      if (d === OPEN_OBJECT || d === OPEN_ARRAY) depth++;
      else if (d === CLOSE_OBJECT || d === CLOSE_ARRAY) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
  }
  const n = b.length;
  let d = c;
  while (i < n && d !== COMMA && d !== CLOSE_OBJECT && d !== CLOSE_ARRAY && d !== COLON && d !== 0x20 && d !== 0x0a && d !== 0x0d && d !== 0x09) d = b[++i];
  return i;
}
