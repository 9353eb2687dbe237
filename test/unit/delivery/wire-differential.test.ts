/**
 * The fast wire against the plain reference writer (src/delivery/wire/reference.ts), answer by answer,
 * over a real uWS app on an ephemeral loopback port read by a raw TCP client, as test/unit/delivery/
 * reply.test.ts reads one writer.
 *
 * A seeded generator makes a few thousand answer inputs of every shape the wire writes (plain,
 * wrapped and serialized items in every coding, combines from plans and item by item, uid content,
 * 304, 204, every error, OFREP single and bulk), interleaved at random as production interleaves
 * them, so the fast writers' reused buffers, kept header blocks, in-place answers and plan layouts
 * carry state from each answer into the next. Plans and wrapped items also take bursts of answers
 * in a row with alternating heads, codings and user-part lengths: the kept answers and views are
 * where one player would get another's bytes. Each case is answered by the fast wire on one connection and by the reference on
 * another, and the two answers compared:
 * - identity bodies (and compressed bodies both sides send as given: a plain item's gzip and br
 *   forms) byte for byte, status line and header lines included;
 * - gzip members the fast wire assembles (a wrapped answer, a combine) by their decoded bodies, and
 *   every header line but Content-Length in the same order.
 * Header lines are compared in order, not as a multiset: the reference writes them in the order
 * reply.ts documents (Content-Type, Cache-Control, Vary, ETag, CORS, Content-Encoding, the extra
 * header), and the header block puts its lines in that same order; a line moved, dropped or doubled
 * by the block is a change to look at, even where a client would not mind. The Date line uWS adds is
 * left out (it may turn over between two answers).
 *
 * A failure names the seed and the case: RCD_WIRE_SEED=<seed> reruns the same inputs (a case depends
 * on the cases before it, so the whole run is the repro); RCD_WIRE_CASES sets how many.
 */
