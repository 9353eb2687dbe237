import { describe, expect, it } from 'vitest';
import type { CompiledMapping } from '../../../../src/mapping/rules/compiled.js';
import { EMPTY_COMBINATION, EMPTY_SELECTION, type Combination } from '../../../../src/mapping/rules/combination.js';
import { combinationForKey, evaluateMapping, partialSelection } from '../../../../src/mapping/rules/evaluate.js';
import { compileMapping } from '../../../../src/mapping/index.js';
import { NO_VERSION, comparableVersion, type ComparableVersion } from '../../../../src/shared/app-version.js';

// A patch rule with a condition, an A/B test restricted by condition and app version, a JSON Patch
// rule, and an A/B test with a gap in its mod ranges.
const MAPPING = {
  rules: [
    { segment: 'de', when: { country: 'DE' }, patch: { shop: { currency: 'EUR' } } },
    {
      segment: 'price-test',
      when: { level: { $gte: 10 } },
      appVersion: '>=2.0.0',
      info: 'rule',
      variants: [
        { name: 'low', mod: [0, 332], patch: { shop: { price: 1 } } },
        { name: 'mid', mod: [333, 665], patch: { shop: { price: 2 } }, info: 'variant' },
        { name: 'high', mod: [666, 999], patch: { shop: { price: 3 } } },
      ],
    },
    { segment: 'payer', when: { spend: { $gt: 0 } }, patch: [{ op: 'replace', path: '/ads', value: false }] },
    {
      segment: 'gap',
      variants: [
        { name: 'A', mod: [0, 99], patch: { banner: 'A' } },
        { name: 'B', mod: [900, 999], patch: { banner: 'B' } },
      ],
    },
  ],
};

const V2 = comparableVersion('2.0.0');
const V1 = comparableVersion('1.9.9');

function compiled(): CompiledMapping {
  return compileMapping(MAPPING);
}

/** What the combination says in plain terms: its key, seg and which rule/variant each patch is. */
function describeCombination(mapping: CompiledMapping, c: Combination): { key: string; seg: unknown; patches: string[] } {
  const names: string[] = c.patches.map((p) => {
    for (const rule of mapping.rules) {
      if (rule.patch === p) return rule.segment;
      const variant = rule.variants.find((v) => v.patch === p);
      if (variant !== undefined) return `${rule.segment}/${variant.name}`;
    }
    return '?';
  });
  return { key: c.key, seg: JSON.parse(c.whole.seg) as unknown, patches: names };
}

