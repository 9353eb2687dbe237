/**
 * Attribute reads by name site (src/mapping/condition/member-read.ts): every name gets the same
 * answer whether it has a read site of its own or shares the generic one, and sites are handed out
 * once per name.
 */
import { describe, expect, it } from 'vitest';
import { GENERIC_SITE, READ_SITES, readMember, readSiteOf } from '../../../../src/mapping/condition/member-read.js';
import { compileCondition } from '../../../../src/mapping/condition/validate.js';
import type { MappingProblem } from '../../../../src/mapping/problems.js';

describe('member reads by name site', () => {
  it('gives a name the same site every time, and the generic one once the sites are taken', () => {
    const names = Array.from({ length: READ_SITES + 8 }, (_, i) => `site-test-attribute-${i}`);
    const sites = names.map(readSiteOf);
    expect(names.map(readSiteOf)).toEqual(sites);
    const own = sites.filter((s) => s !== GENERIC_SITE);
    expect(new Set(own).size).toBe(own.length);
    expect(sites.slice(-8)).toEqual(Array<number>(8).fill(GENERIC_SITE));
    const p: Record<string, unknown> = Object.fromEntries(names.map((n, i) => [n, i]));
    names.forEach((n, i) => expect(readMember(p, n, sites[i]!)).toBe(i));
  });

  it('evaluates conditions on more distinct attributes than there are sites, each read alike', () => {
    const count = READ_SITES * 2;
    const names = Array.from({ length: count }, (_, i) => `cond-attribute-${i}`);
    const problems: MappingProblem[] = [];
    const predicates = names.map((n, i) => compileCondition({ [n]: { $gte: i }, [`${n}.x`]: { $exists: false } }, `rules[${i}].when`, i, problems)!);
    expect(problems).toEqual([]);
    for (let i = 0; i < count; i++) {
      const name = names[i]!;
      expect(predicates[i]!({ [name]: i })).toBe(true);
      expect(predicates[i]!({ [name]: i - 1 })).toBe(false);
      expect(predicates[i]!({ other: i })).toBe(false);
      expect(predicates[i]!(JSON.parse(`{"${name}":{"x":1}}`) as Record<string, unknown>)).toBe(false);
    }
  });
});
