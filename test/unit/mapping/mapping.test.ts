import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { RcdError } from '../../../src/runtime/errors.js';
import { userMod, userUid } from '../../../src/shared/identity.js';
import { NO_VERSION, comparableVersion } from '../../../src/shared/app-version.js';
import {
  combinationForKey,
  compileMapping,
  evaluateMapping,
  prepareDoc,
  renderSelection,
  selectCombination,
  validateMapping,
} from '../../../src/mapping/index.js';

const CONTENT = '{"shop":{"banner":"default","discount":0},"ads":{"enabled":true},"list":[1,2,3]}';

function deliver(mapping: unknown, p: Record<string, unknown>, v: string, mod: number, content = CONTENT): { data: unknown; seg: unknown } {
  const compiled = compileMapping(mapping);
  const doc = prepareDoc(content);
  // As in production: the delivery thread evaluates the rules and sends the combination's key; the
  // worker turns the key back into the combination and selects what applies to the revision.
  const key = evaluateMapping(compiled, p, v === '' ? NO_VERSION : comparableVersion(v), mod).key;
  const selection = selectCombination(doc, combinationForKey(compiled, key));
  return { data: JSON.parse(renderSelection(doc, selection)) as unknown, seg: JSON.parse(selection.seg) as unknown };
}

const AB = {
  rules: [
    {
      segment: 'banner-test',
      info: 'rule info',
      variants: [
        { name: 'A', mod: [0, 499], patch: { shop: { banner: 'A' } } },
        { name: 'B', mod: [500, 999], patch: { shop: { banner: 'B' } }, info: 'variant info' },
      ],
    },
  ],
};

