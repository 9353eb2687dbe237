import { describe, expect, it } from 'vitest';
import { RcdError } from '../../../../src/runtime/errors.js';
import { compileMapping, validateMapping } from '../../../../src/mapping/index.js';
import { checkMapping } from '../../../../src/mapping/rules/compile.js';
import { openStore } from '../../../../src/store/index.js';
import { rejectsWith } from '../../store/helpers.js';

const CONTENT = { shop: { banner: 'default' } };

function variants(): unknown[] {
  return [
    { name: 'A', mod: [0, 499], patch: { shop: { banner: 'A' } } },
    { name: 'B', mod: [500, 999], patch: { shop: { banner: 'B' } } },
  ];
}

function problemsOf(mapping: unknown): { rule: number | null; path: string; reason: string }[] {
  try {
    validateMapping(mapping, CONTENT);
  } catch (err) {
    expect(err).toBeInstanceOf(RcdError);
    expect((err as RcdError).code).toBe('invalid_mapping');
    return (err as RcdError).details as { rule: number | null; path: string; reason: string }[];
  }
  return [];
}

describe('the experiment field of a rule', () => {
  it('is kept on an A/B test rule, and null without it', () => {
    const mapping = compileMapping({
      rules: [
        { segment: 'price', experiment: 'price-test.2026:q4_v-1', variants: variants() },
        { segment: 'banner', variants: variants() },
        { segment: 'patch', patch: { shop: { banner: 'p' } } },
      ],
    });
    expect(mapping.rules.map((r) => r.experiment)).toEqual(['price-test.2026:q4_v-1', null, null]);
    expect(mapping.experiments).toBeNull();
  });

  it('is allowed on a disabled A/B test rule, and 100 characters long', () => {
    const name = 'x'.repeat(100);
    expect(problemsOf({ rules: [{ segment: 's', disabled: true, experiment: name, variants: variants() }] })).toEqual([]);
  });

  it.each([
    ['on a patch rule', { rules: [{ segment: 's', experiment: 'e', patch: {} }] }, 'rules[0].experiment', 'only a rule with variants has one'],
    ['empty', { rules: [{ segment: 's', experiment: '', variants: variants() }] }, 'rules[0].experiment', 'experiment must be 1-100 characters'],
    ['too long', { rules: [{ segment: 's', experiment: 'x'.repeat(101), variants: variants() }] }, 'rules[0].experiment', 'experiment must be 1-100 characters'],
    ['not a string', { rules: [{ segment: 's', experiment: 7, variants: variants() }] }, 'rules[0].experiment', 'experiment must be 1-100 characters'],
    ['with a space', { rules: [{ segment: 's', experiment: 'a b', variants: variants() }] }, 'rules[0].experiment', 'experiment must be 1-100 characters'],
    ['with a slash', { rules: [{ segment: 's', experiment: 'a/b', variants: variants() }] }, 'rules[0].experiment', 'experiment must be 1-100 characters'],
    ['non-ASCII', { rules: [{ segment: 's', experiment: 'prüfung', variants: variants() }] }, 'rules[0].experiment', 'experiment must be 1-100 characters'],
  ])('is refused %s, with its path', (_name, mapping, path, reason) => {
    const list = problemsOf(mapping);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ rule: 0, path });
    expect(list[0]!.reason).toContain(reason);
  });

  it('may not name two rules of one mapping: the later one is refused, naming the first', () => {
    const list = problemsOf({
      rules: [
        { segment: 'a', experiment: 'same', variants: variants() },
        { segment: 'b', experiment: 'other', variants: variants() },
        { segment: 'c', experiment: 'same', variants: variants() },
      ],
    });
    expect(list).toEqual([{ rule: 2, path: 'rules[2].experiment', reason: 'experiment "same" is already the name of rule 0' }]);
  });

  it('is reported beside the rule\'s other problems (every problem at once)', () => {
    const check = checkMapping({ rules: [{ segment: '', experiment: 'a b', variants: variants() }] });
    expect(check.mapping).toBeNull();
    expect(check.problems.map((p) => p.path).sort()).toEqual(['rules[0].experiment', 'rules[0].segment']);
  });

  it('names the same experiment in two mappings without a problem (one experiment across items)', () => {
    const rule = { segment: 's', experiment: 'shared', variants: variants() };
    expect(problemsOf({ rules: [rule] })).toEqual([]);
    expect(compileMapping({ rules: [rule] }).rules[0]!.experiment).toBe('shared');
  });
});

describe('the experiment field through a store', () => {
  it('is stored with the mapping as written, and a bad one refused in a bundle with its path', async () => {
    const store = await openStore('memory:');
    try {
      const mapping = { rules: [{ segment: 'price', experiment: 'q4-pricing', variants: variants() }] };
      await store.importBundle({ environments: { live: { content: { Shop: { json: CONTENT, mapping } } } } });
      expect((await store.getContent('live', 'Shop'))?.mapping).toEqual(mapping);
      const err = await rejectsWith(
        store.importBundle({
          environments: { e: { content: { A: { json: CONTENT, mapping: { rules: [{ segment: 'ok', patch: {} }, { segment: 'p', experiment: 'x', patch: {} }] } } } } },
        }),
        'invalid_bundle',
      );
      expect(err.details).toEqual([expect.objectContaining({ path: '/environments/e/content/A/mapping/rules/1/experiment' })]);
    } finally {
      await store.close();
    }
  });
});