import { connect } from 'node:net';
import { brotliCompressSync, gunzipSync } from 'node:zlib';
import type { HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import uWS from 'uWebSockets.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fast from '../../../src/delivery/wire/reply.js';
import * as fastErrors from '../../../src/delivery/wire/error-answers.js';
import * as reference from '../../../src/delivery/wire/reference.js';
import { enterUwsCall, leaveUwsCall } from '../../../src/delivery/wire/reply.js';
import { CC_PRIVATE, CC_SHARED } from '../../../src/delivery/wire/header-values.js';
import { answerBuffer, answerWords } from '../../../src/delivery/wire/answer-buffer.js';
import { plannedAnswer } from '../../../src/delivery/wire/planned-answer.js';
import { combineBody, combineGzipBody } from '../../../src/delivery/wire/combine-body.js';
import { bulkAnswer, singleAnswer, type BulkItem } from '../../../src/delivery/wire/ofrep-answer.js';
import { newUidBlock, type UidBlock } from '../../../src/delivery/wire/header-block.js';
import { newRendered, type Rendered } from '../../../src/delivery/front-cache.js';
import { createPlanCache, keepPlan, type CombinePlan, type PlanItem } from '../../../src/delivery/combine-plan.js';
import { compiledCombineQuery, type CombineEntry } from '../../../src/delivery/query.js';
import { compileHttpPolicy, type HttpPolicy } from '../../../src/delivery/http-policy.js';
import type { ContentView, EnvView, RevisionView } from '../../../src/delivery/directory.js';
import { Coding } from '../../../src/delivery/etag.js';
import { JobKind } from '../../../src/pool/protocol.js';
import { buildServeConfig, resolveOptions, SERVE_OPTIONS } from '../../../src/runtime/config.js';
import { ERROR_STATUS, errorResponse, type ErrorCode } from '../../../src/runtime/errors.js';
import { compressPart, gzipMember } from '../../../src/shared/gzip.js';
import { Rng, randomString } from '../../helpers/fuzz.js';
import { listenOnLoopback, parseAnswers, type Answer } from '../../helpers/http-answers.js';

function intEnv(name: string, fallback: number): number {
  const v = process.env[name];
  return v === undefined || v === '' ? fallback : Number(v);
}

const SEED = intEnv('RCD_WIRE_SEED', 20261129);
const CASES = intEnv('RCD_WIRE_CASES', 4000);
/** Cases pipelined on one pair of connections (fewer when a case closes its connection). */
const BATCH = 48;

// ---------------------------------------------------------------------------------------------
// Inputs: policies, items, plans, users.

function policyOf(cors: string): HttpPolicy {
  return compileHttpPolicy(buildServeConfig(resolveOptions(SERVE_OPTIONS, cors === '' ? {} : { 'cors-origins': cors }, {})));
}

/** A policy and the Access-Control-Allow-Origin values its requests may carry (null: none). */
interface PolicyUse {
  readonly name: string;
  readonly policy: HttpPolicy;
  /** The OFREP routes' policy: Vary names Authorization too (ofrep/request.ts ofrepPolicy). */
  readonly ofrep: HttpPolicy;
  readonly origins: readonly (Uint8Array | null)[];
}

function policyUse(name: string, cors: string): PolicyUse {
  const policy = policyOf(cors);
  const origins: (Uint8Array | null)[] = [null];
  if (policy.corsAny !== null) origins.splice(0, 1, policy.corsAny);
  if (policy.corsOrigins !== null) origins.push(...policy.corsOrigins.values());
  return { name, policy, ofrep: { ...policy, vary: Buffer.from(policy.vary.toString('latin1') + ', authorization', 'latin1') }, origins };
}

const POLICIES: readonly PolicyUse[] = [
  policyUse('cors off', ''),
  policyUse('cors list', 'https://game.example,https://b.example:8443'),
  policyUse('cors *', '*'),
];

const CODING_NAMES = ['identity', 'gzip', 'br'];
const KIND_NAMES = ['plain', 'wrapped', 'serialized'];

const EDGE_UIDS = [0, 9, 10, 99_999_999, 100_000_000, 999_999_999, 1_000_000_000, 4_294_967_295];
const EDGE_MODS = [0, 9, 10, 99, 100, 999];

function uidOf(rng: Rng): number {
  const r = rng.next();
  if (r < 0.35) return rng.pick(EDGE_UIDS);
  if (r < 0.5) return rng.int(1000);
  if (r < 0.65) return rng.between(1000, 99_999_999);
  return rng.int(4_294_967_296);
}

function modOf(rng: Rng): number {
  return rng.chance(0.3) ? rng.pick(EDGE_MODS) : rng.int(1000);
}

/** A JSON document of about `size` bytes, with non-ASCII and escapes in it. */
function jsonOfSize(rng: Rng, size: number): string {
  const doc: Record<string, unknown> = { name: randomString(rng, 4), n: rng.int(1_000_000), ok: rng.chance(0.5) };
  if (rng.chance(0.5)) doc.list = Array.from({ length: rng.int(6) }, () => randomString(rng, 2));
  const text = JSON.stringify(doc);
  const pad = Math.max(0, size - text.length - 10);
  const unit = rng.pick(['x', 'é', '日本', 'ab"c\\']);
  doc.pad = unit.repeat(Math.ceil(pad / unit.length)).slice(0, pad);
  return JSON.stringify(doc);
}

function headSize(rng: Rng, large: boolean): number {
  if (large) return rng.pick([65_536 + 300, 70_000, 140_000]);
  const r = rng.next();
  if (r < 0.6) return rng.between(20, 400);
  if (r < 0.93) return rng.between(400, 2000);
  return rng.between(2000, 12_000);
}

/** A seg: what a wrapped item's rules selected, names and variants with non-ASCII in them; `[]` when none. */
function segOf(rng: Rng, long: boolean): string {
  if (long) return JSON.stringify([{ n: 'long-' + 'ß'.repeat(40_000), v: 'Ä' }]);
  if (rng.chance(0.25)) return '[]';
  const names = ['eu', 'ünïcode', '日本', 'vip', 'a"b', 'new\\old', 'emoji😀', 'x'];
  return JSON.stringify(Array.from({ length: rng.between(1, 4) }, () => ({ n: rng.pick(names), v: rng.chance(0.5) ? null : rng.pick(['A', 'B', 'ctrl', 'é']), i: rng.pick(['é', '1', '']) })));
}

function hashOf(rng: Rng): string {
  let h = '';
  for (let i = 0; i < 32; i++) h += '0123456789abcdef'[rng.int(16)];
  return h;
}

/** A front-cache entry, compressed as a worker would (a gzip member with its part; brotli for plain heads only). */
function entryOf(head: Buffer, seg: string, gzip: boolean, br: boolean): Rendered {
  const segBytes = seg === '' ? new Uint8Array(0) : Buffer.from(seg, 'utf8');
  const part = gzip ? compressPart(head) : null;
  return newRendered(head, segBytes, part === null ? null : gzipMember(part), part, br ? brotliCompressSync(head) : null);
}

interface PlainEntry {
  readonly entry: Rendered;
  /** Its revision hash: a plain answer's tag. */
  readonly tag: string;
  readonly large: boolean;
}

interface WrappedEntry {
  readonly entry: Rendered;
  readonly kind: JobKind;
  /** The revision hash its head carries (OFREP reads it). */
  readonly hash: string;
  /** Item tags it answers under (one entry may serve two mappings' items). */
  readonly tags: readonly string[];
  readonly large: boolean;
}

function plainEntry(rng: Rng, large: boolean): PlainEntry {
  const head = Buffer.from(jsonOfSize(rng, headSize(rng, large)), 'utf8');
  return { entry: entryOf(head, '', rng.chance(0.6), rng.chance(0.4)), tag: hashOf(rng).slice(0, rng.between(8, 32)), large };
}

function wrappedEntry(rng: Rng, kind: JobKind, large: boolean, longSeg: boolean): WrappedEntry {
  const hash = hashOf(rng);
  const data = jsonOfSize(rng, headSize(rng, large));
  const head = Buffer.from(`{"data":${kind === JobKind.Serialized ? JSON.stringify(data) : data},"hash":"${hash}","meta":{"uid":`, 'utf8');
  const prefix = kind === JobKind.Serialized ? 's' : 'w';
  const tags = Array.from({ length: rng.between(1, 3) }, (_, i) => `${prefix}${hash}.${i + 1}.${i === 0 ? '' : 'r' + rng.int(9) + ':' + rng.int(9)}`);
  // A seg over 64 KiB makes every answer of the item that large: it counts as a large entry.
  return { entry: entryOf(head, segOf(rng, longSeg), rng.chance(0.6), false), kind, hash, tags, large: large || longSeg };
}

/** What a plan reads of an environment: its identity and generation. */
const ENV: EnvView = { id: 'game', contents: new Map(), generation: 1, catalog: { body: [], bodyBytes: 0, gzip: null, gzipBytes: 0, tag: '' } };

/** Content ids: plain, non-ASCII, JSON escapes, URL syntax. */
const IDS = [
  'Shop', 'shop', 'Prices', 'é-ünï', '中文', 'emoji😀', 'a"b', 'x\\y', 'a,b', '50%', 'k y', 'tab\tid', '/path?q=1#f', 'ẞ',
  ...Array.from({ length: 56 }, (_, i) => `item-${i}`),
];

/** A combine query of 1-50 ids (duplicates in it, which the query drops) of `kind`. */
function queryOf(rng: Rng, kind: JobKind): CombineEntry[] {
  const n = rng.chance(0.6) ? rng.between(1, 10) : rng.between(11, 50);
  const ids = Array.from({ length: n }, () => rng.pick(IDS));
  const dynamic = kind === JobKind.Plain ? '' : kind === JobKind.Wrapped ? '&dynamic=true' : '&dynamic=true&responseType=serialized';
  return [...compiledCombineQuery('c=' + encodeURIComponent(JSON.stringify(ids)) + dynamic, 50).entries];
}

/** A dynamic plan's answer tag and kept header block for one combination of its mapped items (combine-plan.ts PlanTag). */
interface Combo {
  readonly tag: string;
  readonly block: UidBlock;
  /** The mapped items' entries for this combination (PlanTag.heads: one array, kept). */
  readonly heads: Rendered[];
}

interface PlanUse {
  readonly name: string;
  readonly plan: CombinePlan;
  /** The found items in answer order, mapped ones as built (for the reference's item-by-item body). */
  readonly items: readonly PlanItem[];
  readonly combos: readonly Combo[];
}

interface World {
  readonly plain: readonly PlainEntry[];
  readonly wrapped: readonly WrappedEntry[];
  readonly plans: readonly PlanUse[];
  /** Kept header blocks of uid answers outside plans, with the tag each was last used for. */
  readonly uidBlocks: readonly UidBlock[];
}

/**
 * An entry of `list`: one over 64 KiB with chance `largeChance`, else one of at most `maxBytes`
 * (the items of a combine: 50 of them make the answer).
 */
function pickEntry<T extends { readonly large: boolean; readonly entry: Rendered }>(rng: Rng, list: readonly T[], largeChance: number, maxBytes = Infinity): T {
  const wantLarge = rng.chance(largeChance);
  return rng.pick(list.filter((e) => (wantLarge ? e.large : !e.large && e.entry.head.length <= maxBytes)));
}

/** A combine's item: at most ~2.5 KB, over 64 KiB with chance `largeChance`. */
const COMBINE_ITEM_BYTES = 2500;

function wrappedOfKind(rng: Rng, world: { wrapped: readonly WrappedEntry[] }, kind: JobKind, largeChance: number, maxBytes = Infinity): WrappedEntry {
  return pickEntry(rng, world.wrapped.filter((e) => e.kind === kind), largeChance, maxBytes);
}

function buildWorld(rng: Rng): World {
  const plain = [...Array.from({ length: 30 }, () => plainEntry(rng, false)), ...Array.from({ length: 3 }, () => plainEntry(rng, true))];
  const wrapped: WrappedEntry[] = [];
  for (const kind of [JobKind.Wrapped, JobKind.Serialized]) {
    for (let i = 0; i < 24; i++) wrapped.push(wrappedEntry(rng, kind, false, false));
    wrapped.push(wrappedEntry(rng, kind, true, false), wrappedEntry(rng, kind, true, false), wrappedEntry(rng, kind, false, true));
  }
  const cache = createPlanCache(1 << 30);
  const plans: PlanUse[] = [];
  for (let p = 0; p < 16; p++) {
    const kind = p % 4 === 0 ? JobKind.Plain : p % 4 === 3 ? JobKind.Serialized : JobKind.Wrapped;
    const entries = queryOf(rng, kind);
    const items: PlanItem[] = [];
    const missing: string[] = [];
    const mappedChance = kind === JobKind.Plain ? 0 : p === 7 ? 0.3 : rng.pick([0, 0.1, 0.3, 1]);
    // Heads over 64 KiB in a few plans only (their every answer is that large): unmapped in plan 2
    // (its first item) and sometimes 4, mapped in 7.
    const largeChance = p === 4 ? 0.05 : 0;
    const largeMapped = p === 7 ? 0.3 : 0;
    for (const entry of entries) {
      if (rng.chance(0.12) && !(p === 2 && items.length === 0)) {
        missing.push(entry.id);
        continue;
      }
      const large = p === 2 && items.length === 0 ? 1 : largeChance;
      const rendered = kind === JobKind.Plain ? pickEntry(rng, plain, large, COMBINE_ITEM_BYTES).entry : wrappedOfKind(rng, { wrapped }, kind, large, COMBINE_ITEM_BYTES).entry;
      items.push({ entry, content: {} as ContentView, rev: {} as RevisionView, mapped: rng.chance(mappedChance), rendered });
    }
    const baseTag = 'c' + hashOf(rng).slice(0, 27);
    const plan = keepPlan(cache, `p${p}`, `s${p}`, ENV, kind, items, baseTag, missing.map(encodeURIComponent).join(','));
    const mapped = plan.mapped.length;
    const combos: Combo[] = [];
    if (kind !== JobKind.Plain) {
      if (mapped === 0) combos.push({ tag: plan.ownTag.tag, block: plan.ownTag.block, heads: [] });
      else {
        for (let c = 0, n = rng.between(2, 5); c < n; c++) {
          combos.push({ tag: `${baseTag}.r${c}:${rng.int(99)}`, block: newUidBlock(), heads: Array.from({ length: mapped }, () => wrappedOfKind(rng, { wrapped }, kind, largeMapped, COMBINE_ITEM_BYTES).entry) });
        }
      }
    }
    plans.push({ name: `plan ${p} (${KIND_NAMES[kind]}, ${entries.length} ids, ${items.length} found, ${mapped} mapped)`, plan, items, combos });
  }
  return { plain, wrapped, plans, uidBlocks: Array.from({ length: 4 }, () => newUidBlock()) };
}

// ---------------------------------------------------------------------------------------------
// Cases: one answer's inputs, written by the fast wire and by the reference.

type Writer = (res: HttpResponse) => void;

interface Case {
  readonly index: number;
  /** Shape and inputs, for a failure message. */
  readonly what: string;
  readonly close: boolean;
  /** Fast side: answered with uWS's own cork (enterUwsCall) or through the writers' cork slots. */
  readonly direct: boolean;
  readonly fast: Writer;
  readonly reference: Writer;
  /** A check of the reference's own consistency, '' when it holds (plans: the plan's body is its items' combine). */
  readonly check?: () => string;
}

/** The scratch array of a non-uniform planned answer's heads, one for every plan (request.ts plannedHeads). */
const plannedHeads: Rendered[] = [];

const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];
/** Error cases take the codes in turn: every one is answered in a run. */
let errorTurn = 0;

