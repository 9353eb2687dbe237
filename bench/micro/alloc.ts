/**
 * Micro-benchmark of what the front end allocates per mapped request (time and bytes of JS heap per
 * call), the steps of a render-cache hit in src/delivery/request.ts, each against what it replaced:
 * - body text: Buffer#toString [before] vs the TextDecoder the front end uses [after];
 * - combination: the key string built rule by rule and looked up [before] vs the path lookup of
 *   src/mapping/rules/interning.ts [after];
 * - tail: a string concatenated and joined with the head into a new Buffer [before] vs the bytes
 *   written into a reused buffer by src/delivery/tail.ts [after];
 * - cache key and lookup: the key string built per request [before] vs memoized on the interned
 *   combination (frontKeyOf) [after], looked up in a Map that holds every key (a warm front cache);
 * - the whole hit path (decode, parse and validate, uid, rules, cache key, tail) as it runs now.
 *
 * Why bytes matter here: every byte is young-generation garbage; at 30-60k requests/s the main
 * thread's scavenges and, through survivors, its old generation grow with it (bench/README.md,
 * "Memory"). Bytes are measured with --expose-gc (the bench:micro script passes it).
 */
import { NO_VERSION } from '../../src/shared/app-version.js';
import { parseUserContext } from '../../src/delivery/context.js';
import { frontKey, frontKeyOf, type FrontKey } from '../../src/delivery/front-cache.js';
import { wrappedTailLength, writeWrappedTail } from '../../src/delivery/wire/tail.js';
import { wordsOf } from '../../src/shared/bytes.js';
import { userUid } from '../../src/shared/identity.js';
import type { CompiledMapping, Combination } from '../../src/mapping/index.js';
import { combinationForKey, compileMapping, evaluateMapping } from '../../src/mapping/index.js';
import { JobKind } from '../../src/pool/protocol.js';
import { readFixture } from '../fixtures/generate.js';
import { BASE_SEED, scenarioByName } from '../harness/scenarios.js';
import { measureWithBytes, type Row } from './measure.js';

/** The evaluation this replaced: the same rule checks, the key built as a string per request. */
function evaluateByKeyString(mapping: CompiledMapping, p: Record<string, unknown>, mod: number): Combination {
  let key = '';
  const rules = mapping.rules;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i]!;
    let choice = -1;
    if (rule.variantOfMod !== null) {
      choice = rule.variantOfMod[mod]!;
      if (choice < 0) continue;
    }
    // Requests here carry no v, so appVersion rules never apply (as in evaluateMapping).
    if (rule.versions !== null) continue;
    if (rule.predicate !== null && !rule.predicate(p)) continue;
    key += i + '.' + choice + ';';
  }
  return combinationForKey(mapping, key);
}

export function runAllocMicro(minMs?: number): Row[] {
  const pool = scenarioByName('mapped').pool(BASE_SEED);
  const mask = 1023;
  const bodies = pool.slice(0, mask + 1).map((e) => e.body as string);
  const chunks = bodies.map((b) => {
    const bytes = Buffer.from(b, 'utf8');
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
  });
  const contexts = bodies.map((b) => parseUserContext(b));
  const mods = contexts.map((c) => userUid(c.u) % 1000);
  const mapping = compileMapping(readFixture('mapping-10.json'));
  for (let i = 0; i <= mask; i++) {
    const c = contexts[i]!;
    if (evaluateByKeyString(mapping, c.p, mods[i]!) !== evaluateMapping(mapping, c.p, NO_VERSION, mods[i]!)) {
      throw new Error('the string-key evaluation and the path lookup disagree');
    }
  }
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const head = Buffer.alloc(1500, 0x20);
  const seg = '[{"n":"eu","v":null},{"n":"shop-refresh","v":"B","i":"long-refresh"}]';
  const segBytes = Buffer.from(seg, 'utf8');
  const scratch = Buffer.allocUnsafe(64 * 1024);
  const scratchWords = wordsOf(scratch);
  const cache = new Map<FrontKey, number>();
  const combos = contexts.map((c, i) => evaluateMapping(mapping, c.p, c.version, mods[i]!));
  // Stored under the memoized strings, as the front cache stores what a miss was requested under.
  for (const c of combos) {
    if (frontKeyOf(JobKind.Wrapped, 7, 3, c) !== frontKey(JobKind.Wrapped, 7, 3, c.key)) throw new Error('the memoized and built cache keys disagree');
    cache.set(frontKeyOf(JobKind.Wrapped, 7, 3, c), c.patches.length);
  }

  const hitPath = (i: number): number => {
    const ctx = parseUserContext(decoder.decode(chunks[i & mask]));
    const uid = userUid(ctx.u);
    const mod = uid % 1000;
    const combination = evaluateMapping(mapping, ctx.p, ctx.version, mod);
    const key = frontKeyOf(JobKind.Wrapped, 7, 3, combination);
    scratch.set(head, 0);
    return writeWrappedTail(scratch, scratchWords, head.byteLength, uid, mod, segBytes) + (cache.get(key) ?? 0);
  };

  return [
    measureWithBytes('body text: Buffer.from(chunk).toString() [before]', (i) => Buffer.from(chunks[i & mask]!).toString('utf8').length, minMs),
    measureWithBytes('body text: TextDecoder.decode(chunk) [after]', (i) => decoder.decode(chunks[i & mask]).length, minMs),
    measureWithBytes('combination: key string per request + Map lookup [before]', (i) => evaluateByKeyString(mapping, contexts[i & mask]!.p, mods[i & mask]!).patches.length, minMs),
    measureWithBytes('combination: path lookup by (rule, choice) edges [after]', (i) => evaluateMapping(mapping, contexts[i & mask]!.p, NO_VERSION, mods[i & mask]!).patches.length, minMs),
    measureWithBytes('tail: string + new Buffer(head + tail) [before]', (i) => {
      const uid = mods[i & mask]! * 4_000_000 + i;
      const tail = uid + ',"mod":' + mods[i & mask]! + ',"seg":' + seg + '}}';
      const out = Buffer.allocUnsafe(head.byteLength + Buffer.byteLength(tail, 'utf8'));
      out.set(head, 0);
      out.write(tail, head.byteLength, 'utf8');
      return out.byteLength;
    }, minMs),
    measureWithBytes('tail: bytes into a reused buffer (src/delivery/tail.ts) [after]', (i) => {
      const uid = mods[i & mask]! * 4_000_000 + i;
      const out = scratch;
      out.set(head, 0);
      const end = writeWrappedTail(out, scratchWords, head.byteLength, uid, mods[i & mask]!, segBytes);
      return end === head.byteLength + wrappedTailLength(uid, mods[i & mask]!, segBytes) ? end : -1;
    }, minMs),
    measureWithBytes('cache key: built per request + Map get [before]', (i) => cache.get(frontKey(JobKind.Wrapped, 7, 3, combos[i & mask]!.key))!, minMs),
    measureWithBytes('cache key: memoized on the combination + Map get [after]', (i) => cache.get(frontKeyOf(JobKind.Wrapped, 7, 3, combos[i & mask]!))!, minMs),
    measureWithBytes('whole hit path: decode, parse, uid, rules, cache key, tail [after]', hitPath, minMs),
  ];
}