describe('evaluateMapping', () => {
  it('no rule applies: the one empty combination, whose selection is seg []', () => {
    const m = compiled();
    const c = evaluateMapping(m, { country: 'FR' }, NO_VERSION, 500);
    expect(c).toBe(EMPTY_COMBINATION);
    expect(c.key).toBe('');
    expect(c.patches).toEqual([]);
    expect(c.whole).toBe(EMPTY_SELECTION);
    expect(EMPTY_SELECTION.seg).toBe('[]');
    expect(combinationForKey(m, '')).toBe(EMPTY_COMBINATION);
  });

  it('applied rules in rule order: patches and seg entries line up with the key', () => {
    const m = compiled();
    const c = evaluateMapping(m, { spend: 5, level: 12, country: 'DE' }, V2, 950);
    expect(describeCombination(m, c)).toEqual({
      key: '0.-1;1.2;2.-1;3.1;',
      seg: [
        { n: 'de', v: null },
        { n: 'price-test', v: 'high', i: 'rule' },
        { n: 'payer', v: null },
        { n: 'gap', v: 'B' },
      ],
      patches: ['de', 'price-test/high', 'payer', 'gap/B'],
    });
    expect(c.segEntries.map((e) => JSON.parse(e) as unknown)).toEqual(JSON.parse(c.whole.seg));
    expect(c.whole).toEqual({ key: c.key, seg: c.whole.seg, patches: c.patches, applied: null });
  });

  it('a variant applies only when its mod range, the app version range and the condition all hold', () => {
    const m = compiled();
    const applies = (p: Record<string, unknown>, version: ComparableVersion, mod: number): boolean => /(^|;)1\./.test(evaluateMapping(m, p, version, mod).key);
    expect(applies({ level: 10 }, V2, 0)).toBe(true);
    expect(applies({ level: 9 }, V2, 0)).toBe(false);
    expect(applies({ level: 10 }, V1, 0)).toBe(false);
    expect(applies({ level: 10 }, NO_VERSION, 0)).toBe(false);
    expect(applies({}, V2, 0)).toBe(false);
    // Variant boundaries, with the variant's own info overriding the rule's.
    const seg = (mod: number): unknown => JSON.parse(evaluateMapping(m, { level: 10 }, V2, mod).whole.seg);
    expect(seg(332)).toContainEqual({ n: 'price-test', v: 'low', i: 'rule' });
    expect(seg(333)).toContainEqual({ n: 'price-test', v: 'mid', i: 'variant' });
    expect(seg(665)).toContainEqual({ n: 'price-test', v: 'mid', i: 'variant' });
    expect(seg(666)).toContainEqual({ n: 'price-test', v: 'high', i: 'rule' });
  });

  it('a mod in the gap between variant ranges leaves that rule out, the others still apply', () => {
    const m = compiled();
    expect(evaluateMapping(m, { country: 'DE' }, NO_VERSION, 99).key).toBe('0.-1;3.0;');
    expect(evaluateMapping(m, { country: 'DE' }, NO_VERSION, 100).key).toBe('0.-1;');
    expect(evaluateMapping(m, { country: 'DE' }, NO_VERSION, 899).key).toBe('0.-1;');
    expect(evaluateMapping(m, { country: 'DE' }, NO_VERSION, 900).key).toBe('0.-1;3.1;');
    expect(evaluateMapping(m, {}, NO_VERSION, 500)).toBe(EMPTY_COMBINATION);
  });

  it('equal outcomes are one interned combination whatever else the request holds; different outcomes differ', () => {
    const m = compiled();
    const a = evaluateMapping(m, { country: 'DE', level: 10, name: 'x' }, V2, 10);
    const b = evaluateMapping(m, { country: 'DE', level: 99, other: [1] }, comparableVersion('7.0.0'), 99);
    expect(b).toBe(a);
    const seen = new Map<string, Combination>();
    for (const country of ['DE', 'FR']) {
      for (const level of [1, 10]) {
        for (const spend of [0, 1]) {
          for (const mod of [0, 400, 700, 950]) {
            const c = evaluateMapping(m, { country, level, spend }, V2, mod);
            const known = seen.get(c.key);
            if (known === undefined) seen.set(c.key, c);
            else expect(c).toBe(known);
          }
        }
      }
    }
    // de (2) x payer (2) x the (price variant, gap variant) pairs the mods reach: level 1 gives
    // (none, A), (none, none), (none, B); level 10 gives (low, A), (mid, none), (high, none), (high, B).
    // Every distinct outcome has its own key.
    const keys = [...seen.keys()];
    expect(new Set(keys.map((k) => JSON.stringify(describeCombination(m, seen.get(k)!)))).size).toBe(keys.length);
    expect(keys.length).toBe(2 * 2 * 7);
  });

  it('a shorter path after a longer one (the scratch path is reused) gets its own combination', () => {
    const m = compiled();
    const long = evaluateMapping(m, { country: 'DE', spend: 1 }, NO_VERSION, 0);
    expect(long.key).toBe('0.-1;2.-1;3.0;');
    // A prefix of the interned path: the trie node exists but holds no combination of its own.
    const prefix = evaluateMapping(m, { country: 'DE', spend: 1 }, NO_VERSION, 500);
    expect(prefix.key).toBe('0.-1;2.-1;');
    expect(prefix.patches).toHaveLength(2);
    const first = evaluateMapping(m, { country: 'DE' }, NO_VERSION, 500);
    expect(first.key).toBe('0.-1;');
    expect(evaluateMapping(m, { country: 'DE', spend: 1 }, NO_VERSION, 0)).toBe(long);
    expect(evaluateMapping(m, { country: 'DE', spend: 1 }, NO_VERSION, 500)).toBe(prefix);
  });

  it('keys are stable across separate compilations: the key a front end sends names the same patches in a worker', () => {
    const front = compiled();
    const worker = compiled();
    const inputs: [Record<string, unknown>, ComparableVersion, number][] = [
      [{ country: 'DE' }, NO_VERSION, 0],
      [{ level: 50, spend: 3 }, V2, 333],
      [{ country: 'DE', level: 50, spend: 3 }, V2, 999],
    ];
    for (const [p, vKey, mod] of inputs) {
      const sent = evaluateMapping(front, p, vKey, mod);
      const built = combinationForKey(worker, sent.key);
      expect(built).not.toBe(sent);
      expect(describeCombination(worker, built)).toEqual(describeCombination(front, sent));
      expect(built.segEntries).toEqual(sent.segEntries);
      expect(built.mayFail).toBe(sent.mayFail);
      // Built once from the key, then reached again by evaluation in that compilation too.
      expect(combinationForKey(worker, sent.key)).toBe(built);
      expect(evaluateMapping(worker, p, vKey, mod)).toBe(built);
    }
  });

  it('mayFail is set exactly when a JSON Patch is among the patches (merge patches always apply)', () => {
    const m = compiled();
    expect(evaluateMapping(m, { country: 'DE', level: 10 }, V2, 0).mayFail).toBe(false);
    expect(evaluateMapping(m, { spend: 1 }, NO_VERSION, 500).mayFail).toBe(true);
    expect(evaluateMapping(m, { country: 'DE', spend: 1 }, NO_VERSION, 0).mayFail).toBe(true);
    expect(EMPTY_COMBINATION.mayFail).toBe(false);
  });
});

describe('partialSelection', () => {
  const m = compiled();
  const c = evaluateMapping(m, { country: 'DE', level: 10, spend: 1 }, V2, 950);

  it('every patch applies: the combination\'s whole selection itself', () => {
    expect(partialSelection(c, Uint8Array.of(1, 1, 1, 1))).toBe(c.whole);
  });

  it('none applies: the empty selection (base content, seg [])', () => {
    expect(partialSelection(c, Uint8Array.of(0, 0, 0, 0))).toBe(EMPTY_SELECTION);
  });

  it('some apply: the seg of those only, the flags and all patches kept for the renderer', () => {
    const applied = Uint8Array.of(1, 0, 0, 1);
    const s = partialSelection(c, applied);
    expect(s.key).toBe(c.key);
    expect(JSON.parse(s.seg)).toEqual([
      { n: 'de', v: null },
      { n: 'gap', v: 'B' },
    ]);
    expect(s.patches).toBe(c.patches);
    expect(s.applied).toBe(applied);
    expect(JSON.parse(partialSelection(c, Uint8Array.of(0, 1, 1, 0)).seg)).toEqual([
      { n: 'price-test', v: 'high', i: 'rule' },
      { n: 'payer', v: null },
    ]);
  });
});