function codingOfPlain(rng: Rng, e: Rendered): Coding {
  const options = [Coding.Identity];
  if (e.gzip !== null) options.push(Coding.Gzip);
  if (e.br !== null) options.push(Coding.Br);
  return rng.pick(options);
}

function bodyOfPlain(e: Rendered, coding: Coding): Uint8Array {
  return coding === Coding.Identity ? e.head : coding === Coding.Gzip ? e.gzip! : e.br!;
}

/** A tag with the same text as `tag` as another string object, now and then (the writers compare tags by value). */
function sameTag(rng: Rng, tag: string): string {
  return rng.chance(0.3) ? tag.split('').join('') : tag;
}

function describeUser(uid: number, mod: number): string {
  return `uid ${uid} mod ${mod}`;
}

/** An answer of a plan: its heads (a combination's kept array, or the scratch array refilled) and user. */
function plannedCase(rng: Rng, world: World, use: PlanUse, uid: number, mod: number, base: Omit<Case, 'what' | 'fast' | 'reference'>, p: PolicyUse, origin: Uint8Array | null): Case {
  const plan = use.plan;
  const kind = plan.kind;
  const missingName = plan.missingHeader === '' ? '' : 'x-missing-content';
  if (kind === JobKind.Plain) {
    const viaPlanned = rng.chance(0.5);
    return {
      ...base,
      what: `${use.name}, plain${viaPlanned ? ' through plannedAnswer' : ''}`,
      fast: (res) => fast.sendContent(res, p.policy, viaPlanned ? plannedAnswer(plan, uid, mod, []) : plan.statics[plan.steps[0]!]!, Coding.Identity, plan.baseTag, CC_SHARED, missingName, plan.missingHeader, origin, base.close),
      reference: (res) => reference.sendContent(res, p.policy, reference.plainPlannedAnswer(plan, uid, mod, []), Coding.Identity, plan.baseTag, CC_SHARED, missingName, plan.missingHeader, origin, base.close),
      check: () => planConsistency(use, [], uid, mod),
    };
  }
  const uniform = use.combos.length > 0 && rng.chance(0.8);
  if (uniform) {
    const c = rng.pick(use.combos);
    return {
      ...base,
      what: `${use.name}, combination ${use.combos.indexOf(c)} (${c.heads.map((h) => h.head.length).join('/')} byte heads), ${describeUser(uid, mod)}`,
      fast: (res) => fast.sendUidContent(res, p.policy, plannedAnswer(plan, uid, mod, c.heads), c.block, c.tag, uid, CC_PRIVATE, missingName, plan.missingHeader, origin, base.close),
      reference: (res) => reference.sendUidContent(res, p.policy, reference.plainPlannedAnswer(plan, uid, mod, c.heads), c.block, c.tag, uid, CC_PRIVATE, missingName, plan.missingHeader, origin, base.close),
      check: () => planConsistency(use, c.heads, uid, mod),
    };
  }
  // Mapped items of different combinations: the heads go through the shared scratch array, the tag is built whole.
  const heads = Array.from({ length: plan.mapped.length }, () => wrappedOfKind(rng, world, kind, 0.01, COMBINE_ITEM_BYTES).entry);
  const tag = `${plan.baseTag}.m${rng.int(1000)}.${uid}`;
  const fill = (): Rendered[] => {
    plannedHeads.length = 0;
    plannedHeads.push(...heads);
    return plannedHeads;
  };
  return {
    ...base,
    what: `${use.name}, scratch heads (${heads.map((h) => h.head.length).join('/')} bytes), ${describeUser(uid, mod)}`,
    fast: (res) => fast.sendContent(res, p.policy, plannedAnswer(plan, uid, mod, fill()), Coding.Identity, tag, CC_PRIVATE, missingName, plan.missingHeader, origin, base.close),
    reference: (res) => reference.sendContent(res, p.policy, reference.plainPlannedAnswer(plan, uid, mod, heads), Coding.Identity, tag, CC_PRIVATE, missingName, plan.missingHeader, origin, base.close),
    check: () => planConsistency(use, heads, uid, mod),
  };
}

