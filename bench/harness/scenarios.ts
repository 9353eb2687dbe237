/**
 * The suite's scenarios: what is requested, how bodies vary per request, and how responses are checked.
 *
 * Two levels of checking, because they cost differently:
 * - `verifyBody` runs on EVERY response inside autocannon (counted as mismatches) and must stay cheap:
 *   the client is usually the bottleneck on a 2-core box, so it looks at prefixes and suffixes only;
 * - `validate` runs on a sample of requests before the load (the probe) and checks the contract in
 *   depth: uid recomputed with an independent XXH32, mod, hash of the revision chosen by v, sticky A/B
 *   variants, seg entries for rules simple enough to evaluate here, error codes.
 *
 * This module is also loaded inside autocannon worker threads (workers mode requires file paths), so it
 * must stay synchronous at load time (no top-level await) and cheap to import.
 */
import { isDeepStrictEqual } from 'node:util';
import { contentHash } from '../../src/shared/identity.js';
import {
  BENCH_KEY,
  CATALOG_ENV,
  CATALOG_KEY,
  BENCH_ENV,
  COMBINE_IDS,
  FLAG_RULES,
  LARGE_ID,
  MAPPED_ID,
  OFREP_KEY,
  SMALL_ID,
  WRONG_KEY,
  compareVersions,
  fixtureSet,
  pick,
  prng,
  revisionFor,
  type FixtureItem,
} from '../fixtures/generate.js';
import { xxh32String } from '../../src/shared/xxh32.js';

/** One prepared request. `ctx` is what was sent, kept for the probe's in-depth validation. */
export interface RequestEntry {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | undefined;
  readonly ctx: SentContext;
}

export interface SentContext {
  readonly u: string;
  readonly p: Record<string, unknown>;
  /** '' when the body carries no v. */
  readonly v: string;
  /** For bad-requests (scenario 8): the status and error code this malformed request must get. */
  readonly expectStatus: number;
  readonly expectCode: string;
}

export interface Scenario {
  /** Stable name used on the command line, in results files and by bench:compare. */
  readonly name: string;
  /** Scenario number, accepted by `--scenario` beside the name (7 has two parts: large-hit and large-miss). */
  readonly number: number;
  readonly title: string;
  readonly expectedStatuses: readonly number[];
  /** Deterministic pool of distinct requests; autocannon cycles through it. */
  pool(seed: number): RequestEntry[];
  /** Cheap check run on every response during the load. */
  verifyBody: (body: string) => boolean;
  /** In-depth check of one response; returns a problem description or null. */
  validate(entry: RequestEntry, status: number, body: string): string | null;
}

export const POOL_SIZE = 4096;
export const BASE_SEED = 20261121;
const USERS = 5000;
const VERSIONS: readonly string[] = ['1.2.0', '1.4.9', '1.5.0', '1.8.3', '2.0.0', '2.1.4', ''];
const COUNTRIES: readonly string[] = ['US', 'DE', 'FR', 'BR', 'JP', 'GB', 'PL', 'IN', 'ES', 'KR'];
const PLATFORMS: readonly string[] = ['ios', 'android', 'web'];
const EU: ReadonlySet<string> = new Set(['DE', 'FR', 'ES', 'IT', 'NL', 'PL']);

const JSON_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json', 'x-api-key': BENCH_KEY };
const CATALOG_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json', 'x-api-key': CATALOG_KEY };
const OFREP_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json', 'x-api-key': OFREP_KEY };

/** Thousands of distinct user ids; ~5% non-ASCII so the UTF-8 path of the uid hash is exercised too. */
function userIds(seed: number): string[] {
  const rand = prng(seed ^ 0x75736572);
  const out: string[] = [];
  for (let i = 0; i < USERS; i++) {
    const id = Math.floor(rand() * 2 ** 40).toString(36);
    out.push(rand() < 0.05 ? `joueur-é-${id}` : `player-${id}`);
  }
  return out;
}

function userAttributes(rand: () => number): Record<string, unknown> {
  const spend = rand() < 0.6 ? 0 : Math.round(rand() * 50000) / 100;
  const tagRoll = rand();
  return {
    country: pick(rand, COUNTRIES),
    platform: pick(rand, PLATFORMS),
    level: 1 + Math.floor(rand() * 60),
    spend,
    tags: tagRoll < 0.05 ? ['tester'] : tagRoll < 0.2 ? ['beta'] : [],
    device: { ram: 1024 * (2 + Math.floor(rand() * 7)) },
  };
}

