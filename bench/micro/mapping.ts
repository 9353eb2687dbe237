/**
 * Micro-benchmark of the mutation path (src/mapping): condition evaluation (sift, as compiled by
 * src/mapping/condition.ts, against a hand-written JS function doing the same test: the floor any
 * evaluator of our own could reach), selectRules on a ~10-rule mapping, and the render of a 512 KiB
 * content with a small patch: splice (render-cache miss, offsets already known), the first miss on a
 * revision (offsets found), the naive parse-apply-stringify, and a render-cache hit.
 */
import { LRUCache } from 'lru-cache';
import { userMod, userUid } from '../../src/identity.js';
import { compileCondition, type Predicate } from '../../src/mapping/condition.js';
import { compileMapping, prepareDoc, renderSelection, selectRules, type Selection } from '../../src/mapping/index.js';
import { applyPatchToValue } from '../../src/mapping/patch.js';
import type { MappingProblem } from '../../src/mapping/problems.js';

export interface Row {
  name: string;
  opsPerSec: number;
  nsPerOp: number;
}

let sink = 0;

function measure(name: string, fn: (i: number) => number, minMs: number): Row {
  const run = (ms: number, batch: number): { ops: number; ns: number } => {
    const start = process.hrtime.bigint();
    const limit = BigInt(ms) * 1_000_000n;
    let ops = 0;
    let now = start;
    while (now - start < limit) {
      for (let i = 0; i < batch; i++) sink = (sink + fn(ops + i)) | 0;
      ops += batch;
      now = process.hrtime.bigint();
    }
    return { ops, ns: Number(now - start) };
  };
  // Slow operations (a whole-document render) are timed in small batches so minMs still bounds the run.
  const probe = run(20, 1);
  const batch = probe.ns / probe.ops > 100_000 ? 1 : 256;
  run(Math.min(200, minMs), batch);
  const { ops, ns } = run(minMs, batch);
  const nsPerOp = ns / ops;
  return { name, opsPerSec: Math.round(1e9 / nsPerOp), nsPerOp: Math.round(nsPerOp * 10) / 10 };
}

const COUNTRIES = ['DE', 'FR', 'US', 'BR', 'JP', 'IN', 'GB', 'ES'];

function attributes(n: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let s = 7;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out.push(
      JSON.parse(
        JSON.stringify({
          country: COUNTRIES[s % COUNTRIES.length],
          level: s % 60,
          tags: s % 3 === 0 ? ['vip', 'new'] : ['new'],
          device: { os: s % 2 === 0 ? 'ios' : 'android', app: `1.${s % 12}.0` },
        }),
      ) as Record<string, unknown>,
    );
  }
  return out;
}

export const BENCH_MAPPING = {
  rules: [
    { segment: 'eu', when: { country: { $in: ['DE', 'FR', 'ES', 'GB'] } }, patch: { shop: { currency: 'EUR' } } },
    { segment: 'vip', when: { tags: 'vip' }, patch: { shop: { discount: 15 } }, info: 'vip' },
    { segment: 'high-level', when: { level: { $gte: 40 } }, patch: [{ op: 'replace', path: '/difficulty', value: 'hard' }] },
    { segment: 'ios', when: { 'device.os': 'ios' }, patch: { ads: { network: 'ios-net' } } },
    { segment: 'new-app', when: { 'device.app': { $vgte: '1.8.0' } }, patch: { features: { newShop: true } } },
    { segment: 'banner-ab', variants: [
      { name: 'A', mod: [0, 499], patch: { shop: { banner: 'A' } } },
      { name: 'B', mod: [500, 999], patch: { shop: { banner: 'B' } } },
    ] },
    { segment: 'price-ab', when: { country: 'US' }, variants: [
      { name: 'low', mod: [0, 332], patch: { shop: { price: 0.99 } } },
      { name: 'mid', mod: [333, 665], patch: { shop: { price: 1.99 } } },
      { name: 'high', mod: [666, 999], patch: { shop: { price: 2.99 } } },
    ] },
    { segment: 'jp', when: { country: 'JP', level: { $lt: 10 } }, patch: { tutorial: { extended: true } } },
    { segment: 'android-old', when: { $and: [{ 'device.os': 'android' }, { 'device.app': { $vlt: '1.3.0' } }] }, patch: { ads: { enabled: false } } },
    { segment: 'br', when: { country: 'BR' }, appVersion: '>=1.0.0', patch: { shop: { currency: 'BRL' } } },
  ],
};