/** The reference's plan body must be the reference's item-by-item combine of the plan's items (mapped ones: `heads`). */
function planConsistency(use: PlanUse, heads: readonly Rendered[], uid: number, mod: number): string {
  let k = 0;
  const rendered = use.items.map((item) => (item.mapped ? heads[k++]! : item.rendered));
  const fromItems = reference.plainCombineBody(
    use.items.map((i) => i.entry),
    rendered,
    use.plan.kind !== JobKind.Plain,
    uid,
    mod,
  );
  const fromPlan = reference.plainPlannedAnswer(use.plan, uid, mod, heads);
  return fromItems.equals(fromPlan) ? '' : `the plan's body is not its items' combine: ${firstDifference(fromPlan, fromItems)}`;
}

/**
 * Answers of one plan or one wrapped item in a row (other answers between some of them), for a few
 * users whose parts have different lengths: the shortest and the longest among them, so that kept
 * views and layouts of one length meet answers of every other.
 */
interface Burst {
  readonly plan: PlanUse | null;
  readonly item: WrappedEntry | null;
  readonly users: readonly (readonly [number, number])[];
}

function burstOf(rng: Rng, world: World): Burst {
  const users: [number, number][] = [
    [rng.int(10), rng.int(10)],
    [rng.between(1_000_000_000, 4_294_967_295), rng.between(100, 999)],
  ];
  for (let i = 0, n = rng.between(1, 4); i < n; i++) users.push([uidOf(rng), modOf(rng)]);
  if (rng.chance(0.5)) return { plan: rng.pick(world.plans.filter((u) => u.plan.kind !== JobKind.Plain)), item: null, users };
  return { plan: null, item: pickEntry(rng, world.wrapped, 0.02), users };
}

