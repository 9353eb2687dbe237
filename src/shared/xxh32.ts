/**
 * Pure-JS XXH32 over the UTF-8 bytes of a string: meta.uid's hash.
 *
 * Hand-written instead of calling xxhash-addon because user ids are short (10-40 bytes) and the
 * addon's per-call cost (a Buffer allocation plus an N-API crossing) dominates; the output is the
 * same (test/unit/shared/xxh32.test.ts checks both on vectors and generated strings). HOT PATH: one
 * call per wrapped request.
 *
 * xxh32Bytes and xxh32Ascii repeat the same rounds on purpose: one reads lanes from bytes, the other
 * from char codes, and a shared loop taking a lane reader would add a call per lane on this path.
 */

const P1 = 0x9e3779b1 | 0;
const P2 = 0x85ebca77 | 0;
const P3 = 0xc2b2ae3d | 0;
const P4 = 0x27d4eb2f | 0;
const P5 = 0x165667b1 | 0;

// One scratch buffer reused across calls: user ids are short, so encoding into it avoids a per-call allocation.
let scratch = new Uint8Array(256);

// The helpers are consts, not function declarations: a declaration's binding may be reassigned, so
// TurboFan checks it before every call it inlines; a const's is not checked. An imported function is
// checked all the same (its module cell), const or not.
const rotl = (x: number, r: number): number => {
  return (x << r) | (x >>> (32 - r));
};

const lane = (b: Uint8Array, i: number): number => {
  return (b[i] as number) | ((b[i + 1] as number) << 8) | ((b[i + 2] as number) << 16) | ((b[i + 3] as number) << 24);
};

const round = (acc: number, input: number): number => {
  return Math.imul(rotl((acc + Math.imul(input, P2)) | 0, 13), P1);
};

// The steps both entry points share (xxh32Bytes reads lanes from bytes, xxh32Ascii from char codes):
// small enough that TurboFan inlines them into either.

/** The four accumulators of the 16-byte stripes merged into one. */
const converge = (v1: number, v2: number, v3: number, v4: number): number => {
  return (rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18)) | 0;
};

/** One 4-byte lane after the stripes. */
const mixLane = (h: number, lane: number): number => {
  return Math.imul(rotl((h + Math.imul(lane, P3)) | 0, 17), P4);
};

/** One byte after the lanes. */
const mixByte = (h: number, byte: number): number => {
  return Math.imul(rotl((h + Math.imul(byte, P5)) | 0, 11), P1);
};

/** The final avalanche, as an unsigned 32-bit integer. */
const avalanche = (h: number): number => {
  h ^= h >>> 15;
  h = Math.imul(h, P2);
  h ^= h >>> 13;
  h = Math.imul(h, P3);
  h ^= h >>> 16;
  return h >>> 0;
};

/** XXH32 of bytes[0..len). Returns an unsigned 32-bit integer. */
export function xxh32Bytes(b: Uint8Array, len: number, seed: number): number {
  let i = 0;
  let h: number;
  if (len >= 16) {
    let v1 = (seed + P1 + P2) | 0;
    let v2 = (seed + P2) | 0;
    let v3 = seed | 0;
    let v4 = (seed - P1) | 0;
    const limit = len - 16;
    while (i <= limit) {
      v1 = round(v1, lane(b, i));
      v2 = round(v2, lane(b, i + 4));
      v3 = round(v3, lane(b, i + 8));
      v4 = round(v4, lane(b, i + 12));
      i += 16;
    }
    h = converge(v1, v2, v3, v4);
  } else {
    h = (seed + P5) | 0;
  }
  h = (h + len) | 0;
  while (i + 4 <= len) {
    h = mixLane(h, lane(b, i));
    i += 4;
  }
  while (i < len) {
    h = mixByte(h, b[i] as number);
    i++;
  }
  return avalanche(h);
}