function contextBody(u: string, p: Record<string, unknown>, v: string): string {
  return v === '' ? JSON.stringify({ u, p }) : JSON.stringify({ u, p, v });
}

function contextPool(
  seed: number,
  method: 'GET' | 'POST',
  path: string,
  attributes: (rand: () => number) => Record<string, unknown>,
  headers: Readonly<Record<string, string>> = JSON_HEADERS,
): RequestEntry[] {
  const rand = prng(seed);
  const users = userIds(seed);
  const out: RequestEntry[] = [];
  for (let i = 0; i < POOL_SIZE; i++) {
    const u = pick(rand, users);
    const p = attributes(rand);
    const v = pick(rand, VERSIONS);
    out.push({ method, path, headers, body: contextBody(u, p, v), ctx: { u, p, v, expectStatus: 200, expectCode: '' } });
  }
  return out;
}

function benchItem(id: string): FixtureItem {
  return (fixtureSet().environments[BENCH_ENV] as Record<string, FixtureItem>)[id] as FixtureItem;
}

// Hashes of fixture revisions, computed once per JSON value (identity of the parsed object).
const hashCache = new Map<unknown, string>();
function revisionHash(json: unknown): string {
  let h = hashCache.get(json);
  if (h === undefined) {
    h = contentHash(JSON.stringify(json));
    hashCache.set(json, h);
  }
  return h;
}

function parseOrProblem(body: string): { value: unknown; problem: string | null } {
  try {
    return { value: JSON.parse(body), problem: null };
  } catch {
    return { value: undefined, problem: `response is not JSON: ${body.slice(0, 120)}` };
  }
}

interface SegEntry {
  n: string;
  v: string | null;
  i?: string;
}

/** Checks data/hash/meta of one wrapped item; returns the seg list and the delivered data for further checks. */
function checkWrapped(
  item: FixtureItem,
  ctx: SentContext,
  wrapped: unknown,
  serialized: boolean,
): { problem: string | null; seg: SegEntry[]; data: Record<string, unknown> } {
  const none = { seg: [] as SegEntry[], data: {} as Record<string, unknown> };
  if (typeof wrapped !== 'object' || wrapped === null) return { problem: 'wrapped item is not an object', ...none };
  const w = wrapped as { data?: unknown; hash?: unknown; meta?: { uid?: unknown; mod?: unknown; seg?: unknown } };
  let data = w.data;
  if (serialized) {
    if (typeof data !== 'string') return { problem: 'responseType=serialized but data is not a string', ...none };
    data = JSON.parse(data);
  }
  if (typeof data !== 'object' || data === null) return { problem: 'data is not an object', ...none };
  const rev = revisionFor(item, ctx.v);
  if (w.hash !== revisionHash(rev.json)) return { problem: `hash ${String(w.hash)} is not the hash of the revision for v=${ctx.v}`, ...none };
  const uid = xxh32String(ctx.u);
  if (w.meta === undefined || w.meta.uid !== uid) return { problem: `meta.uid ${String(w.meta?.uid)} != XXH32(${JSON.stringify(ctx.u)}) = ${uid}`, ...none };
  if (w.meta.mod !== uid % 1000) return { problem: `meta.mod ${String(w.meta.mod)} != ${uid % 1000}`, ...none };
  if (!Array.isArray(w.meta.seg)) return { problem: 'meta.seg is not an array', ...none };
  for (const s of w.meta.seg as unknown[]) {
    const e = s as SegEntry;
    if (typeof e !== 'object' || e === null || typeof e.n !== 'string' || !(e.v === null || typeof e.v === 'string')) {
      return { problem: `malformed seg entry ${JSON.stringify(s)}`, ...none };
    }
  }
  return { problem: null, seg: w.meta.seg as SegEntry[], data: data as Record<string, unknown> };
}

function segNamed(seg: readonly SegEntry[], n: string): SegEntry | undefined {
  return seg.find((s) => s.n === n);
}

