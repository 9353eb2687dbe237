/**
 * Micro-benchmark of the mutation path (src/mapping): condition evaluation (the engine's compiled
 * evaluator, src/mapping/condition/{compile,match}.ts, against sift compiling the same condition, which is what the
 * engine used before, and against a hand-written JS function doing the same test: the floor any
 * evaluator could reach), rule selection (evaluateMapping + selectCombination) on a ~10-rule mapping
 * with either evaluator, and the render of
 * a 512 KiB content with a small patch: splice (render-cache miss, offsets already known), the first
 * miss on a revision (offsets found), the naive parse-apply-stringify, and a render-cache hit.
 * runRegexMicro: one `$regex` test on typical short patterns and strings, V8's RegExp (what the
 * evaluator ran before) against re2js through src/mapping/condition/regex.ts, and a condition using it.
 */
import { LRUCache } from 'lru-cache';
import semver from 'semver';
import { siftPredicate } from '../reference/sift.js';
import { userMod, userUid } from '../../src/shared/identity.js';
import type { CompiledMapping, RuleProgram } from '../../src/mapping/rules/compiled.js';
import { CombinationIndex } from '../../src/mapping/rules/interning.js';
import { compileCondition, type Predicate } from '../../src/mapping/condition/validate.js';
import { generatedPredicate } from '../../src/mapping/condition/emit.js';
import {
  compileMapping,
  ownedText,
  prepareDoc,
  renderSelection,
  evaluateMapping,
  interpretRules,
  renderSelectionInto,
  selectCombination,
  type Selection,
} from '../../src/mapping/index.js';
import { compileVersionRange, versionInRange } from '../../src/mapping/rules/version-range.js';
import { NO_VERSION, comparableVersion, versionKeyOf } from '../../src/shared/app-version.js';
import { applyPatchToValue } from '../../src/mapping/patch/patch.js';
import { renderPatched } from '../../src/mapping/render/fallback/copy-on-write.js';
import { largeDoc, largeMapping } from '../fixtures/generate.js';
import type { MappingProblem } from '../../src/mapping/problems.js';
import { compileRegex, regexMatches, type CompiledRegex } from '../../src/mapping/condition/regex.js';
import { readMember, readSiteOf } from '../../src/mapping/condition/member-read.js';
import { measure, measureWithBytes, type Row } from './measure.js';


/** The attribute names the bench mapping's conditions read, in rule order. */
const READ_NAMES = ['country', 'spend', 'spend', 'level', 'platform', 'tags', 'level', 'platform'];

/** One keyed read for every name: megamorphic once it has seen two names. */
function readAtOneSite(o: Record<string, unknown>, name: string): unknown {
  return o[name];
}

/** The rules' reads of one p through one keyed site [before] or per-name sites (member-read.ts) [after]: how many were found. */
function memberReads(p: Record<string, unknown>, sites: Int32Array | null): number {
  let found = 0;
  for (let k = 0; k < READ_NAMES.length; k++) {
    const v = sites === null ? readAtOneSite(p, READ_NAMES[k]!) : readMember(p, READ_NAMES[k]!, sites[k]!);
    if (v !== undefined) found++;
  }
  return found;
}

/** The same compiled mapping with every condition evaluated by sift instead (the "before"). */
function withSiftPredicates(mapping: CompiledMapping, raw: { rules: { when?: unknown }[] }): CompiledMapping {
  const rules = mapping.rules.map((rule) => {
    const when = raw.rules[rule.index]!.when;
    return { ...rule, predicate: rule.predicate === null ? null : Object.assign(siftPredicate(when), { root: rule.predicate.root }) };
  });
  const program: RuleProgram = (p, vKey, mod, out) => interpretRules(rules, p, vKey, mod, out);
  return { ...mapping, rules, combinations: new CombinationIndex(), program };
}