/**
 * XXH32 of the UTF-8 encoding of s. An ASCII string (the common user id) is hashed from its
 * char codes directly, with no copy; any other is encoded to UTF-8 here (utf8Into) and hashed from
 * the bytes. Copying the codes into a buffer first costs every request a copy; TextEncoder#encodeInto
 * for the ids with an accent is faster only where it runs hot, and in the server few requests reach
 * it, so its JS wrapper runs unoptimized. bench/micro has both ways side by side ("uid hash").
 */
export function xxh32String(s: string, seed = 0): number {
  const ascii = xxh32Ascii(s, seed);
  if (ascii >= 0) return ascii;
  if (scratch.length < s.length * 3) scratch = new Uint8Array(s.length * 3);
  return xxh32Bytes(scratch, utf8Into(s, scratch), seed);
}

/**
 * Four char codes as a little-endian lane, as their bytes would be when all are ASCII; -1 when one
 * is not. An ASCII lane is at most 0x7f7f7f7f, so -1 is never one. Returned, not OR-ed into a module
 * variable: the variable would live in the module's context, and every lane would store it and load
 * it again.
 */
const codeLane = (s: string, i: number): number => {
  const a = s.charCodeAt(i);
  const b = s.charCodeAt(i + 1);
  const c = s.charCodeAt(i + 2);
  const d = s.charCodeAt(i + 3);
  return (a | b | c | d) < 0x80 ? a | (b << 8) | (c << 16) | (d << 24) : -1;
};

/**
 * XXH32 of s when every char code is under 0x80 (its UTF-8 bytes are its codes), else -1: a string
 * with a wider code is hashed again from its bytes.
 */
function xxh32Ascii(s: string, seed: number): number {
  const len = s.length;
  let i = 0;
  let h: number;
  if (len >= 16) {
    let v1 = (seed + P1 + P2) | 0;
    let v2 = (seed + P2) | 0;
    let v3 = seed | 0;
    let v4 = (seed - P1) | 0;
    const limit = len - 16;
    while (i <= limit) {
      const l1 = codeLane(s, i);
      const l2 = codeLane(s, i + 4);
      const l3 = codeLane(s, i + 8);
      const l4 = codeLane(s, i + 12);
      if ((l1 | l2 | l3 | l4) < 0) return -1;
      v1 = round(v1, l1);
      v2 = round(v2, l2);
      v3 = round(v3, l3);
      v4 = round(v4, l4);
      i += 16;
    }
    h = converge(v1, v2, v3, v4);
  } else {
    h = (seed + P5) | 0;
  }
  h = (h + len) | 0;
  while (i + 4 <= len) {
    const l = codeLane(s, i);
    if (l < 0) return -1;
    h = mixLane(h, l);
    i += 4;
  }
  while (i < len) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return -1;
    h = mixByte(h, c);
    i++;
  }
  return avalanche(h);
}

/**
 * Writes the UTF-8 encoding of s into out (room for 3 bytes per char code is the caller's); returns
 * the length. As TextEncoder: a lone surrogate is encoded as U+FFFD.
 */
export function utf8Into(s: string, out: Uint8Array): number {
  const n = s.length;
  let at = 0;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      out[at++] = c;
      continue;
    }
    if (c < 0x800) {
      out[at++] = 0xc0 | (c >> 6);
      out[at++] = 0x80 | (c & 0x3f);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        out[at++] = 0xf0 | (cp >> 18);
        out[at++] = 0x80 | ((cp >> 12) & 0x3f);
        out[at++] = 0x80 | ((cp >> 6) & 0x3f);
        out[at++] = 0x80 | (cp & 0x3f);
        i++;
        continue;
      }
      c = 0xfffd;
    }
    out[at++] = 0xe0 | (c >> 12);
    out[at++] = 0x80 | ((c >> 6) & 0x3f);
    out[at++] = 0x80 | (c & 0x3f);
  }
  return at;
}

/** Known answers (seed 0) from the reference implementation; "" is the one documented in docs/api.md. */
export const XXH32_VECTORS: ReadonlyArray<readonly [string, number]> = [
  ['', 46947589],
  ['a', 0x550d7456],
  ['abc', 0x32d153ff],
  ['Nobody inspects the spammish repetition', 0xe2293b2f],
];