/** A wrapped item's answer: identity or (when the item has a gzip form) gzip, under one of its item tags. */
function wrappedCase(rng: Rng, e: WrappedEntry, uid: number, mod: number, base: Omit<Case, 'what' | 'fast' | 'reference'>, p: PolicyUse, origin: Uint8Array | null): Case {
  const coding = e.entry.gzip !== null && rng.chance(0.5) ? Coding.Gzip : Coding.Identity;
  const tag = sameTag(rng, rng.pick(e.tags));
  return {
    ...base,
    what: `${KIND_NAMES[e.kind]} item (${e.entry.head.length} byte head, ${e.entry.seg.length} byte seg, ${CODING_NAMES[coding]}, tag ${tag}), ${describeUser(uid, mod)}`,
    fast: (res) => fast.sendWrapped(res, p.policy, e.entry, uid, mod, coding, tag, origin, base.close),
    reference: (res) => reference.sendWrapped(res, p.policy, e.entry, uid, mod, coding, tag, origin, base.close),
  };
}

function makeCase(rng: Rng, world: World, index: number, burst: Burst | null): Case {
  const p = rng.pick(POLICIES);
  const origin = rng.pick(p.origins);
  const base = { index, close: rng.chance(0.02), direct: rng.chance(0.5) };
  const uid = uidOf(rng);
  const mod = modOf(rng);
  const cors = origin === null ? 'no origin' : 'origin ' + Buffer.from(origin).toString('latin1');
  const where = `${p.name}, ${cors}${base.close ? ', close' : ''}${base.direct ? ', direct' : ', corked'}`;
  const withWhere = (c: Case): Case => ({ ...c, what: `${c.what} [${where}]` });
  if (burst !== null) {
    const [bUid, bMod] = rng.pick(burst.users);
    // Digits that differ from the last answer's at both ends of the user part, now and then.
    const u = (rng.chance(0.3) ? bUid ^ 1 : bUid) >>> 0;
    const m = rng.chance(0.3) ? bMod ^ 1 : bMod;
    if (burst.plan !== null) return withWhere(plannedCase(rng, world, burst.plan, u, m, base, p, origin));
    return withWhere(wrappedCase(rng, burst.item!, u, m, base, p, origin));
  }
  const r = rng.next();
  if (r < 0.12) {
    const e = pickEntry(rng, world.plain, 0.1);
    const coding = codingOfPlain(rng, e.entry);
    const tag = sameTag(rng, rng.chance(0.8) ? e.tag : e.tag + 'x');
    const [h, hv] = rng.chance(0.1) ? ['x-missing-content', 'a%2Cb'] : ['', ''];
    return withWhere({
      ...base,
      what: `plain item (${e.entry.head.length} bytes, ${CODING_NAMES[coding]}, tag ${tag})`,
      fast: (res) => fast.sendContent(res, p.policy, bodyOfPlain(e.entry, coding), coding, tag, CC_SHARED, h, hv, origin, base.close),
      reference: (res) => reference.sendContent(res, p.policy, bodyOfPlain(e.entry, coding), coding, tag, CC_SHARED, h, hv, origin, base.close),
    });
  }
  if (r < 0.3) return withWhere(wrappedCase(rng, pickEntry(rng, world.wrapped, 0.05), uid, mod, base, p, origin));
  if (r < 0.5) return withWhere(plannedCase(rng, world, rng.pick(world.plans), uid, mod, base, p, origin));
  if (r < 0.62) {
    const kind = rng.pick([JobKind.Plain, JobKind.Wrapped, JobKind.Serialized]);
    const entries = queryOf(rng, kind);
    const missingChance = rng.pick([0, 0.2, 1]);
    const rendered = entries.map(() => (rng.chance(missingChance) ? null : kind === JobKind.Plain ? pickEntry(rng, world.plain, 0.01, COMBINE_ITEM_BYTES).entry : wrappedOfKind(rng, world, kind, 0.01, COMBINE_ITEM_BYTES).entry));
    const missing = entries.filter((_, i) => rendered[i] === null).map((e) => encodeURIComponent(e.id)).join(',');
    const wrapped = kind !== JobKind.Plain;
    const gzip = rng.chance(0.5) && rendered.some((e) => e !== null && e.gzPart !== null);
    const tag = 'c' + hashOf(rng).slice(0, 27) + (wrapped ? '.' + uid : '');
    const cc = wrapped ? CC_PRIVATE : CC_SHARED;
    const coding = gzip ? Coding.Gzip : Coding.Identity;
    const h = missing === '' ? '' : 'x-missing-content';
    return withWhere({
      ...base,
      what: `combine item by item (${KIND_NAMES[kind]}, ${entries.length} ids, ${rendered.filter((e) => e === null).length} missing, ${CODING_NAMES[coding]}), ${describeUser(uid, mod)}`,
      fast: (res) => fast.sendContent(res, p.policy, (gzip ? combineGzipBody : combineBody)(entries, rendered, wrapped, uid, mod), coding, tag, cc, h, missing, origin, base.close),
      reference: (res) => reference.sendContent(res, p.policy, (gzip ? reference.plainCombineGzipBody : reference.plainCombineBody)(entries, rendered, wrapped, uid, mod), coding, tag, cc, h, missing, origin, base.close),
    });
  }
  if (r < 0.7) {
    const which = rng.int(6);
    if (which < 2) {
      const code = ERROR_CODES[errorTurn++ % ERROR_CODES.length]!;
      const err = errorResponse(code, randomString(rng, 3));
      return withWhere({ ...base, what: `error ${code}`, fast: (res) => fastErrors.sendError(res, err, base.close, origin), reference: (res) => reference.sendError(res, err, base.close, origin) });
    }
    if (which === 2) return withWhere({ ...base, what: 'overloaded', fast: (res) => fastErrors.sendOverloaded(res, base.close, origin), reference: (res) => reference.sendOverloaded(res, base.close, origin) });
    if (which === 3) return withWhere({ ...base, what: 'starting', fast: (res) => fastErrors.sendStarting(res, base.close, origin), reference: (res) => reference.sendStarting(res, base.close, origin) });
    const status = rng.pick(['200 OK', '404 Not Found', '405 Method Not Allowed', '503 Service Unavailable']);
    const body = rng.chance(0.5) ? JSON.stringify({ status: randomString(rng, 3) }) : Buffer.from(jsonOfSize(rng, rng.between(2, 3000)), 'utf8');
    const [h, hv] = rng.chance(0.5) ? [rng.pick(['allow', 'retry-after', 'x-missing-content']), rng.pick(['GET, POST', '1', 'a%2Cb'])] : ['', ''];
    const hb = h !== '' && rng.chance(0.5);
    const name = hb ? Buffer.from(h, 'latin1') : h;
    const value = hb ? Buffer.from(hv, 'latin1') : hv;
    return withWhere({
      ...base,
      what: `send ${status} (${typeof body === 'string' ? 'string' : 'bytes'} body, header ${h || 'none'})`,
      fast: (res) => fast.send(res, status, body, name, value, base.close, origin),
      reference: (res) => reference.send(res, status, body, name, value, base.close, origin),
    });
  }
  if (r < 0.78) {
    const coding = rng.pick([Coding.Identity, Coding.Gzip, Coding.Br]);
    const opaque = rng.chance(0.5) ? 'c' + hashOf(rng).slice(0, 20) + '.' + uid : hashOf(rng);
    const etag = `"${opaque}${['"', '.gz"', '.br"'][coding]!}`;
    const ofrep = rng.chance(0.2);
    const policy = ofrep ? p.ofrep : p.policy;
    const cc = ofrep || rng.chance(0.5) ? CC_PRIVATE : CC_SHARED;
    return withWhere({
      ...base,
      what: `304 ${etag}${ofrep ? ' (OFREP)' : ''}`,
      fast: (res) => fast.sendNotModified(res, policy, etag, cc, origin, base.close),
      reference: (res) => reference.sendNotModified(res, policy, etag, cc, origin, base.close),
    });
  }
  if (r < 0.82) {
    return withWhere({ ...base, what: 'preflight', fast: (res) => fast.sendPreflight(res, p.policy, origin, base.close), reference: (res) => reference.sendPreflight(res, p.policy, origin, base.close) });
  }
  if (r < 0.87) {
    const block = rng.pick(world.uidBlocks);
    const tag = rng.pick(['cA', 'cB', 'cLonger.' + 'x'.repeat(rng.int(60)), 'c' + hashOf(rng)]);
    const body = Buffer.from(jsonOfSize(rng, rng.between(2, 2000)), 'utf8');
    return withWhere({
      ...base,
      what: `uid content (tag ${tag}), ${describeUser(uid, mod)}`,
      fast: (res) => fast.sendUidContent(res, p.policy, body, block, tag, uid, CC_PRIVATE, '', '', origin, base.close),
      reference: (res) => reference.sendUidContent(res, p.policy, body, block, tag, uid, CC_PRIVATE, '', '', origin, base.close),
    });
  }
  const id = rng.pick(IDS);
  const tag = 'o' + hashOf(rng).slice(0, 20) + '.' + uid;
  if (r < 0.94) {
    const e = pickEntry(rng, world.wrapped, 0.03);
    return withWhere({
      ...base,
      what: `OFREP single (${id}, ${e.entry.head.length} byte head, seg ${Buffer.from(e.entry.seg).toString('utf8').slice(0, 60)}), ${describeUser(uid, mod)}`,
      fast: (res) => fast.sendContent(res, p.ofrep, singleAnswer(answerBuffer, answerWords, e.entry, e.hash, id, uid, mod), Coding.Identity, tag, CC_PRIVATE, '', '', origin, base.close),
      reference: (res) => reference.sendContent(res, p.ofrep, reference.plainSingleAnswer(e.entry, e.hash, id, uid, mod), Coding.Identity, tag, CC_PRIVATE, '', '', origin, base.close),
    });
  }
  // Each entry once in a list: a bulk answer lists an environment's contents, each its own revision
  // and so its own front-cache entry (ofrep-answer.ts keeps one set of parts per entry).
  const listed = new Set<Rendered>();
  const list: BulkItem[] = [];
  for (let i = 0, n = rng.int(30); i < n; i++) {
    const itemId = rng.pick(IDS);
    const e = pickEntry(rng, world.wrapped, 0.01, COMBINE_ITEM_BYTES);
    if (rng.chance(0.15) || listed.has(e.entry)) {
      list.push({ item: null, hash: '', id: itemId, failure: Buffer.from(`{"key":${JSON.stringify(itemId)},"errorCode":"FLAG_NOT_FOUND","errorDetails":"no such content"}`, 'utf8') });
      continue;
    }
    listed.add(e.entry);
    list.push({ item: e.entry, hash: e.hash, id: itemId, failure: null });
  }
  const streams = rng.chance(0.5) ? Buffer.alloc(0) : Buffer.from(`,"eventStreams":[{"type":"sse","endpoint":{"requestUri":"/api/v1/env/events?format=ofrep&token=${hashOf(rng)}"}}]`, 'latin1');
  return withWhere({
    ...base,
    what: `OFREP bulk (${list.length} flags, ${list.filter((b) => b.item === null).length} failures, streams ${streams.length > 0}), ${describeUser(uid, mod)}`,
    fast: (res) => fast.sendContent(res, p.ofrep, bulkAnswer(answerBuffer, answerWords, list, uid, mod, streams), Coding.Identity, tag, CC_PRIVATE, '', '', origin, base.close),
    reference: (res) => reference.sendContent(res, p.ofrep, reference.plainBulkAnswer(list, uid, mod, streams), Coding.Identity, tag, CC_PRIVATE, '', '', origin, base.close),
  });
}