describe('rules', () => {
  it('no matching rule: base content and seg []', () => {
    const r = deliver({ rules: [{ segment: 'de', when: { country: 'DE' }, patch: { ads: { enabled: false } } }] }, { country: 'FR' }, '', 0);
    expect(r).toEqual({ data: JSON.parse(CONTENT) as unknown, seg: [] });
  });

  it('all matching rules apply in order, later patches win, one seg entry per rule', () => {
    const mapping = {
      rules: [
        { segment: 'everyone', patch: { shop: { discount: 5, banner: 'x' } } },
        { segment: 'skipped', when: { vip: true }, patch: { shop: { discount: 50 } } },
        { segment: 'de', when: { country: 'DE' }, patch: [{ op: 'replace', path: '/shop/discount', value: 10 }], info: 'germany' },
      ],
    };
    const r = deliver(mapping, { country: 'DE' }, '', 0);
    expect(r.data).toEqual({ shop: { banner: 'x', discount: 10 }, ads: { enabled: true }, list: [1, 2, 3] });
    expect(r.seg).toEqual([
      { n: 'everyone', v: null },
      { n: 'de', v: null, i: 'germany' },
    ]);
  });

  it.each([
    [0, 'A', 'rule info'],
    [499, 'A', 'rule info'],
    [500, 'B', 'variant info'],
    [999, 'B', 'variant info'],
  ])('variant ranges: mod %i gets %s (seg.i: %s)', (mod, variant, info) => {
    const r = deliver(AB, {}, '', mod);
    expect((r.data as { shop: { banner: string } }).shop.banner).toBe(variant);
    expect(r.seg).toEqual([{ n: 'banner-test', v: variant, i: info }]);
  });

  it('a mod outside every range means the rule does not apply', () => {
    const mapping = { rules: [{ segment: 't', variants: [{ name: 'A', mod: [100, 199], patch: { a: 1 } }] }] };
    expect(deliver(mapping, {}, '', 99).seg).toEqual([]);
    expect(deliver(mapping, {}, '', 100).seg).toEqual([{ n: 't', v: 'A' }]);
    expect(deliver(mapping, {}, '', 199).seg).toEqual([{ n: 't', v: 'A' }]);
    expect(deliver(mapping, {}, '', 200).seg).toEqual([]);
  });

  it('a disabled rule applies to nobody and keeps its place: later rules and their variants are unchanged', () => {
    const mapping = {
      rules: [
        { segment: 'killed', disabled: true, patch: { shop: { discount: 99 } } },
        AB.rules[0],
      ],
    };
    for (const mod of [0, 499, 500, 999]) {
      const r = deliver(mapping, {}, '', mod);
      expect((r.data as { shop: { discount: number } }).shop.discount).toBe(0);
      expect(r.seg).toEqual(deliver(AB, {}, '', mod).seg);
    }
    // A disabled A/B test as well; `disabled: false` is the same as absent.
    expect(deliver({ rules: [{ ...AB.rules[0], disabled: true }] }, {}, '', 0).seg).toEqual([]);
    expect(deliver({ rules: [{ ...AB.rules[0], disabled: false }] }, {}, '', 0).seg).toEqual([{ n: 'banner-test', v: 'A', i: 'rule info' }]);
    expect(compileMapping(mapping).ruleCount).toBe(1);
  });

  it('a patch rule with a mod range applies to the users whose mod is in it (a staged rollout)', () => {
    const mapping = { rules: [{ segment: 'new-curve', mod: [0, 49], patch: { ads: { enabled: false } } }] };
    expect(deliver(mapping, {}, '', 0).seg).toEqual([{ n: 'new-curve', v: null }]);
    expect(deliver(mapping, {}, '', 49).seg).toEqual([{ n: 'new-curve', v: null }]);
    expect(deliver(mapping, {}, '', 50).seg).toEqual([]);
    expect(deliver(mapping, {}, '', 999).seg).toEqual([]);
    // The range gates the rule; its condition still has to match.
    const gated = { rules: [{ segment: 'de', mod: [0, 999], when: { country: 'DE' }, patch: { ads: { enabled: false } } }] };
    expect(deliver(gated, { country: 'FR' }, '', 3).seg).toEqual([]);
    expect(deliver(gated, { country: 'DE' }, '', 3).seg).toEqual([{ n: 'de', v: null }]);
  });

  it('appVersion ranges: boundaries, and a request without v does not match', () => {
    const mapping = { rules: [{ segment: 'v1', appVersion: '>=1.2.0 <2.0.0', patch: { ads: { enabled: false } } }] };
    expect(deliver(mapping, {}, '1.2.0', 0).seg).toEqual([{ n: 'v1', v: null }]);
    expect(deliver(mapping, {}, '1.99.99', 0).seg).toEqual([{ n: 'v1', v: null }]);
    expect(deliver(mapping, {}, '1.1.9', 0).seg).toEqual([]);
    expect(deliver(mapping, {}, '2.0.0', 0).seg).toEqual([]);
    expect(deliver(mapping, {}, '', 0).seg).toEqual([]);
  });

  it('a JSON Patch that does not apply to the delivered revision is skipped and not reported', () => {
    const mapping = {
      rules: [
        { segment: 'new-field', patch: [{ op: 'replace', path: '/shop/discount', value: 30 }] },
        { segment: 'all', patch: { ads: { enabled: false } } },
      ],
    };
    const older = '{"shop":{"banner":"old"},"ads":{"enabled":true}}';
    const r = deliver(mapping, {}, '', 0, older);
    expect(r.seg).toEqual([{ n: 'all', v: null }]);
    expect(r.data).toEqual({ shop: { banner: 'old' }, ads: { enabled: false } });
    expect(deliver(mapping, {}, '', 0).seg).toHaveLength(2);
  });

  it('a repeat combination returns the same interned selection (no allocation, same cache key)', () => {
    const compiled = compileMapping(AB);
    const doc = prepareDoc(CONTENT);
    const a = selectCombination(doc, evaluateMapping(compiled, {}, NO_VERSION, 10));
    const b = selectCombination(doc, evaluateMapping(compiled, { other: 1 }, NO_VERSION, 20));
    expect(a).toBe(b);
    expect(a.key).not.toBe(selectCombination(doc, evaluateMapping(compiled, {}, NO_VERSION, 600)).key);
  });

  it('interns combinations: evaluation and the key a job carries reach the same object', () => {
    const mapping = {
      rules: [
        { segment: 'eu', when: { country: 'DE' }, patch: { shop: { discount: 5 } } },
        { segment: 'payer', when: { spend: { $gt: 10 } }, patch: { ads: { enabled: false } } },
        AB.rules[0],
      ],
    };
    const compiled = compileMapping(mapping);
    const de = evaluateMapping(compiled, { country: 'DE' }, NO_VERSION, 600);
    // Key format (Job.comboKey): "rule.choice;" per applied rule, -1 for a patch rule, k for variant k.
    expect(de.key).toBe('0.-1;2.1;');
    expect(evaluateMapping(compiled, { country: 'DE', spend: 1 }, NO_VERSION, 999)).toBe(de);
    expect(combinationForKey(compiled, '0.-1;2.1;')).toBe(de);
    expect(evaluateMapping(compiled, { spend: 20 }, NO_VERSION, 0).key).toBe('1.-1;2.0;');
    expect(evaluateMapping(compiled, { country: 'DE', spend: 20 }, NO_VERSION, 0).key).toBe('0.-1;1.-1;2.0;');
    expect(evaluateMapping(compileMapping({ rules: [mapping.rules[0]] }), {}, NO_VERSION, 0).key).toBe('');
  });

  it('stays correct past the interning bound (4,096 combinations)', () => {
    // 13 independent rules: 8,192 combinations, all seen twice.
    const rules = Array.from({ length: 13 }, (_, i) => ({ segment: `f${i}`, when: { [`f${i}`]: true }, patch: { shop: { [`f${i}`]: i } } }));
    const compiled = compileMapping({ rules });
    const attrs = (n: number): Record<string, unknown> => Object.fromEntries(rules.map((_, i) => [`f${i}`, (n & (1 << i)) !== 0]));
    const expectedKey = (n: number): string => rules.map((_, i) => ((n & (1 << i)) !== 0 ? `${i}.-1;` : '')).join('');
    const first = new Map<number, unknown>();
    for (let round = 0; round < 2; round++) {
      for (let n = 0; n < 8192; n++) {
        const c = evaluateMapping(compiled, attrs(n), NO_VERSION, 0);
        expect(c.key).toBe(expectedKey(n));
        expect(c.segEntries).toHaveLength(expectedKey(n).split(';').length - 1);
        if (round === 0) first.set(n, c);
        else if (n < 4096) expect(c).toBe(first.get(n));
      }
    }
    expect(compiled.combinations.size).toBe(4096);
  });

  it('hash stays the base revision: rendering never changes the base text', () => {
    const compiled = compileMapping(AB);
    const doc = prepareDoc(CONTENT);
    renderSelection(doc, selectCombination(doc, evaluateMapping(compiled, {}, NO_VERSION, 1)));
    expect(doc.text).toBe(CONTENT);
  });
});