/** The rules of mapping-10.json that are evaluated independently here (the rest are only shape-checked). */
function checkMappedSeg(ctx: SentContext, seg: readonly SegEntry[], data: Record<string, unknown>): string | null {
  const mod = xxh32String(ctx.u) % 1000;
  const shop = segNamed(seg, 'shop-refresh');
  const wantVariant = mod <= 499 ? 'A' : 'B';
  if (shop === undefined || shop.v !== wantVariant) return `A/B shop-refresh: want variant ${wantVariant} for mod ${mod}, got ${JSON.stringify(shop)}`;
  if (shop.i !== (mod <= 499 ? 'short-refresh' : 'long-refresh')) return `A/B shop-refresh: variant info missing or wrong: ${JSON.stringify(shop)}`;
  const eu = EU.has(ctx.p.country as string);
  if ((segNamed(seg, 'eu') !== undefined) !== eu) return `segment eu: expected ${eu} for country ${String(ctx.p.country)}`;
  const economy = data.economy as Record<string, unknown> | undefined;
  if ((economy?.currency === 'EUR') !== eu) return `segment eu patch: currency ${String(economy?.currency)}`;
  if ((segNamed(seg, 'ios') !== undefined) !== (ctx.p.platform === 'ios')) return 'segment ios mismatched';
  const legacy = ctx.v !== '' && compareVersions(ctx.v, '1.5.0') < 0;
  if ((segNamed(seg, 'legacy-app') !== undefined) !== legacy) return `segment legacy-app (appVersion <1.5.0) mismatched for v=${ctx.v}`;
  if (economy?.shopRefreshHours !== (mod <= 499 ? 6 : 12)) return `A/B shop-refresh patch not applied: ${String(economy?.shopRefreshHours)}`;
  const order = ['eu', 'payer', 'whale', 'new-players', 'ios', 'legacy-app', 'shop-refresh', 'testers', 'difficulty', 'android-high-end'];
  let last = -1;
  for (const s of seg) {
    const at = order.indexOf(s.n);
    if (at <= last) return `seg not in rule order or unknown: ${JSON.stringify(seg)}`;
    last = at;
  }
  return null;
}

function checkLargeSeg(ctx: SentContext, seg: readonly SegEntry[], data: Record<string, unknown>): string | null {
  const mod = xxh32String(ctx.u) % 1000;
  const loot = segNamed(seg, 'loot');
  if (loot === undefined || loot.v !== (mod <= 499 ? 'A' : 'B')) return `A/B loot: wrong variant for mod ${mod}: ${JSON.stringify(loot)}`;
  const balance = data.balance as Record<string, unknown>;
  if (balance.lootTable !== (mod <= 499 ? 'a' : 'b')) return 'A/B loot patch not applied';
  const gold = ctx.p.tier === 'gold';
  if ((segNamed(seg, 'gold') !== undefined) !== gold || (balance.goldBonus === 1.25) !== gold) return 'segment gold mismatched';
  const flags = (ctx.p.flags as string[] | undefined) ?? [];
  const levels = data.levels as Record<string, { boss: string }>;
  for (let i = 0; i < FLAG_RULES; i++) {
    const on = flags.includes(`f${i}`);
    if ((segNamed(seg, `flag-${i}`) !== undefined) !== on) return `segment flag-${i} mismatched`;
    const level = levels[`L${String(i + 2).padStart(4, '0')}`];
    if ((level?.boss === `event-boss-${i}`) !== on) return `flag-${i} patch mismatched`;
  }
  return null;
}

function validateStatus(entry: RequestEntry, status: number, body: string): string | null {
  return status === entry.ctx.expectStatus ? null : `status ${status} (want ${entry.ctx.expectStatus}): ${body.slice(0, 200)}`;
}

function plainScenario(): Scenario {
  const path = `/api/v1/config/${SMALL_ID}`;
  return {
    name: 'plain',
    number: 1,
    title: 'plain content, small (1.4 KB)',
    expectedStatuses: [200],
    pool: (seed) => contextPool(seed, 'POST', path, userAttributes),
    verifyBody: (body) => body.startsWith('{"schema":') && body.endsWith('}'),
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      return isDeepStrictEqual(value, revisionFor(benchItem(SMALL_ID), entry.ctx.v).json) ? null : 'plain body differs from the fixture';
    },
  };
}