function compileOwn(when: unknown): Predicate {
  const problems: MappingProblem[] = [];
  const predicate = compileCondition(when, 'when', 0, problems);
  if (problems.length > 0 || predicate === null) throw new Error(problems[0]?.reason ?? 'condition matches everyone');
  return predicate;
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
  const V150 = comparableVersion('1.5.0');
  // A caret range and a two-set range: what appVersion rules look like.
  const rangeText = '^1.4.0 || >=2.1.0 <3.0.0';
  const semverRange = new semver.Range(rangeText);
  const keyRange = compileVersionRange(semverRange);
  const versionTexts = ['1.3.9', '1.5.0', '2.4.1', '3.0.0'];
  const semvers = versionTexts.map((v) => new semver.SemVer(v));
  const vKeys = versionTexts.map(versionKeyOf);
  for (let i = 0; i < versionTexts.length; i++) {
    if (semverRange.test(semvers[i]!) !== versionInRange(keyRange, vKeys[i]!)) throw new Error(`range test disagrees on ${versionTexts[i]}`);
  }
  const simpleWhen = { country: { $in: ['DE', 'FR'] }, level: { $gte: 10 }, tags: 'vip' };
  const siftSimple = siftPredicate(simpleWhen);
  const ownSimple = compileOwn(simpleWhen);
  const hand = (p: Record<string, unknown>): boolean => {
    const c = p.country;
    const l = p.level;
    const t = p.tags;
    return (c === 'DE' || c === 'FR') && typeof l === 'number' && l >= 10 && (t === 'vip' || (Array.isArray(t) && t.includes('vip')));
  };
  // Nested path, version operator, $or and $elemMatch: the shapes where sift's generic walk costs most.
  const richWhen = {
    'device.os': 'ios',
    $or: [{ 'device.app': { $vgte: '1.8.0' } }, { level: { $not: { $lt: 30 } } }],
    tags: { $elemMatch: { $in: ['vip', 'gold'] } },
  };
  const siftRich = siftPredicate(richWhen);
  const ownRich = compileOwn(richWhen);
  for (const p of ps) {
    if (siftSimple(p) !== hand(p) || ownSimple(p) !== hand(p)) throw new Error('sift, the compiled predicate and the hand-written condition disagree');
    if (siftRich(p) !== ownRich(p)) throw new Error('sift and the compiled predicate disagree');
  }

  const mapping = compileMapping(BENCH_MAPPING);
  const siftMapping = withSiftPredicates(mapping, BENCH_MAPPING);
  const interpretedMapping = compileMapping(BENCH_MAPPING);
  interpretedMapping.program = (p, vKey, mod, out) => interpretRules(interpretedMapping.rules, p, vKey, mod, out);
  const genSimple = generatedPredicate(ownSimple.root)!;
  const genRich = generatedPredicate(ownRich.root)!;
  const mods = ps.map((_p, i) => userMod(userUid(`user-${i}`)));
  const small = prepareDoc(benchContent(2 * 1024));

  const bigText = benchContent(512 * 1024);
  const big = prepareDoc(bigText);
  const bigMapping = compileMapping({ rules: [{ segment: 's', patch: { shop: { banner: 'summer', discount: 20 } } }] });
  const bigSelection: Selection = selectCombination(big, evaluateMapping(bigMapping, {}, NO_VERSION, 0));
  renderSelection(big, bigSelection); // offsets of the patched containers found once
  const naivePatch = bigSelection.patches[0]!;
  const cache = new LRUCache<string, SharedArrayBuffer>({ max: 1000 });
  const bytes = Buffer.from(renderSelection(big, bigSelection));
  const sab = new SharedArrayBuffer(bytes.length);
  Buffer.from(sab).set(bytes);
  cache.set('w1:1:1:' + bigSelection.key, sab);

  const readSites = Int32Array.from(READ_NAMES, readSiteOf);
  return [
    measure('member reads: 8 of p through one keyed site [before]', (i) => memberReads(ps[i & mask]!, null), minMs),
    measure('member reads: the same through per-name sites (member-read.ts) [after]', (i) => memberReads(ps[i & mask]!, readSites), minMs),
    measure('condition: sift (3 fields, $in/$gte/array) [before]', (i) => (siftSimple(ps[i & mask]) ? 1 : 0), minMs),
    measure('condition: compiled predicate (same 3 fields) [after]', (i) => (ownSimple(ps[i & mask]!) ? 1 : 0), minMs),
    measure('condition: generated code (same 3 fields, emit.ts)', (i) => (genSimple(ps[i & mask]!) ? 1 : 0), minMs),
    measure('condition: hand-written JS equivalent (floor)', (i) => (hand(ps[i & mask]!) ? 1 : 0), minMs),
    measure('condition: sift (nested path, $or/$vgte/$not, $elemMatch) [before]', (i) => (siftRich(ps[i & mask]) ? 1 : 0), minMs),
    measure('condition: compiled predicate (same) [after]', (i) => (ownRich(ps[i & mask]!) ? 1 : 0), minMs),
    measure('condition: generated code (same, emit.ts)', (i) => (genRich(ps[i & mask]!) ? 1 : 0), minMs),
    // As the front end calls it: the request's version key was made once, when its body was checked.
    measure('rule selection: 10 rules, 2 A/B tests, sift conditions [before]', (i) => selectCombination(small, evaluateMapping(siftMapping, ps[i & mask]!, V150, mods[i & mask]!)).key.length, minMs),
    measure('rule selection: 10 rules, 2 A/B tests, compiled predicates, interpreted', (i) => selectCombination(small, evaluateMapping(interpretedMapping, ps[i & mask]!, V150, mods[i & mask]!)).key.length, minMs),
    measure('rule selection: 10 rules, 2 A/B tests, rule program (program.ts) [after]', (i) => selectCombination(small, evaluateMapping(mapping, ps[i & mask]!, V150, mods[i & mask]!)).key.length, minMs),
    measure('appVersion range test: semver Range#test on a memoized SemVer [before]', (i) => (semverRange.test(semvers[i & 3]!) ? 1 : 0), minMs),
    measure('appVersion range test: version-key comparisons (version-range.ts) [after]', (i) => (versionInRange(keyRange, vKeys[i & 3]!) ? 1 : 0), minMs),
    measure('512 KiB render-cache hit (LRU get)', (i) => cache.get('w1:1:1:' + bigSelection.key)!.byteLength + i, minMs),
    measure('512 KiB miss: splice small patch (string)', () => renderSelection(big, bigSelection).length, minMs),
    measure('512 KiB miss: splice + UTF-8 encode (bytes for the head)', () => Buffer.byteLength(renderSelection(big, bigSelection)), minMs),
    measure('512 KiB miss, first on the revision (parse + offsets + splice)', () => {
      const fresh = prepareDoc(bigText);
      return renderSelection(fresh, selectCombination(fresh, evaluateMapping(bigMapping, {}, NO_VERSION, 0))).length;
    }, minMs),
    measure('512 KiB naive: JSON.parse + apply + JSON.stringify', () => JSON.stringify(applyPatchToValue(JSON.parse(bigText), naivePatch, null)).length, minMs),
    ...largeFixtureRows(minMs),
    ...runRegexMicro(minMs),
  ];
}