describe('validation', () => {
  function problems(mapping: unknown, content?: unknown): { rule: number | null; path: string; reason: string }[] {
    try {
      if (content === undefined) compileMapping(mapping);
      else validateMapping(mapping, content);
    } catch (err) {
      expect(err).toBeInstanceOf(RcdError);
      expect((err as RcdError).code).toBe('invalid_mapping');
      return (err as RcdError).details as { rule: number | null; path: string; reason: string }[];
    }
    return [];
  }

  it.each([
    ['not an object', [], null, 'a mapping must be an object'],
    ['rules missing', {}, null, 'rules must be an array'],
    ['unknown top-level field', { rules: [], extra: 1 }, null, 'unknown field'],
    ['both patch and variants', { rules: [{ segment: 's', patch: {}, variants: [{ name: 'A', mod: [0, 1], patch: {} }] }] }, 0, 'both patch and variants'],
    ['neither patch nor variants', { rules: [{ segment: 's' }] }, 0, 'needs either patch or variants'],
    ['missing segment', { rules: [{ patch: {} }] }, 0, 'segment must be a non-empty string'],
    ['unknown rule field', { rules: [{ segment: 's', patch: {}, whne: {} }] }, 0, 'unknown field'],
    ['bad semver range', { rules: [{ segment: 's', patch: {}, appVersion: 'banana' }] }, 0, 'not a valid semver range'],
    ['unknown operator', { rules: [{ segment: 's', patch: {} }, { segment: 't', when: { a: { $foo: 1 } }, patch: {} }] }, 1, 'unknown operator $foo'],
    ['bad regex', { rules: [{ segment: 's', when: { a: { $regex: '(' } }, patch: {} }] }, 0, 'bad regular expression'],
    ['mod out of range', { rules: [{ segment: 's', variants: [{ name: 'A', mod: [0, 1000], patch: {} }] }] }, 0, 'mod must be [from, to]'],
    ['mod reversed', { rules: [{ segment: 's', variants: [{ name: 'A', mod: [5, 4], patch: {} }] }] }, 0, 'mod must be [from, to]'],
    ['mod not integers', { rules: [{ segment: 's', variants: [{ name: 'A', mod: [0.5, 4], patch: {} }] }] }, 0, 'mod must be [from, to]'],
    ['overlapping ranges', { rules: [{ segment: 's', variants: [{ name: 'A', mod: [0, 500], patch: {} }, { name: 'B', mod: [500, 999], patch: {} }] }] }, 0, 'overlaps'],
    ['duplicate variant names', { rules: [{ segment: 's', variants: [{ name: 'A', mod: [0, 1], patch: {} }, { name: 'A', mod: [2, 3], patch: {} }] }] }, 0, 'duplicate variant name'],
    ['variant without patch', { rules: [{ segment: 's', variants: [{ name: 'A', mod: [0, 1] }] }] }, 0, 'a variant needs a patch'],
    ['disabled not a boolean', { rules: [{ segment: 's', patch: {}, disabled: 'yes' }] }, 0, 'disabled must be true or false'],
    ['mod on a patch rule out of range', { rules: [{ segment: 's', patch: {}, mod: [0, 1000] }] }, 0, 'mod must be [from, to]'],
    ['mod on an A/B test rule', { rules: [{ segment: 's', mod: [0, 9], variants: [{ name: 'A', mod: [0, 1], patch: {} }] }] }, 0, 'mod on the rule is for a patch rule'],
    ['__proto__ in a patch', JSON.parse('{"rules":[{"segment":"s","patch":{"__proto__":{"admin":true}}}]}'), 0, 'not allowed'],
    ['constructor in a condition', { rules: [{ segment: 's', when: { 'constructor.prototype.admin': true }, patch: {} }] }, 0, 'not allowed'],
  ])('%s', (_name, mapping, rule, reason) => {
    const list = problems(mapping);
    expect(list.length).toBeGreaterThan(0);
    expect(list[0]?.rule).toBe(rule);
    expect(list.map((p) => p.reason).join('\n')).toContain(reason);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('patches that do not apply to the current content are refused with rule index and path', () => {
    const mapping = {
      rules: [
        { segment: 'ok', patch: [{ op: 'replace', path: '/shop/banner', value: 'x' }] },
        { segment: 't', variants: [{ name: 'A', mod: [0, 9], patch: [{ op: 'remove', path: '/nope' }] }] },
      ],
    };
    const list = problems(mapping, JSON.parse(CONTENT));
    expect(list).toEqual([{ rule: 1, path: 'rules[1].variants[0].patch', reason: 'does not apply to the current content: operation 0 (remove /nope) path does not exist' }]);
    expect(validateMapping(mapping.rules.slice(0, 1).length === 1 ? { rules: [mapping.rules[0]] } : mapping, JSON.parse(CONTENT)).ruleCount).toBe(1);
  });

  it('a disabled rule\'s patches need not apply to the content (the content may move on after a kill)', () => {
    const mapping = { rules: [{ segment: 'gone', disabled: true, patch: [{ op: 'remove', path: '/nope' }] }] };
    expect(validateMapping(mapping, JSON.parse(CONTENT)).ruleCount).toBe(0);
    expect(problems({ rules: [{ segment: 'live', patch: [{ op: 'remove', path: '/nope' }] }] }, JSON.parse(CONTENT))).toHaveLength(1);
  });

  it('the error message names the first problem and counts the others', () => {
    try {
      compileMapping({ rules: [{ segment: '' , patch: 1 }] });
      expect.unreachable();
    } catch (err) {
      expect((err as RcdError).message).toBe('rule 0 (rules[0].segment): segment must be a non-empty string (and 1 more problem)');
    }
  });
});

describe('stickiness and distribution of mod', () => {
  const ids = Array.from({ length: 200 }, (_v, i) => `player-${i * 7919}`);
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  // Run in other threads and another process from the compiled engine (the global setup builds dist/).
  const script = `
    const { compileMapping, evaluateMapping, prepareDoc, selectCombination } = await import(${JSON.stringify(root + 'dist/src/mapping/index.js')});
    const { userUid, userMod } = await import(${JSON.stringify(root + 'dist/src/shared/identity.js')});
    const { NO_VERSION } = await import(${JSON.stringify(root + 'dist/src/shared/app-version.js')});
    const ids = ${JSON.stringify(ids)};
    const m = compileMapping(${JSON.stringify(AB)});
    const doc = prepareDoc(${JSON.stringify(CONTENT)});
    const out = ids.map((u) => selectCombination(doc, evaluateMapping(m, {}, NO_VERSION, userMod(userUid(u)))).seg).join('|');
  `;

  function local(): string {
    const m = compileMapping(AB);
    const doc = prepareDoc(CONTENT);
    return ids.map((u) => selectCombination(doc, evaluateMapping(m, {}, NO_VERSION, userMod(userUid(u)))).seg).join('|');
  }

  it('the same u gets the same variant in worker threads and in a new process', async () => {
    const expected = local();
    expect(expected).toContain('"v":"A"');
    expect(expected).toContain('"v":"B"');
    const inThread = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const w = new Worker(`(async () => { ${script}; require('node:worker_threads').parentPort.postMessage(out); })()`, { eval: true });
        w.once('message', (m: string) => {
          resolve(m);
          void w.terminate();
        });
        w.once('error', reject);
      });
    const threads = await Promise.all([inThread(), inThread()]);
    expect(threads).toEqual([expected, expected]);
    const proc = execFileSync(process.execPath, ['--input-type=module', '-e', `${script}; process.stdout.write(out);`], { encoding: 'utf8' });
    expect(proc).toBe(expected);
  });

  it('mod is uniform over 100,000 generated user ids (chi-square, fixed seed)', () => {
    const counts = new Array<number>(1000).fill(0);
    let state = 12345;
    for (let i = 0; i < 100_000; i++) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      counts[userMod(userUid(`user-${state.toString(36)}-${i}`))]! += 1;
    }
    const expected = 100;
    const chi2 = counts.reduce((sum, c) => sum + ((c - expected) * (c - expected)) / expected, 0);
    // 999 degrees of freedom: the 0.999 quantile is about 1143.
    expect(chi2).toBeLessThan(1143);
    // And the A/B split of the 50/50 test above is close to even.
    const a = counts.slice(0, 500).reduce((s, c) => s + c, 0);
    expect(Math.abs(a - 50_000)).toBeLessThan(1_000);
  });
});