/** Every case of a run, in the order the fast wire answers them; bursts of one plan's or item's answers among the rest. */
function makeCases(seed: number, count: number): Case[] {
  const rng = new Rng(seed);
  const world = buildWorld(rng);
  errorTurn = 0;
  const cases: Case[] = [];
  let burst: Burst | null = null;
  let burstLeft = 0;
  while (cases.length < count) {
    if (burstLeft === 0 && rng.chance(0.05)) {
      burst = burstOf(rng, world);
      burstLeft = rng.between(10, 40);
    }
    const inBurst = burstLeft > 0 && rng.chance(0.75);
    if (burstLeft > 0) burstLeft--;
    cases.push(makeCase(rng, world, cases.length, inBurst ? burst : null));
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// The server: `/f/<case>` answers with the fast wire, `/r/<case>` with the reference.

let cases: Case[] = [];
let app: TemplatedApp;
let listenSocket: us_listen_socket;
let port = 0;
/** Exceptions thrown by a writer, by case (the handler answers 500 instead). */
const thrown = new Map<string, string>();

function route(res: HttpResponse, url: string): void {
  const side = url[1];
  const c = cases[Number(url.slice(3))];
  if (c === undefined || (side !== 'f' && side !== 'r')) {
    res.writeStatus('404 Not Found').end('');
    return;
  }
  try {
    if (side === 'r') c.reference(res);
    else if (!c.direct) c.fast(res);
    else {
      enterUwsCall();
      try {
        c.fast(res);
      } finally {
        leaveUwsCall();
      }
    }
  } catch (err) {
    thrown.set(`${side}${c.index}`, err instanceof Error ? (err.stack ?? err.message) : String(err));
    res.writeStatus('500 Internal Server Error').end('thrown', c.close);
  }
}

beforeAll(async () => {
  app = uWS.App();
  app.any('/*', (res, req) => route(res, req.getUrl()));
  ({ socket: listenSocket, port } = await listenOnLoopback(app));
});

afterAll(() => {
  uWS.us_listen_socket_close(listenSocket);
});

/** Sends `paths` pipelined on a fresh connection; resolves with their answers once all are in. */
function pipelined(paths: readonly string[]): Promise<Answer[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const answers: Answer[] = [];
    // Bytes not parsed yet, and how many the answer they start needs at least (parsed once it is in).
    let chunks: Buffer[] = [];
    let size = 0;
    let needed = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`${answers.length} of ${paths.length} answers in after 20 s, first path ${paths[0]}`));
    }, 20_000);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      size += d.length;
      if (size < needed) return;
      const pending = Buffer.concat(chunks);
      const parsed = parseAnswers(pending);
      answers.push(...parsed.answers);
      const rest = pending.subarray(parsed.used);
      chunks = [rest];
      size = rest.length;
      needed = size + 1;
      const headEnd = rest.indexOf('\r\n\r\n', 0, 'latin1');
      const length = /\r\ncontent-length: *(\d+)/i.exec(rest.toString('latin1', 0, Math.max(0, headEnd)));
      if (headEnd >= 0 && length !== null) needed = headEnd + 4 + Number(length[1]);
      if (answers.length < paths.length) return;
      clearTimeout(timer);
      socket.destroy();
      resolve(answers);
    });
    socket.on('error', reject);
    socket.write(paths.map((path) => `GET ${path} HTTP/1.1\r\nHost: rcd\r\n\r\n`).join(''));
  });
}