/** Typical `$regex` conditions: an e-mail domain, a case-insensitive prefix, a device family, a digit. */
const REGEX_CASES: readonly { label: string; pattern: string; options: string; inputs: readonly string[] }[] = [
  { label: '@example\\.com$', pattern: '@example\\.com$', options: '', inputs: ['a@example.com', 'bob@example.org', 'carol.smith@example.com', 'x@y.z'] },
  { label: '^bob, i', pattern: '^bob', options: 'i', inputs: ['BOB', 'bobby', 'alice', 'Robert'] },
  { label: '^(iPhone|iPad)1[2-5]', pattern: '^(iPhone|iPad)1[2-5]', options: '', inputs: ['iPhone13,2', 'iPad14,1', 'SM-G991B', 'Pixel 7'] },
  { label: '\\d', pattern: '\\d', options: '', inputs: ['x', 'y2', 'abc', 'DE'] },
];

function compiledRegex(pattern: string, options: string): CompiledRegex {
  const r = compileRegex(pattern, options === '' ? undefined : options);
  if (r.regex === null) throw new Error(`${pattern}: ${r.error}`);
  return r.regex;
}

export function runRegexMicro(minMs = 1000): Row[] {
  const rows: Row[] = [];
  for (const c of REGEX_CASES) {
    const before = new RegExp(c.pattern, c.options);
    const after = compiledRegex(c.pattern, c.options);
    const inputs = c.inputs;
    for (const s of inputs) if (before.test(s) !== regexMatches(after, s)) throw new Error(`RegExp and re2js disagree: ${c.pattern} on ${s}`);
    rows.push(measureWithBytes(`$regex ${c.label}: RegExp#test [before]`, (i) => (before.test(inputs[i & 3]!) ? 1 : 0), minMs));
    rows.push(measureWithBytes(`$regex ${c.label}: re2js via regexMatches [after]`, (i) => (regexMatches(after, inputs[i & 3]!) ? 1 : 0), minMs));
  }
  const when = { 'device.model': { $regex: '^(iPhone|iPad)1[2-5]' }, country: { $in: ['DE', 'FR', 'US'] } };
  const predicate = compileOwn(when);
  const models = ['iPhone13,2', 'iPad14,1', 'SM-G991B', 'Pixel 7'];
  const ps = attributes(1024).map((p, i) => ({ ...p, device: { ...(p.device as object), model: models[i & 3] } }));
  rows.push(measureWithBytes('condition: $regex + $in, compiled predicate (re2js)', (i) => (predicate(ps[i & 1023]!) ? 1 : 0), minMs));
  return rows;
}

