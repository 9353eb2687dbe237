/**
 * A rule's `appVersion` (an npm-semver range) compiled to comparisons of version keys
 * (src/shared/app-version.ts).
 *
 * Why: the front end already holds each request's version in comparable forms
 * (`UserContext.version`: a key, and a number for every version in the field), and a comparison of
 * them is one `<`. Testing a semver Range needs a parsed SemVer per version (a
 * second memo beside the key's) and walks comparator objects through semver's generic compare on
 * every request of a rule with a range. semver still parses the range (the one grammar users know); only the test is
 * replaced, and a differential test holds it to `Range#test` (test/unit/mapping/rules/version-range.test.ts).
 *
 * Exact for what requests can carry: v is X.Y.Z with parts of at most 9 digits and no prerelease or
 * build (APP_VERSION_PATTERN). For such a version semver's test is "some comparator set whose
 * comparators all hold" (the prerelease rules only restrict prerelease versions), and:
 * - a comparator on a prerelease C-pre has no X.Y.Z strictly between C-pre and C, so `< C-pre` and
 *   `<= C-pre` mean `< C`, `> C-pre` and `>= C-pre` mean `>= C`, and `= C-pre` holds for none;
 * - a comparator with a part above 9 digits equals no request version either, and its key
 *   (beyondKey) sorts between the request versions below and above it;
 * - build metadata takes no part in semver's ordering.
 */
import { SemVer, type Comparator, type Range } from './semver-classes.js';
import { TOO_WIDE, flatKey, versionKey, versionKeyPart, versionNumber } from '../../shared/app-version.js';

const enum VersionOp {
  Lt = 0,
  Le = 1,
  Gt = 2,
  Ge = 3,
  Eq = 4,
  Always = 5,
  Never = 6,
}

/** One comparator set after another: comparators [setStarts[i], setStarts[i + 1]) form set i. */
export interface VersionRange {
  readonly ops: Uint8Array;
  readonly keys: readonly string[];
  /** Each comparator's version as a number (versionNumber), TOO_WIDE where it has none: compared by key. */
  readonly nums: Int32Array;
  readonly setStarts: Int32Array;
}

const MAX_PART = 999_999_999;

export function compileVersionRange(range: Range): VersionRange {
  const ops: number[] = [];
  const keys: string[] = [];
  const nums: number[] = [];
  const setStarts: number[] = [];
  for (const set of range.set) {
    setStarts.push(ops.length);
    for (const comparator of set) {
      const [op, key, num] = compileComparator(comparator);
      ops.push(op);
      keys.push(key);
      nums.push(num);
    }
  }
  setStarts.push(ops.length);
  return { ops: Uint8Array.from(ops), keys, nums: Int32Array.from(nums), setStarts: Int32Array.from(setStarts) };
}

function compileComparator(comparator: Comparator): [VersionOp, string, number] {
  // semver's ANY comparator (`*`, `x`, ""): its `semver` is a symbol, not a SemVer.
  if (!(comparator.semver instanceof SemVer)) return [VersionOp.Always, '', TOO_WIDE];
  const c = comparator.semver;
  const below = comparator.operator === '<' || comparator.operator === '<=';
  const above = comparator.operator === '>' || comparator.operator === '>=';
  const beyond = beyondKey(c.major, c.minor, c.patch);
  if (beyond !== '' || c.prerelease.length > 0) {
    // No request version equals C, so only "below" and "at or above" remain.
    const key = beyond !== '' ? beyond : versionKey(c.major, c.minor, c.patch);
    const num = beyond !== '' ? TOO_WIDE : versionNumber(c.major, c.minor, c.patch);
    if (below) return [VersionOp.Lt, key, num];
    if (above) return [VersionOp.Ge, key, num];
    return [VersionOp.Never, '', TOO_WIDE];
  }
  const key = versionKey(c.major, c.minor, c.patch);
  const num = versionNumber(c.major, c.minor, c.patch);
  switch (comparator.operator) {
    case '<':
      return [VersionOp.Lt, key, num];
    case '<=':
      return [VersionOp.Le, key, num];
    case '>':
      return [VersionOp.Gt, key, num];
    case '>=':
      return [VersionOp.Ge, key, num];
    default:
      return [VersionOp.Eq, key, num];
  }
}

/**
 * For a version with a part above 9 digits, a key that sorts exactly where it lies among request
 * versions: the 9-digit parts before the big one, then ':' (after every digit). E.g. 1.1000000000.0
 * gives "000000001:": above every 1.y.z, below 2.0.0. "" when every part fits.
 */
function beyondKey(major: number, minor: number, patch: number): string {
  if (major > MAX_PART) return ':';
  if (minor > MAX_PART) return flatKey([versionKeyPart(major), ':']);
  if (patch > MAX_PART) return flatKey([versionKeyPart(major), versionKeyPart(minor), ':']);
  return '';
}

/**
 * True when the version with key `vKey` (a versionKey, never NO_VERSION_KEY) satisfies the range.
 * HOT PATH: no allocation.
 */
export function versionInRange(range: VersionRange, vKey: string): boolean {
  const ops = range.ops;
  const keys = range.keys;
  const starts = range.setStarts;
  for (let s = 0; s + 1 < starts.length; s++) {
    let holds = true;
    for (let i = starts[s]!; i < starts[s + 1]! && holds; i++) holds = comparatorHolds(ops[i]!, keys[i]!, vKey);
    if (holds) return true;
  }
  return false;
}

function comparatorHolds(op: VersionOp, key: string, vKey: string): boolean {
  switch (op) {
    case VersionOp.Lt:
      return vKey < key;
    case VersionOp.Le:
      return vKey <= key;
    case VersionOp.Gt:
      return vKey > key;
    case VersionOp.Ge:
      return vKey >= key;
    case VersionOp.Eq:
      return vKey === key;
    case VersionOp.Always:
      return true;
    default:
      return false;
  }
}

/** The JavaScript operator of a comparison op (Lt..Eq). */
const OPERATOR = ['<', '<=', '>', '>=', '==='];

/**
 * versionInRange as a JavaScript expression on the ComparableVersion named `version`, for the
 * generated rule program (program.ts), sets joined by `||`. A comparator whose version has a number
 * compares the request's number with it, written in, unless the request has none (TOO_WIDE): then,
 * as a comparator without a number, the keys, the key written in through JSON.stringify (digits and
 * separators). Numbers and keys order versions alike wherever both sides have a number
 * (app-version.ts), which the differential test of the program against the interpreter holds it to.
 */
export function versionRangeSource(range: VersionRange, version: string): string {
  const sets: string[] = [];
  for (let s = 0; s + 1 < range.setStarts.length; s++) {
    const terms: string[] = [];
    for (let i = range.setStarts[s]!; i < range.setStarts[s + 1]!; i++) {
      const op = range.ops[i]! as VersionOp;
      if (op === VersionOp.Always) {
        terms.push('true');
        continue;
      }
      if (op === VersionOp.Never) {
        terms.push('false');
        continue;
      }
      const operator = OPERATOR[op]!;
      const byKey = `${version}.key ${operator} ${JSON.stringify(range.keys[i]!)}`;
      const num = range.nums[i]!;
      if (num === TOO_WIDE) terms.push(byKey);
      else terms.push(`(${version}.num >= 0 ? ${version}.num ${operator} ${String(num)} : ${byKey})`);
    }
    sets.push(terms.length === 0 ? 'true' : `(${terms.join(' && ')})`);
  }
  return sets.length === 0 ? 'false' : `(${sets.join(' || ')})`;
}
