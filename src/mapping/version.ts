/**
 * App versions (X.Y.Z) as used by revision choice (`minAppVersion` against the request's v) and by
 * the `$veq`..`$vlte` condition operators.
 *
 * Versions are parsed once (at directory build or mapping compile time) into a three-number tuple;
 * the per-request side parses v once and compares integers, never strings.
 */
import type { AppVersion } from '../store/types.js';

// Components are plain non-negative integers; anything else (pre-release tags, "1.2", " 1.2.3") is
// not a version. The length cap keeps every component a safe integer.
const VERSION_RE = /^(\d{1,15})\.(\d{1,15})\.(\d{1,15})$/;

/** The three components of "X.Y.Z", or null when the text is not exactly that form. */
export function parseAppVersion(text: string): AppVersion | null {
  const m = VERSION_RE.exec(text);
  if (m === null) return null;
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** Negative, zero or positive as a is older than, equal to or newer than b. */
export function compareAppVersions(a: AppVersion, b: AppVersion): number {
  if (a[0] !== b[0]) return a[0] - b[0];
  if (a[1] !== b[1]) return a[1] - b[1];
  return a[2] - b[2];
}