function wrappedScenario(): Scenario {
  const path = `/api/v1/config/${SMALL_ID}/dynamic`;
  return {
    name: 'wrapped',
    number: 2,
    title: 'wrapped, no mapping',
    expectedStatuses: [200],
    pool: (seed) => contextPool(seed, 'POST', path, userAttributes),
    verifyBody: (body) => body.startsWith('{"data":{"schema":') && body.endsWith('"seg":[]}}'),
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      const item = benchItem(SMALL_ID);
      const w = checkWrapped(item, entry.ctx, value, false);
      if (w.problem !== null) return w.problem;
      if (w.seg.length !== 0) return 'seg must be [] without a mapping';
      return isDeepStrictEqual(w.data, revisionFor(item, entry.ctx.v).json) ? null : 'data differs from the fixture';
    },
  };
}

/** Cheap per-response check for wrapped bodies whose size does not allow a full scan: meta sits at the end. */
function wrappedShape(body: string, dataPrefix: string): boolean {
  return body.startsWith(dataPrefix) && body.endsWith(']}}') && body.lastIndexOf('"meta":{"uid":') > 0;
}

function mappedScenario(serialized: boolean): Scenario {
  const path = `/api/v1/config/${MAPPED_ID}/dynamic${serialized ? '?responseType=serialized' : ''}`;
  const dataPrefix = serialized ? '{"data":"{\\"schema\\":' : '{"data":{"schema":';
  return {
    name: serialized ? 'mapped-serialized' : 'mapped',
    number: serialized ? 4 : 3,
    title: serialized ? 'wrapped + 10-rule mapping, responseType=serialized' : 'wrapped + 10-rule mapping (segments, 2 A/B tests): the mutation path',
    expectedStatuses: [200],
    pool: (seed) => contextPool(seed, 'POST', path, userAttributes),
    verifyBody: (body) => wrappedShape(body, dataPrefix),
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      const w = checkWrapped(benchItem(MAPPED_ID), entry.ctx, value, serialized);
      if (w.problem !== null) return w.problem;
      return checkMappedSeg(entry.ctx, w.seg, w.data);
    },
  };
}

function combineScenario(): Scenario {
  const path = `/api/v1/combine?c=${encodeURIComponent(JSON.stringify(COMBINE_IDS))}&dynamic=true`;
  const first = `{"${COMBINE_IDS[0] as string}":{"data":`;
  const lastKey = `"${COMBINE_IDS[COMBINE_IDS.length - 1] as string}":{"data":`;
  return {
    name: 'combine',
    number: 5,
    title: `combine of ${COMBINE_IDS.length} ids, dynamic`,
    expectedStatuses: [200],
    pool: (seed) => contextPool(seed, 'POST', path, userAttributes),
    verifyBody: (body) => body.startsWith(first) && body.endsWith(']}}}') && body.lastIndexOf(lastKey) > 0,
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj);
      if (!isDeepStrictEqual([...keys].sort(), [...COMBINE_IDS].sort())) return `combine keys ${keys.join(',')}`;
      for (const id of COMBINE_IDS) {
        const w = checkWrapped(benchItem(id), entry.ctx, obj[id], false);
        if (w.problem !== null) return `${id}: ${w.problem}`;
        if (id === MAPPED_ID) {
          const m = checkMappedSeg(entry.ctx, w.seg, w.data);
          if (m !== null) return `${id}: ${m}`;
        }
      }
      return null;
    },
  };
}

/** The first 50 items of the catalog environment (one in ten with a mapping): a game's whole configuration at start-up. */
export const COMBINE_50_IDS: readonly string[] = Array.from({ length: 50 }, (_, i) => `Cfg${String(i).padStart(3, '0')}`);

function combine50Scenario(): Scenario {
  const path = `/api/v1/combine?c=${encodeURIComponent(JSON.stringify(COMBINE_50_IDS))}&dynamic=true`;
  const first = `{"${COMBINE_50_IDS[0] as string}":{"data":`;
  const lastKey = `"${COMBINE_50_IDS[COMBINE_50_IDS.length - 1] as string}":{"data":`;
  const items = (): Readonly<Record<string, FixtureItem>> => fixtureSet().environments[CATALOG_ENV] as Record<string, FixtureItem>;
  return {
    name: 'combine-50',
    number: 11,
    title: `combine of ${COMBINE_50_IDS.length} ids, dynamic (one in ten mapped): a whole configuration at start-up`,
    expectedStatuses: [200],
    pool: (seed) => contextPool(seed, 'POST', path, userAttributes, CATALOG_HEADERS),
    verifyBody: (body) => body.startsWith(first) && body.endsWith(']}}}') && body.lastIndexOf(lastKey) > 0,
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      const obj = value as Record<string, unknown>;
      if (!isDeepStrictEqual(Object.keys(obj), [...COMBINE_50_IDS])) return `combine keys ${Object.keys(obj).join(',')}`;
      for (const id of COMBINE_50_IDS) {
        const w = checkWrapped(items()[id] as FixtureItem, entry.ctx, obj[id], false);
        if (w.problem !== null) return `${id}: ${w.problem}`;
      }
      return null;
    },
  };
}

