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
 * runtime answers before flattening it, so the call would come back on every request. `join` copies the parts into one sequential string.
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

/** versionNumber of a version with a part of 1024 or more: compared by its key. */
export const TOO_WIDE = -2;

/** ComparableVersion.num of no version (NO_VERSION): below every version, outside every range. */
export const NO_VERSION_NUM = -1;

/**
 * X.Y.Z → a small integer that orders exactly like the version: each part in 10 bits, for versions
 * whose parts are all below 1024 (nearly every app version in the field); TOO_WIDE otherwise, and
 * such a version is compared by its key (versionKey). A small integer (a V8 Smi) is compared inline
 * by optimized code, where two version keys go through V8's string comparison builtins, and it is
 * stored in an object without a box of its own, which a double would need.
 */
export function versionNumber(major: number, minor: number, patch: number): number {
  return major < 1024 && minor < 1024 && patch < 1024 ? major * 0x100000 + minor * 0x400 + patch : TOO_WIDE;
}

/**
 * A request's app version in both comparable forms, made once per version text (the front end
 * memoizes it per text): `key` (versionKey; "" for no version) and `num` (versionNumber;
 * NO_VERSION_NUM for no version, TOO_WIDE when too wide). Two versions that both have a number
 * (>= 0) compare by it, any other pair by their keys (versionAtMost).
 */
export interface ComparableVersion {
  readonly key: string;
  readonly num: number;
}

/** No version sent: below every version, and outside every appVersion range (program.ts). */
export const NO_VERSION: ComparableVersion = Object.freeze({ key: NO_VERSION_KEY, num: NO_VERSION_NUM });

/** The comparable forms of a valid X.Y.Z's parts. */
export function comparableVersionOf(major: number, minor: number, patch: number): ComparableVersion {
  return { key: versionKey(major, minor, patch), num: versionNumber(major, minor, patch) };
}

/** The comparable forms of a text already known to be valid (tests, previews); throws otherwise. */
export function comparableVersion(text: string): ComparableVersion {
  const v = parseAppVersion(text);
  if (v === null) throw new Error(`not an app version: ${text}`);
  return comparableVersionOf(v[0], v[1], v[2]);
}

/**
 * True when a stored lower bound, its key `key` and number `num` (lowerBoundOf), is at most the
 * version `v` (not NO_VERSION). HOT PATH (revision choice, every content request): one compare when
 * both have a number.
 */
export function versionAtMost(key: string, num: number, v: ComparableVersion): boolean {
  const n = v.num;
  return (num | n) >= 0 ? num <= n : key <= v.key;
}

/** No lower bound: key "" below every key, number 0 (0.0.0's) at or below every version's. */
const NO_BOUND: ComparableVersion = Object.freeze({ key: NO_VERSION_KEY, num: 0 });

/** A stored lower bound (minAppVersion, already known to be valid) in both comparable forms; null: none. */
export function lowerBoundOf(text: string | null): ComparableVersion {
  return text === null ? NO_BOUND : comparableVersion(text);
}

/** versionKey of a text already known to be valid (stored minAppVersion). */
export function versionKeyOf(text: string): string {
  const v = parseAppVersion(text);
  if (v === null) throw new Error(`not an app version: ${text}`);
  return versionKey(v[0], v[1], v[2]);
}
