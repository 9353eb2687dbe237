/**
 * The JSON scanner both renderers use to find member offsets in a base text without parsing it, in
 * its two representations side by side:
 * - over a UTF-16 string (`…Text`): the copy-on-write renderer (render/fallback) slices the base's
 *   JSON text, so its offsets are string indexes; the store's JSONC error locator uses skipWsText;
 * - over UTF-8 bytes (`…Bytes`): the byte splicer (render/fast) copies ranges of the base's bytes,
 *   so its offsets are byte offsets.
 * They are two functions each rather than one generic one because the offsets differ as soon as the
 * text holds a non-ASCII character, and because each is monomorphic on its input (charCodeAt on a
 * string, an indexed load on a Buffer), which is what keeps a scan at memory speed. The grammar is
 * the same: JSON's structural characters are ASCII and never occur inside a multi-byte UTF-8
 * sequence, so a byte scan finds the same structure as a character scan.
 *
 * Every function expects well-formed JSON (the base texts are JSON.stringify output; JSONC input is
 * only ever asked for whitespace) and reads past the end as "not whitespace" (charCodeAt: NaN;
 * a Buffer: undefined), so no scan runs off the end.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

// ---------------------------------------------------------------------------------------------
// UTF-16 strings: offsets are string indexes.
// ---------------------------------------------------------------------------------------------

/** The index of the first non-whitespace character at or after `i` (the length at the end). */
export function skipWsText(b: string, i: number): number {
  let c = b.charCodeAt(i);
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b.charCodeAt(++i);
  return i;
}

/** `i` at the opening quote; returns the index after the closing quote. */
export function skipStringText(b: string, i: number): number {
  let from = i + 1;
  for (;;) {
    // indexOf is native: long strings are skipped at memory speed.
    const q = b.indexOf('"', from);
    let k = q - 1;
    while (b.charCodeAt(k) === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** `i` at the first character of a value; returns the index after it. */
export function skipValueText(b: string, i: number): number {
  const c = b.charCodeAt(i);
  if (c === QUOTE) return skipStringText(b, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (;;) {
      const d = b.charCodeAt(i);
      if (d === QUOTE) {
        i = skipStringText(b, i);
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
  let d = b.charCodeAt(i);
  while (i < b.length && d !== COMMA && d !== CLOSE_OBJECT && d !== CLOSE_ARRAY && d !== COLON && d !== 0x20 && d !== 0x0a && d !== 0x0d && d !== 0x09) {
    d = b.charCodeAt(++i);
  }
  return i;
}

/** The key of the string token [start, end) (quotes included). */
export function decodeKeyText(b: string, start: number, end: number): string {
  // Keys without escapes are the common case: the text between the quotes is the key.
  const raw = b.slice(start + 1, end - 1);
  return raw.includes('\\') ? (JSON.parse(b.slice(start, end)) as string) : raw;
}

// ---------------------------------------------------------------------------------------------
// UTF-8 bytes: offsets are byte offsets.
// ---------------------------------------------------------------------------------------------

/** The offset of the first non-whitespace byte at or after `i` (the length at the end). */
export function skipWsBytes(b: Buffer, i: number): number {
  let c = b[i];
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++i];
  return i;
}

/** `i` at the opening quote; returns the offset after the closing quote. */
export function skipStringBytes(b: Buffer, i: number): number {
  i++;
  for (;;) {
    const c = b[i];
    if (c === QUOTE) return i + 1;
    i += c === BACKSLASH ? 2 : 1;
  }
}

/** `i` at the first byte of a value; returns the offset after it. */
export function skipValueBytes(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipStringBytes(b, i);
  if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
    let depth = 0;
    for (;;) {
      const d = b[i];
      if (d === QUOTE) {
        i = skipStringBytes(b, i);
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

/** The key of the string token [start, end) (quotes included). */
export function decodeKeyBytes(b: Buffer, start: number, end: number): string {
  // Keys without escapes are the common case: the bytes between the quotes are the key.
  for (let i = start + 1; i < end - 1; i++) {
    if (b[i] === BACKSLASH) return JSON.parse(b.toString('utf8', start, end)) as string;
  }
  return b.toString('utf8', start + 1, end - 1);
}
