/**
 * The dimensions of an exposure (--exposure-dimensions, docs/experiments.md): top-level attributes of
 * the request's `p` the operator names, kept beside each row as one JSON object text. Bounded: at most
 * MAX_DIMENSIONS names of 1-64 characters `[A-Za-z0-9_.-]`; a string value is kept up to
 * MAX_VALUE_CHARS characters (longer: cut there), numbers and booleans as JSON; other values (objects,
 * arrays, null) and missing attributes are left out. A name is an attribute's key as written, never a
 * path (`device.os` is the key "device.os").
 *
 * The text is made for a row the loop queues (never for a repeat its filter drops), and is valid for
 * a PostgreSQL jsonb column too: a string cut there never splits a surrogate pair, lone surrogates
 * and U+0000 (which jsonb refuses) become U+FFFD.
 */

export const MAX_DIMENSIONS = 8;
export const MAX_NAME_CHARS = 64;
export const MAX_VALUE_CHARS = 128;

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** The text of no dimension. */
export const NO_DIMENSIONS = '{}';

/**
 * The names of --exposure-dimensions (comma-separated; "" is none), checked; throws an Error whose
 * message says what is wrong (src/runtime/config.ts prefixes the flag).
 */
export function parseDimensionNames(raw: string): readonly string[] {
  const value = raw.trim();
  if (value === '') return Object.freeze([]);
  const names: string[] = [];
  for (const part of value.split(',')) {
    const name = part.trim();
    if (!NAME.test(name)) throw new Error(`"${name}" is not a dimension name (1-${MAX_NAME_CHARS} characters of A-Z a-z 0-9 _ . -)`);
    if (names.includes(name)) throw new Error(`"${name}" is named twice`);
    names.push(name);
  }
  if (names.length > MAX_DIMENSIONS) throw new Error(`at most ${MAX_DIMENSIONS} dimensions, got ${names.length}`);
  return Object.freeze(names);
}

/** The dimensions of `p` named by `names`, as a JSON object's text, in the order of `names`. */
export function dimensionsText(names: readonly string[], p: Record<string, unknown>): string {
  if (names.length === 0) return NO_DIMENSIONS;
  let text = '{';
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    if (!Object.hasOwn(p, name)) continue;
    const value = valueText(p[name]);
    if (value === '') continue;
    if (text.length > 1) text += ',';
    // Names are checked to need no escaping.
    text += '"' + name + '":' + value;
  }
  return text + '}';
}

/** A value's JSON text as a dimension, or "" when such a value is left out. */
function valueText(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(boundedString(value));
    case 'number':
      // JSON numbers past the double's range parse as Infinity: no JSON for it.
      return Number.isFinite(value) ? JSON.stringify(value) : '';
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      return '';
  }
}

/** At most MAX_VALUE_CHARS UTF-16 units, never half a surrogate pair; lone surrogates and U+0000 as U+FFFD. */
export function boundedString(value: string): string {
  let s = value;
  if (s.length > MAX_VALUE_CHARS) {
    let end = MAX_VALUE_CHARS;
    const last = s.charCodeAt(end - 1);
    // A high surrogate whose low half would be cut off goes with it.
    if (last >= 0xd800 && last <= 0xdbff) end--;
    s = s.slice(0, end);
  }
  if (!s.isWellFormed()) s = s.toWellFormed();
  return s.includes('\0') ? s.replaceAll('\0', '\uFFFD') : s;
}