function catalogScenario(): Scenario {
  const items = (): Readonly<Record<string, FixtureItem>> => fixtureSet().environments[CATALOG_ENV] as Record<string, FixtureItem>;
  return {
    name: 'catalog',
    number: 6,
    title: 'catalog of 200 ids',
    expectedStatuses: [200],
    pool() {
      const ctx: SentContext = { u: '', p: {}, v: '', expectStatus: 200, expectCode: '' };
      return [{ method: 'GET', path: '/api/v1/env/catalog', headers: CATALOG_HEADERS, body: undefined, ctx }];
    },
    verifyBody: (body) => body.startsWith('{"catalog":{"') && body.endsWith('}}}'),
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      const catalog = (value as { catalog?: Record<string, { h: unknown; d: unknown }> }).catalog;
      if (catalog === undefined) return 'no catalog key';
      const want = items();
      if (Object.keys(catalog).length !== Object.keys(want).length) return `catalog has ${Object.keys(catalog).length} ids`;
      for (const [id, item] of Object.entries(want)) {
        const got = catalog[id];
        if (got === undefined) return `catalog misses ${id}`;
        const rev = item.revisions[item.revisions.length - 1];
        if (got.h !== revisionHash(rev?.json)) return `catalog ${id}: h differs from the content hash`;
        if (got.d !== (item.mapping !== null)) return `catalog ${id}: d should be ${item.mapping !== null}`;
      }
      return null;
    },
  };
}

function largeAttributes(withFlags: boolean): (rand: () => number) => Record<string, unknown> {
  return function attributes(rand) {
    const p: Record<string, unknown> = { tier: rand() < 0.3 ? 'gold' : 'silver', level: 1 + Math.floor(rand() * 60) };
    if (withFlags) {
      const flags: string[] = [];
      for (let i = 0; i < FLAG_RULES; i++) if (rand() < 0.5) flags.push(`f${i}`);
      p.flags = flags;
    }
    return p;
  };
}

function largeScenario(miss: boolean): Scenario {
  const path = `/api/v1/config/${LARGE_ID}/dynamic`;
  return {
    name: miss ? 'large-miss' : 'large-hit',
    number: 7,
    title: miss
      ? `512 KiB + small patches, render-cache misses forced (2^${FLAG_RULES} rule combinations)`
      : '512 KiB + small patch, render-cache hits (4 combinations)',
    expectedStatuses: [200],
    pool: (seed) => contextPool(seed, 'POST', path, largeAttributes(miss)),
    verifyBody: (body) => wrappedShape(body, '{"data":{"schema":'),
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      const w = checkWrapped(benchItem(LARGE_ID), entry.ctx, value, false);
      if (w.problem !== null) return w.problem;
      return checkLargeSeg(entry.ctx, w.seg, w.data);
    },
  };
}

/** An OFREP evaluation request of the same user context (docs/openfeature.md, "Mapping"). */
function ofrepBody(u: string, p: Record<string, unknown>, v: string): string {
  return JSON.stringify({ context: v === '' ? { targetingKey: u, ...p } : { targetingKey: u, ...p, appVersion: v } });
}

/** contextPool's users, attributes and versions, sent as OFREP evaluation contexts. */
function ofrepPool(seed: number, path: string, headers: Readonly<Record<string, string>>): RequestEntry[] {
  return contextPool(seed, 'POST', path, userAttributes).map((e) => ({ ...e, headers, body: ofrepBody(e.ctx.u, e.ctx.p, e.ctx.v) }));
}

interface OfrepFlag {
  key?: unknown;
  value?: unknown;
  reason?: unknown;
  variant?: unknown;
  metadata?: { hash?: unknown; seg?: unknown; uid?: unknown; mod?: unknown };
}