// ---------------------------------------------------------------------------------------------
// Comparison.

/** Where two byte strings first differ, with a little of each around it. */
function firstDifference(a: Uint8Array, b: Uint8Array): string {
  const n = Math.min(a.length, b.length);
  let at = 0;
  while (at < n && a[at] === b[at]) at++;
  const around = (x: Uint8Array): string => JSON.stringify(Buffer.from(x.subarray(Math.max(0, at - 40), at + 40)).toString('latin1'));
  return `first differing byte ${at} (fast ${a.length} bytes, reference ${b.length}): fast …${around(a)}… reference …${around(b)}…`;
}

/** The head's lines but Date (and Content-Length when `lengthToo`). */
function headLines(a: Answer, lengthToo: boolean): string[] {
  return a.head.split('\r\n').filter((line) => {
    const name = line.slice(0, line.indexOf(':')).toLowerCase();
    return name !== 'date' && !(lengthToo && name === 'content-length');
  });
}

/** Whether the fast wire built this answer's gzip member itself (the reference's bytes then differ). */
function assembledGzip(f: Answer): boolean {
  return f.headers.some(([n, v]) => n === 'content-encoding' && v === 'gzip');
}

/** '' when the answers are the same (see the top of the file), else what differs: the first header line, the body. */
function compare(f: Answer, r: Answer): string {
  const decoded = assembledGzip(f);
  const fh = headLines(f, decoded);
  const rh = headLines(r, decoded);
  const problems: string[] = [];
  for (let i = 0; i < Math.max(fh.length, rh.length); i++) {
    if (fh[i] === rh[i]) continue;
    problems.push(`header line ${i} differs: fast ${JSON.stringify(fh[i])}, reference ${JSON.stringify(rh[i])}`);
    break;
  }
  if (f.body.equals(r.body)) return problems.join('; ');
  if (decoded) {
    try {
      const fb = gunzipSync(f.body);
      const rb = gunzipSync(r.body);
      if (!fb.equals(rb)) problems.push(`decoded gzip body differs: ${firstDifference(fb, rb)}`);
    } catch (err) {
      problems.push(`gzip body does not decode: ${(err as Error).message}`);
    }
  } else {
    problems.push(`body differs: ${firstDifference(f.body, r.body)}`);
  }
  return problems.join('; ');
}

