/**
 * sift with the `$veq`..`$vlte` version operators: the reference evaluator of mapping conditions.
 * The engine's own compiled predicates (src/mapping/condition/predicate.ts) replaced it on the hot path; it stays
 * as the oracle of the differential test (test/unit/mapping/condition/predicate.test.ts) and as the "before" row
 * of the micro-benchmark (bench/micro/mapping.ts). It is a devDependency only.
 */
import siftModule from 'sift';
import { compareAppVersions, parseAppVersion } from '../../src/shared/app-version.js';

type SiftOperationCreator = (params: unknown, ownerQuery: unknown, options: unknown, name: string) => unknown;
interface SiftApi {
  default: (query: unknown, options?: { operations?: Record<string, SiftOperationCreator> }) => (item: unknown) => boolean;
  createEqualsOperation: (params: unknown, ownerQuery: unknown, options: unknown) => unknown;
}
// sift is CommonJS: under NodeNext the default import is its whole exports object.
const sift = siftModule as unknown as SiftApi;

const VERSION_TESTS: Record<string, (cmp: number) => boolean> = {
  $veq: (c) => c === 0,
  $vne: (c) => c !== 0,
  $vgt: (c) => c > 0,
  $vgte: (c) => c >= 0,
  $vlt: (c) => c < 0,
  $vlte: (c) => c <= 0,
};

function versionOperation(params: unknown, ownerQuery: unknown, options: unknown, name: string): unknown {
  const target = parseAppVersion(params as string);
  if (target === null) throw new Error(`${name} needs an X.Y.Z version`);
  const test = VERSION_TESTS[name]!;
  const tester = (value: unknown): boolean => {
    if (typeof value !== 'string') return false;
    const parsed = parseAppVersion(value);
    return parsed !== null && test(compareAppVersions(parsed, target));
  };
  return sift.createEqualsOperation(tester, ownerQuery, options);
}

const SIFT_OPTIONS = {
  operations: Object.fromEntries(Object.keys(VERSION_TESTS).map((name) => [name, versionOperation])),
};

/** A condition compiled by sift (with the version operators). */
export function siftPredicate(when: unknown): (p: unknown) => boolean {
  return sift.default(when, SIFT_OPTIONS);
}