/** Checks one OFREP evaluation as the wrapped answer it is made from (checkWrapped), plus reason and variant. */
function checkOfrepFlag(id: string, ctx: SentContext, flag: OfrepFlag): string | null {
  if (flag.key !== id) return `key ${String(flag.key)}, want ${id}`;
  const m = flag.metadata;
  if (m === undefined || typeof m.seg !== 'string') return 'metadata.seg is not a string';
  const seg = JSON.parse(m.seg) as SegEntry[];
  const w = checkWrapped(benchItem(id), ctx, { data: flag.value, hash: m.hash, meta: { uid: m.uid, mod: m.mod, seg } }, false);
  if (w.problem !== null) return w.problem;
  const reason = seg.length === 0 ? 'STATIC' : seg.some((s) => s.v !== null) ? 'SPLIT' : 'TARGETING_MATCH';
  if (flag.reason !== reason) return `reason ${String(flag.reason)}, want ${reason}`;
  const variant = seg.length === 0 ? 'default' : seg.map((s) => (s.v === null ? s.n : `${s.n}:${s.v}`)).join(',');
  if (flag.variant !== variant) return `variant ${String(flag.variant)}, want ${variant}`;
  if (id === MAPPED_ID) return checkMappedSeg(ctx, w.seg, w.data);
  return isDeepStrictEqual(w.data, revisionFor(benchItem(id), ctx.v).json) ? null : `${id}: value differs from the fixture`;
}

function ofrepFlagScenario(): Scenario {
  const path = `/ofrep/v1/evaluate/flags/${MAPPED_ID}`;
  const prefix = `{"key":"${MAPPED_ID}","value":{"schema":`;
  return {
    name: 'ofrep-flag',
    number: 9,
    title: `OpenFeature (OFREP) evaluation of ${MAPPED_ID}: the mutation path of mapped, another envelope`,
    expectedStatuses: [200],
    pool: (seed) => ofrepPool(seed, path, JSON_HEADERS),
    verifyBody: (body) => body.startsWith(prefix) && body.endsWith('}}') && body.lastIndexOf('"metadata":{"hash":"') > 0,
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      return checkOfrepFlag(MAPPED_ID, entry.ctx, value as OfrepFlag);
    },
  };
}

function ofrepBulkScenario(): Scenario {
  const order = [...COMBINE_IDS].sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1));
  const first = `{"flags":[{"key":"${order[0] as string}","value":`;
  return {
    name: 'ofrep-bulk',
    number: 10,
    title: `OpenFeature (OFREP) bulk evaluation of a ${COMBINE_IDS.length}-item environment (the combine's items)`,
    expectedStatuses: [200],
    pool: (seed) => ofrepPool(seed, '/ofrep/v1/evaluate/flags', OFREP_HEADERS),
    verifyBody: (body) => body.startsWith(first) && body.endsWith('}]}') && body.lastIndexOf('"eventStreams":[') > 0,
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      const flags = (value as { flags?: OfrepFlag[] }).flags ?? [];
      if (!isDeepStrictEqual(flags.map((f) => f.key), order)) return `flags ${flags.map((f) => String(f.key)).join(',')}`;
      for (const f of flags) {
        const p = checkOfrepFlag(f.key as string, entry.ctx, f);
        if (p !== null) return `${String(f.key)}: ${p}`;
      }
      return null;
    },
  };
}

/** The malformed requests of bad-requests (scenario 8), in rotation: each is a cause a real misbehaving client produces. */
function badPool(seed: number): RequestEntry[] {
  const rand = prng(seed);
  const users = userIds(seed);
  const path = `/api/v1/config/${SMALL_ID}/dynamic`;
  const noKey = { 'content-type': 'application/json' };
  const wrongKey = { 'content-type': 'application/json', 'x-api-key': WRONG_KEY };
  const out: RequestEntry[] = [];
  for (let i = 0; i < POOL_SIZE; i++) {
    const u = pick(rand, users);
    const p = userAttributes(rand);
    const good = JSON.stringify({ u, p, v: '1.5.0' });
    const kind = i % 5;
    const ctx = (status: number, code: string): SentContext => ({ u, p, v: '1.5.0', expectStatus: status, expectCode: code });
    if (kind === 0) out.push({ method: 'POST', path, headers: noKey, body: good, ctx: ctx(401, 'missing_api_key') });
    else if (kind === 1) out.push({ method: 'POST', path, headers: wrongKey, body: good, ctx: ctx(401, 'invalid_api_key') });
    else if (kind === 2) out.push({ method: 'POST', path, headers: JSON_HEADERS, body: good.slice(0, good.length - 3), ctx: ctx(400, 'invalid_json') });
    else if (kind === 3) out.push({ method: 'POST', path, headers: JSON_HEADERS, body: JSON.stringify({ u, p: [p.country] }), ctx: ctx(400, 'invalid_body') });
    else out.push({ method: 'POST', path, headers: JSON_HEADERS, body: JSON.stringify({ u, p, v: 150 }), ctx: ctx(400, 'invalid_body') });
  }
  return out;
}