/** A config document of about `bytes` with the members the benchmark mapping patches. */
export function benchContent(bytes: number): string {
  const doc: Record<string, unknown> = {
    shop: { currency: 'USD', discount: 0, banner: 'default', price: 1.49 },
    difficulty: 'normal',
    ads: { enabled: true, network: 'default' },
    features: { newShop: false },
    tutorial: { extended: false },
  };
  const levels: unknown[] = [];
  doc.levels = levels;
  for (let i = 0; JSON.stringify(doc).length < bytes; i++) {
    levels.push({ id: i, name: `Level ${i}`, enemies: [i % 7, i % 11, i % 13], reward: { gold: i * 10, gems: i % 5 } });
  }
  return JSON.stringify(doc);
}

export function runMappingMicro(minMs = 1000): Row[] {
  const ps = attributes(1024);
  const mask = 1023;
  const problems: MappingProblem[] = [];
  const sift = compileCondition({ country: { $in: ['DE', 'FR'] }, level: { $gte: 10 }, tags: 'vip' }, 'when', 0, problems) as Predicate;
  if (problems.length > 0) throw new Error(problems[0].reason);
  const hand = (p: Record<string, unknown>): boolean => {
    const c = p.country;
    const l = p.level;
    const t = p.tags;
    return (c === 'DE' || c === 'FR') && typeof l === 'number' && l >= 10 && (t === 'vip' || (Array.isArray(t) && t.includes('vip')));
  };
  for (const p of ps) if (sift(p) !== hand(p)) throw new Error('sift and the hand-written condition disagree');

  const mapping = compileMapping(BENCH_MAPPING);
  const mods = ps.map((_p, i) => userMod(userUid(`user-${i}`)));
  const small = prepareDoc(benchContent(2 * 1024));

  const bigText = benchContent(512 * 1024);
  const big = prepareDoc(bigText);
  const bigMapping = compileMapping({ rules: [{ segment: 's', patch: { shop: { banner: 'summer', discount: 20 } } }] });
  const bigSelection: Selection = selectRules(bigMapping, big, {}, '', 0);
  renderSelection(big, bigMapping, bigSelection); // offsets of the patched containers found once
  const naivePatch = bigSelection.patches[0];
  const cache = new LRUCache<string, SharedArrayBuffer>({ max: 1000 });
  const bytes = Buffer.from(renderSelection(big, bigMapping, bigSelection));
  const sab = new SharedArrayBuffer(bytes.length);
  Buffer.from(sab).set(bytes);
  cache.set('w1:1:1:' + bigSelection.key, sab);

  return [
    measure('condition: sift compiled (3 fields, $in/$gte/array)', (i) => (sift(ps[i & mask]) ? 1 : 0), minMs),
    measure('condition: hand-written JS equivalent (floor for an own evaluator)', (i) => (hand(ps[i & mask]) ? 1 : 0), minMs),
    measure('selectRules: 10 rules, 2 A/B tests (2 KiB content)', (i) => selectRules(mapping, small, ps[i & mask], '1.5.0', mods[i & mask]).key.length, minMs),
    measure('512 KiB render-cache hit (LRU get)', (i) => cache.get('w1:1:1:' + bigSelection.key)!.byteLength + i, minMs),
    measure('512 KiB miss: splice small patch (string)', () => renderSelection(big, bigMapping, bigSelection).length, minMs),
    measure('512 KiB miss: splice + UTF-8 encode (bytes for the head)', () => Buffer.byteLength(renderSelection(big, bigMapping, bigSelection)), minMs),
    measure('512 KiB miss, first on the revision (parse + offsets + splice)', () => {
      const fresh = prepareDoc(bigText);
      return renderSelection(fresh, bigMapping, selectRules(bigMapping, fresh, {}, '', 0)).length;
    }, minMs),
    measure('512 KiB naive: JSON.parse + apply + JSON.stringify', () => JSON.stringify(applyPatchToValue(JSON.parse(bigText), naivePatch, null)).length, minMs),
  ];
}
