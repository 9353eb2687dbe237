import { describe, expect, it } from 'vitest';
import { compileMapping } from '../../../src/mapping/index.js';
import { experimentHash, experimentName, experimentNamesOf } from '../../../src/exposures/naming.js';

const variants = [
  { name: 'A', mod: [0, 499], patch: { x: 'A' } },
  { name: 'B', mod: [500, 999], patch: { x: 'B' } },
];

describe('experiment names', () => {
  it('are the explicit name when set, else ITEM:SEGMENT', () => {
    expect(experimentName('Shop', 'price-test', null)).toBe('Shop:price-test');
    expect(experimentName('Shop', 'price-test', undefined)).toBe('Shop:price-test');
    expect(experimentName('Shop', 'price-test', 'q4-pricing')).toBe('q4-pricing');
    // The content id as stored (its case kept) and the segment as written, colons included.
    expect(experimentName('DailyReward', 'eu:test', null)).toBe('DailyReward:eu:test');
  });

  it('of a mapping: one per rule with variants, "" for a patch rule, memoized for the item', () => {
    const mapping = compileMapping({
      rules: [
        { segment: 'vip', patch: { x: 'vip' } },
        { segment: 'banner', variants },
        { segment: 'price', experiment: 'pricing', variants, disabled: true },
        { segment: 'gated', patch: { x: 'g' }, mod: [0, 9] },
      ],
    });
    const names = experimentNamesOf('Shop', mapping);
    expect(names.item).toBe('Shop');
    expect(names.names).toEqual(['', 'Shop:banner', 'pricing', '']);
    expect(Array.from(names.hashes)).toEqual([0, experimentHash('Shop:banner'), experimentHash('pricing'), 0]);
    expect(mapping.experiments).toBe(names);
    expect(experimentNamesOf('Shop', mapping)).toBe(names);
  });

  it('are built again when the mapping is asked for another item', () => {
    const mapping = compileMapping({ rules: [{ segment: 'banner', variants }] });
    const shop = experimentNamesOf('Shop', mapping);
    const other = experimentNamesOf('Other', mapping);
    expect(other).not.toBe(shop);
    expect(other.names).toEqual(['Other:banner']);
    expect(experimentNamesOf('Shop', mapping).names).toEqual(['Shop:banner']);
  });

  it('hash to 32-bit integers that differ between names', () => {
    const hashes = new Set(['a', 'b', 'Shop:banner', 'Shop:price'].map(experimentHash));
    expect(hashes.size).toBe(4);
    for (const h of hashes) expect(h | 0).toBe(h);
  });
});
