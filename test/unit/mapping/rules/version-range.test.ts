import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { compileMapping, evaluateMapping } from '../../../../src/mapping/index.js';
import { compileVersionRange, versionInRange } from '../../../../src/mapping/rules/version-range.js';
import { NO_VERSION, comparableVersion, versionKeyOf } from '../../../../src/shared/app-version.js';

// Every shape of npm range an appVersion rule can hold: operators, x-ranges, caret/tilde (also on
// 0.x), hyphen ranges, unions, prerelease comparators (which the key form rewrites), build metadata
// (ignored by semver's ordering) and parts beyond the 9 digits a request version can have.
const RANGES = [
  '*',
  '',
  '1.2.3',
  '=1.2.3',
  '>1.2.3',
  '>=1.2.3',
  '<1.2.3',
  '<=1.2.3',
  '1.2.x',
  '1.x',
  '<=1.2',
  '>1',
  '^1.2.3',
  '^0.2.3',
  '^0.0.3',
  '~1.2.3',
  '~0.2',
  '1.2.3 - 2.3.4',
  '1.2 - 2',
  '>=1.0.0 <2.0.0 || >=3.1.0',
  '<1.0.0 || 2.x || >=4.0.0 <4.0.2',
  '>=1.2.3-beta.1',
  '>1.2.3-beta.1',
  '<1.2.3-beta.1',
  '<=1.2.3-beta.1',
  '=1.2.3-rc.1',
  '^1.2.3-alpha',
  '1.2.3+build.7',
  '>=1.2.3+build.7 <2.0.0+b',
  '<1000000000.0.0',
  '>=1.1000000000.0',
  '>1.2.1000000000',
  '=1.2.1000000000',
  '>=999999999.999999999.999999999',
  '<=999999999.999999999.999999998',
];

const PARTS = [0, 1, 2, 3, 4, 999_999_998, 999_999_999];

function versions(): string[] {
  const out: string[] = [];
  for (const a of PARTS) for (const b of PARTS) for (const c of PARTS) out.push(`${a}.${b}.${c}`);
  return out;
}

describe('appVersion ranges compiled to version-key comparisons', () => {
  const all = versions();

  it.each(RANGES)('agrees with semver Range#test on every version: %s', (text) => {
    const range = new semver.Range(text);
    const compiled = compileVersionRange(range);
    const disagreements = all.filter((v) => versionInRange(compiled, versionKeyOf(v)) !== range.test(v));
    expect(disagreements).toEqual([]);
  });

  it('the grid tells the ranges apart (the agreement above is not vacuous)', () => {
    const inside = (text: string): number => {
      const compiled = compileVersionRange(new semver.Range(text));
      return all.filter((v) => versionInRange(compiled, versionKeyOf(v))).length;
    };
    expect(inside('*')).toBe(all.length);
    expect(inside('=1.2.3-rc.1')).toBe(0);
    expect(inside('>=1.2.3-beta.1')).toBe(inside('>=1.2.3'));
    expect(inside('<1.2.3-beta.1')).toBe(inside('<1.2.3'));
    expect(inside('<1000000000.0.0')).toBe(all.length);
    expect(inside('>1.2.3')).toBeGreaterThan(0);
    expect(inside('>1.2.3')).toBeLessThan(all.length);
  });

  it('patch-level bounds: 3.1.4 and 3.1.5 are on either side of >=3.1.5', () => {
    const compiled = compileVersionRange(new semver.Range('>=3.1.5'));
    expect(versionInRange(compiled, versionKeyOf('3.1.4'))).toBe(false);
    expect(versionInRange(compiled, versionKeyOf('3.1.5'))).toBe(true);
    expect(versionInRange(compiled, versionKeyOf('3.1.10'))).toBe(true);
  });

  it('a rule with an appVersion applies to matching versions only, never without a version', () => {
    const mapping = compileMapping({
      rules: [{ segment: 'legacy', appVersion: '<1.5.0', patch: { old: true } }, { segment: 'all', patch: { all: true } }],
    });
    expect(evaluateMapping(mapping, {}, comparableVersion('1.4.9'), 0).key).toBe('0.-1;1.-1;');
    expect(evaluateMapping(mapping, {}, comparableVersion('1.5.0'), 0).key).toBe('1.-1;');
    expect(evaluateMapping(mapping, {}, NO_VERSION, 0).key).toBe('1.-1;');
  });
});