function badScenario(): Scenario {
  return {
    name: 'bad-requests',
    number: 8,
    title: 'bad requests at full rate (401 missing/unknown key, 400 bad JSON/body)',
    expectedStatuses: [400, 401],
    pool: badPool,
    verifyBody: (body) => body.startsWith('{"error":{"status":4'),
    validate(entry, status, body) {
      const s = validateStatus(entry, status, body);
      if (s !== null) return s;
      const { value, problem } = parseOrProblem(body);
      if (problem !== null) return problem;
      const err = (value as { error?: { status?: unknown; code?: unknown; message?: unknown } }).error;
      if (err === undefined || err.status !== status || typeof err.message !== 'string') return `malformed error body ${body.slice(0, 200)}`;
      return err.code === entry.ctx.expectCode ? null : `error code ${String(err.code)}, want ${entry.ctx.expectCode}`;
    },
  };
}

export const SCENARIOS: readonly Scenario[] = [
  plainScenario(),
  wrappedScenario(),
  mappedScenario(false),
  mappedScenario(true),
  combineScenario(),
  catalogScenario(),
  largeScenario(false),
  largeScenario(true),
  badScenario(),
  ofrepFlagScenario(),
  ofrepBulkScenario(),
  combine50Scenario(),
];

/** Which requests of a scenario's pool a run sends (bench:cost --pool). */
export type PoolVariant = 'all' | 'one' | 'attributes';
export const POOL_VARIANTS: readonly PoolVariant[] = ['all', 'one', 'attributes'];

/**
 * A pool as --pool asks. `all`: as it is. `one`: its first request alone, so every request is one
 * user's and gets one answer. `attributes`: every request with the first one's p and v, so each user
 * keeps its id (its uid, mod and A/B buckets) while the segment rules see one player: a few rule
 * combinations where the pool makes hundreds. Comparing them says what the variety of users and of
 * their answers costs a server (bench/README.md, "One answer against many"). Requests without a body
 * are left as they are.
 */
export function poolVariant(pool: readonly RequestEntry[], variant: PoolVariant): RequestEntry[] {
  if (variant === 'all' || pool.length === 0) return [...pool];
  const first = pool[0]!;
  if (variant === 'one') return [first];
  return pool.map((e) => {
    if (e.body === undefined) return e;
    return { ...e, body: contextBody(e.ctx.u, first.ctx.p, first.ctx.v), ctx: { ...e.ctx, p: first.ctx.p, v: first.ctx.v } };
  });
}

export function scenarioByName(name: string): Scenario {
  const s = SCENARIOS.find((x) => x.name === name);
  if (s === undefined) throw new Error(`unknown scenario ${name}`);
  return s;
}

/** `--scenario` accepts names and scenario numbers, comma-separated ("mapped,7" = mapped, large-hit, large-miss). */
export function selectScenarios(spec: string | undefined): Scenario[] {
  if (spec === undefined || spec === '' || spec === 'all') return [...SCENARIOS];
  const out: Scenario[] = [];
  for (const part of spec.split(',')) {
    const t = part.trim();
    const matches = /^\d+$/.test(t) ? SCENARIOS.filter((s) => s.number === Number(t)) : SCENARIOS.filter((s) => s.name === t);
    if (matches.length === 0) throw new Error(`unknown scenario "${t}"; known: ${SCENARIOS.map((s) => `${s.name} (${s.number})`).join(', ')}`);
    for (const m of matches) if (!out.includes(m)) out.push(m);
  }
  return out;
}

/** autocannon's request object: setupRequest overwrites these fields from the next pool entry. */
export interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** The setupRequest of a scenario: cycles through its pool. Built once per autocannon instance (or worker),
 *  offset by `offset` so that workers do not send identical sequences. */