/** What the run answered, by shape and by what the shapes must cover (checked at the end). */
const coverage = new Map<string, number>();

function note(what: string): void {
  coverage.set(what, (coverage.get(what) ?? 0) + 1);
}

/** A case's shape, from its description: `plan`, `send`, `304`, `error <code>`, `wrapped item`, … */
function shapeOf(what: string): string {
  if (/^plan \d+ /.test(what)) return 'plan';
  if (what.startsWith('send ')) return 'send';
  if (what.startsWith('304 ')) return '304';
  return what.split(/ \(|,| \[/)[0]!;
}

function noteCoverage(c: Case, fastAnswer: Answer): void {
  const shape = shapeOf(c.what);
  note(shape);
  if (fastAnswer.body.length > 65_536) note(`${shape} over 64 KiB`);
  const uid = /uid (\d+)/.exec(c.what);
  if (uid !== null && EDGE_UIDS.includes(Number(uid[1]))) note(`${shape} uid ${uid[1]}`);
  if (assembledGzip(fastAnswer)) note('assembled gzip');
  if (c.close) note('closing');
}

/** Runs cases [from, to) (the last one may close its connections); returns the problems found. */
async function runBatch(from: number, to: number): Promise<string[]> {
  const indexes = Array.from({ length: to - from }, (_, i) => from + i);
  const [fastAnswers, referenceAnswers] = await Promise.all([pipelined(indexes.map((i) => `/f/${i}`)), pipelined(indexes.map((i) => `/r/${i}`))]);
  const problems: string[] = [];
  fastAnswers.forEach((a, k) => noteCoverage(cases[indexes[k]!]!, a));
  for (let k = 0; k < indexes.length; k++) {
    const c = cases[indexes[k]!]!;
    const name = `seed ${SEED} case ${c.index} (${c.what})`;
    for (const side of ['f', 'r']) {
      const t = thrown.get(`${side}${c.index}`);
      if (t !== undefined) problems.push(`${name}: the ${side === 'f' ? 'fast' : 'reference'} writer threw: ${t}`);
    }
    const problem = compare(fastAnswers[k]!, referenceAnswers[k]!);
    if (problem !== '') problems.push(`${name}: ${problem}`);
    const own = c.check?.() ?? '';
    if (own !== '') problems.push(`${name}: ${own}`);
  }
  return problems;
}

describe('the fast wire answers every shape byte for byte as the plain reference does', () => {
  it(`${CASES} seeded answers (seed ${SEED}), shapes interleaved, plans and items in bursts`, async () => {
    cases = makeCases(SEED, CASES);
    const problems: string[] = [];
    let from = 0;
    while (from < cases.length && problems.length === 0) {
      let to = from;
      // A closing case ends its batch: its connections close after it.
      while (to < cases.length && to - from < BATCH && !cases[to]!.close) to++;
      if (to < cases.length && cases[to]!.close && to - from < BATCH) to++;
      problems.push(...(await runBatch(from, to)));
      from = to;
    }
    expect(problems.slice(0, 3).join('\n\n')).toBe('');
    expect(from).toBe(CASES);
    // What a run of the default size covers, whatever its seed.
    if (CASES < 4000) return;
    const missing: string[] = [];
    const need = (what: string): void => {
      if ((coverage.get(what) ?? 0) === 0) missing.push(what);
    };
    for (const code of ERROR_CODES) need(`error ${code}`);
    for (const shape of ['plain item', 'wrapped item', 'serialized item', 'plan', 'combine item by item']) need(`${shape} over 64 KiB`);
    for (const shape of ['wrapped item', 'serialized item', 'plan']) for (const uid of EDGE_UIDS) need(`${shape} uid ${uid}`);
    for (const shape of ['send', '304', 'overloaded', 'starting', 'preflight', 'uid content', 'OFREP single', 'OFREP bulk', 'assembled gzip', 'closing']) need(shape);
    expect(missing, `seed ${SEED} covered ${JSON.stringify([...coverage].sort())}`).toEqual([]);
  }, 120_000);
});

describe('the wire refuses inputs its writers would write wrong', () => {
  const world = buildWorld(new Rng(SEED));
  const wrappedPlan = world.plans.find((u) => u.plan.kind === JobKind.Wrapped)!;
  const e = world.wrapped.find((w) => !w.large)!;
  const entries = queryOf(new Rng(1), JobKind.Wrapped);
  const rendered = entries.map(() => e.entry);

  it.each([
    [-1, 5],
    [4_294_967_296, 5],
    [1.5, 5],
    [7, 1000],
    [7, -1],
  ])('uid %d, mod %d: no digits are written', (uid, mod) => {
    expect(() => plannedAnswer(wrappedPlan.plan, uid, mod, wrappedPlan.combos[0]?.heads ?? [])).toThrow(RangeError);
    expect(() => combineBody(entries, rendered, true, uid, mod)).toThrow(RangeError);
    expect(() => combineGzipBody(entries, rendered, true, uid, mod)).toThrow(RangeError);
    expect(() => singleAnswer(answerBuffer, answerWords, e.entry, e.hash, 'Shop', uid, mod)).toThrow(RangeError);
  });

  it('an OFREP bulk answer listing one entry under two ids throws instead of writing a key it did not size', () => {
    const list: BulkItem[] = [
      { item: e.entry, hash: e.hash, id: 'a', failure: null },
      { item: e.entry, hash: e.hash, id: 'longer-id', failure: null },
    ];
    expect(() => bulkAnswer(answerBuffer, answerWords, list, 1, 1, Buffer.alloc(0))).toThrow(/OFREP bulk answer of \d+ bytes, sized \d+/);
  });
});