/**
 * The bench suite's scenario-7 content (bench/fixtures: 512 KiB, a `levels` object of ~3,000
 * members) and mapping (flag rules merge-patching single levels): a render-cache miss through the
 * copy-on-write renderer plus the UTF-8 copy into shared memory (the worker's previous miss path)
 * against the byte splicer writing the head straight into shared memory, and rule selection on that
 * mapping. The misses cycle through 64 flag combinations whose objects are already indexed (the
 * steady state of a revision); the allocation row is the floor of any miss: a fresh 512 KiB
 * SharedArrayBuffer written once.
 */
function largeFixtureRows(minMs: number): Row[] {
  const text = JSON.stringify(largeDoc());
  const mapping = compileMapping(largeMapping());
  const doc = prepareDoc(text);
  const flagSets: Record<string, unknown>[] = [];
  for (let i = 0; i < 1024; i++) {
    const flags: string[] = [];
    for (let k = 0; k < 14; k++) if (((Math.imul(i, 2654435761) >>> k) & 1) === 1) flags.push(`f${k}`);
    flagSets.push({ tier: i % 2 === 0 ? 'gold' : 'silver', flags });
  }
  const selections: Selection[] = flagSets.slice(0, 64).map((p, i) => selectCombination(doc, evaluateMapping(mapping, p, NO_VERSION, (i * 37) % 1000)));
  const prefix = '{"data":';
  const suffix = ',"hash":"00112233445566778899aabbccddeeff","meta":{"uid":';
  for (const s of selections) {
    const before = Buffer.from(ownedText(prefix + renderPatched(doc, s.patches, s.applied, null) + suffix));
    if (!before.equals(Buffer.from(renderSelectionInto(doc, s, prefix, suffix)))) throw new Error('the byte splicer and the copy-on-write renderer disagree');
  }
  const source = Buffer.from(renderSelectionInto(doc, selections[0]!, prefix, suffix));
  return [
    measure('fixture 512 KiB miss: copy-on-write render + encode [before]', (i) => {
      const s = selections[i & 63]!;
      return ownedText(prefix + renderPatched(doc, s.patches, s.applied, null) + suffix).byteLength;
    }, minMs),
    measure('fixture 512 KiB miss: renderSelectionInto (byte splice) [after]', (i) => renderSelectionInto(doc, selections[i & 63]!, prefix, suffix).byteLength, minMs),
    measure('fixture 512 KiB miss: renderSelection (string, serialized path)', (i) => renderSelection(doc, selections[i & 63]!).length, minMs),
    measure('fixture 512 KiB: new SharedArrayBuffer + one copy (why rendered heads are not shared memory)', () => {
      const sab = new SharedArrayBuffer(source.length);
      source.copy(Buffer.from(sab));
      return sab.byteLength;
    }, minMs),
    measure('fixture rule selection: 16 rules, 1,024 flag combinations', (i) => selectCombination(doc, evaluateMapping(mapping, flagSets[i & 1023]!, NO_VERSION, i % 1000)).key.length, minMs),
  ];
}