export function setupRequestFor(name: string, offset: number): (req: AutocannonRequest) => AutocannonRequest {
  const pool = scenarioByName(name).pool(BASE_SEED + offset);
  let next = 0;
  return function setupRequest(req: AutocannonRequest): AutocannonRequest {
    const e = pool[next] as RequestEntry;
    next = next + 1 === pool.length ? 0 : next + 1;
    req.method = e.method;
    req.path = e.path;
    // A copy: autocannon writes Content-Length into the headers object it is given, and the pool's
    // header objects are shared between entries (and with the probe's fetch calls).
    req.headers = { ...e.headers };
    req.body = e.body;
    return req;
  };
}

export function verifyBodyFor(name: string): (body: string) => boolean {
  return scenarioByName(name).verifyBody;
}

/** Small wrapper bodies built from the fixtures, used only by `--target ceiling` (calibration runs,
 *  where there is no real server to take response bodies from). Sizes match the real answers closely. */
export function syntheticResponse(s: Scenario, entry: RequestEntry): { status: number; body: string } {
  const ctx = entry.ctx;
  const uid = xxh32String(ctx.u);
  const wrap = (item: FixtureItem, serialized: boolean, seg: string): string => {
    const min = JSON.stringify(revisionFor(item, ctx.v).json);
    return `{"data":${serialized ? JSON.stringify(min) : min},"hash":"${revisionHash(revisionFor(item, ctx.v).json)}","meta":{"uid":${uid},"mod":${uid % 1000},"seg":${seg}}}`;
  };
  const ab = `[{"n":"shop-refresh","v":"A","i":"short-refresh"}]`;
  switch (s.name) {
    case 'plain':
      return { status: 200, body: JSON.stringify(revisionFor(benchItem(SMALL_ID), ctx.v).json) };
    case 'wrapped':
      return { status: 200, body: wrap(benchItem(SMALL_ID), false, '[]') };
    case 'mapped':
    case 'mapped-serialized':
      return { status: 200, body: wrap(benchItem(MAPPED_ID), s.name === 'mapped-serialized', ab) };
    case 'combine':
      return { status: 200, body: `{${COMBINE_IDS.map((id) => `"${id}":${wrap(benchItem(id), false, id === MAPPED_ID ? ab : '[]')}`).join(',')}}` };
    case 'combine-50': {
      const items = fixtureSet().environments[CATALOG_ENV] as Record<string, FixtureItem>;
      return { status: 200, body: `{${COMBINE_50_IDS.map((id) => `"${id}":${wrap(items[id] as FixtureItem, false, '[]')}`).join(',')}}` };
    }
    case 'catalog': {
      const items = fixtureSet().environments[CATALOG_ENV] as Record<string, FixtureItem>;
      const parts = Object.entries(items).map(([id, it]) => `"${id}":{"h":"${revisionHash(it.revisions[0]?.json)}","d":${it.mapping !== null}}`);
      return { status: 200, body: `{"catalog":{${parts.join(',')}}}` };
    }
    case 'large-hit':
    case 'large-miss':
      return { status: 200, body: wrap(benchItem(LARGE_ID), false, '[{"n":"loot","v":"A"}]') };
    case 'ofrep-flag':
    case 'ofrep-bulk': {
      const evaluation = (id: string, seg: string): string => {
        const rev = revisionFor(benchItem(id), ctx.v);
        const variant = seg === '[]' ? 'default' : 'shop-refresh:A';
        return `{"key":"${id}","value":${JSON.stringify(rev.json)},"reason":"${seg === '[]' ? 'STATIC' : 'SPLIT'}","variant":"${variant}","metadata":{"hash":"${revisionHash(rev.json)}","seg":${JSON.stringify(seg)},"uid":${uid},"mod":${uid % 1000}}}`;
      };
      if (s.name === 'ofrep-flag') return { status: 200, body: evaluation(MAPPED_ID, ab) };
      const flags = [...COMBINE_IDS].sort().map((id) => evaluation(id, id === MAPPED_ID ? ab : '[]'));
      return { status: 200, body: `{"flags":[${flags.join(',')}],"eventStreams":[{"type":"sse","endpoint":{"requestUri":"/api/v1/env/events?format=ofrep&token=key_0000000000000000.0.synthetic"}}]}` };
    }
    default:
      return {
        status: ctx.expectStatus,
        body: JSON.stringify({ error: { status: ctx.expectStatus, code: ctx.expectCode, message: 'synthetic error body for calibration' } }),
      };
  }
}
