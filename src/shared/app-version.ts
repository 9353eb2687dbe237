/**
 * App versions X.Y.Z: the one definition used by the request body's `v`, stored `minAppVersion`,
 * revision choice and the `$veq`..`$vlte` condition operators.
 *
 * Each part is a non-negative integer without leading zeros (so npm-semver ranges read it the same
 * way) and at most 9 digits (so a version has a fixed-width comparison key, see versionKey).
 */
/** X.Y.Z as three non-negative integers. */
export type AppVersion = readonly [number, number, number];

export const APP_VERSION_PATTERN = /^(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})\.(0|[1-9]\d{0,8})$/;

/** The three components of "X.Y.Z", or null when the text is not exactly that form. */
export function parseAppVersion(text: string): AppVersion | null {
  const m = APP_VERSION_PATTERN.exec(text);
  if (m === null) return null;
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** Negative, zero or positive as a is older than, equal to or newer than b. */
export function compareAppVersions(a: AppVersion, b: AppVersion): number {
  if (a[0] !== b[0]) return a[0] - b[0];
  if (a[1] !== b[1]) return a[1] - b[1];
  return a[2] - b[2];
}

/**
 * X.Y.Z → a string that orders like the version under plain string comparison (`<=`): each part
 * zero-padded to 9 digits (the pattern's limit), 27 characters. Lets the hot path compare versions
 * with one `<=` and no allocation (the front end memoizes the key per version text).
 *
 * Not a number on purpose: packing three 9-digit parts into one double (major * 1e18 + ...) is not
 * exact (doubles near 1e18 are 128 apart), so 3.1.4 and 3.1.5 compared equal and a revision with
 * minAppVersion 3.1.5 went to 3.1.4 clients. Three parts of up to 1e9 need 90 bits.
 */
export function versionKey(major: number, minor: number, patch: number): string {
  return flatKey([versionKeyPart(major), versionKeyPart(minor), versionKeyPart(patch)]);
}

/**
 * The parts of a comparison key as one flat string. A key is compared on every request, and `+`
 * makes a string of 13 characters or more a ConsString (two pointers), which V8's `<` and `<=`
 * cannot read: they call into the runtime, and against "" (a content without minAppVersion) the
 * runtime answers before flattening it, so the call came back on every request (~90 instructions,
 * bench:cost --by-function). `join` copies the parts into one sequential string.
 */
export function flatKey(parts: readonly string[]): string {
  return parts.join('');
}

/** The key of "no version": sorts before every versionKey. */
export const NO_VERSION_KEY = '';

/** One part of a versionKey: the number zero-padded to 9 digits. */
export function versionKeyPart(n: number): string {
  const s = String(n);
  return s.length >= 9 ? s : '000000000'.slice(s.length) + s;
}

/** versionKey of a text already known to be valid (stored minAppVersion). */
export function versionKeyOf(text: string): string {
  const v = parseAppVersion(text);
  if (v === null) throw new Error(`not an app version: ${text}`);
  return versionKey(v[0], v[1], v[2]);
}
