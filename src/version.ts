/**
 * App versions X.Y.Z: the one definition used by the request body's `v`, stored `minAppVersion`,
 * revision choice and the `$veq`..`$vlte` condition operators.
 *
 * Each part is a non-negative integer without leading zeros (so npm-semver ranges read it the same
 * way) and at most 9 digits (so a version packs exactly into one double, see versionNumber).
 */
import type { AppVersion } from './store/types.js';

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
 * X.Y.Z → one number that orders like the version: parts weighted by 1e9 (each part < 1e9), exact
 * in a double for majors below ~9,007,199. Lets the hot path compare versions with one `<=`.
 */
export function versionNumber(major: number, minor: number, patch: number): number {
  return (major * 1e9 + minor) * 1e9 + patch;
}

/** versionNumber of a text already known to be valid (stored minAppVersion). */
export function versionNumberOf(text: string): number {
  const v = parseAppVersion(text);
  if (v === null) throw new Error(`not an app version: ${text}`);
  return versionNumber(v[0], v[1], v[2]);
}
