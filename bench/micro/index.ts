/**
 * `npm run bench:micro`: every micro-benchmark of the hot functions, one table per group.
 *
 * - mapping (./mapping.ts): condition evaluation, selectRules, render-cache hit and miss, splice vs
 *   parse-apply-stringify;
 * - alloc (./alloc.ts): time and JS heap bytes of the front end's steps on a render-cache hit;
 * - json (./json.ts): JSON.parse vs simdjson for bodies and content validation;
 * - ids (./ids.ts): the content-id key (ASCII fast path, Unicode path);
 * - metrics (./metrics.ts): the shared-array counters of a request against prom-client's own metrics;
 * - directory (./directory.ts): heap bytes per item of the routing directory and a full GC with it alive;
 * - sharded-map (./sharded-map.ts): the content table's lookup and its longest insert while growing, against a Map;
 * - store (./store.ts): a store read in a transaction, the wrapper made per call against one made with the store;
 * - here: body parse + validation (the hand-written check in src/delivery/context.ts vs its zod schema) and
 *   the uid hash (xxhash-addon vs the pure-JS XXH32 in src/shared/xxh32.ts that src/shared/identity.ts uses, checked
 *   for identical output before anything is timed).
 *
 * Inputs are the benchmark scenarios' own request bodies (thousands of distinct u, p and v), so the
 * numbers describe the traffic the load benchmark sends.
 */
import { parseUserContext } from '../../src/delivery/context.js';
import { userContextSchema } from '../../src/openapi/schemas.js';
import xxhash from 'xxhash-addon';
import { BASE_SEED, scenarioByName } from '../harness/scenarios.js';
import { runJsonMicro } from './json.js';
import { runMappingMicro } from './mapping.js';
import { runAllocMicro } from './alloc.js';
import { runIdKeyMicro } from './ids.js';
import { runMetricsMicro } from './metrics.js';
import { formatDirectoryTable, runDirectoryMicro } from './directory.js';
import { formatShardedMapResult, runShardedMapMicro } from './sharded-map.js';
import { runStoreTransactionMicro } from './store.js';
import { XXH32_VECTORS, xxh32Bytes, xxh32String } from '../../src/shared/xxh32.js';
import { MIN_MS, WARMUP_MS, formatTable, measure, type Row } from './measure.js';

const { XXHash32 } = xxhash as unknown as { XXHash32: { hash(data: Buffer): Buffer } };
/** The library alternative to src/shared/xxh32.ts: what meta.uid would cost through the native addon. */
function addonUid(u: string): number {
  return XXHash32.hash(Buffer.from(u, 'utf8')).readUInt32BE(0);
}


function requestBodies(): { bodies: string[]; users: string[] } {
  const pool = scenarioByName('mapped').pool(BASE_SEED);
  return { bodies: pool.map((e) => e.body as string), users: pool.map((e) => e.ctx.u) };
}

export function runBodyMicro(minMs = MIN_MS): Row[] {
  const { bodies } = requestBodies();
  const mask = 1023;
  const sample = bodies.slice(0, mask + 1);
  const avg = Math.round(sample.reduce((n, b) => n + Buffer.byteLength(b), 0) / sample.length);
  // Both must accept every body the benchmark sends; a benchmark of a check that rejects its input measures nothing.
  for (const b of sample) {
    parseUserContext(b);
    userContextSchema.parse(JSON.parse(b));
  }
  return [
    measure(`JSON.parse only (${avg} B bodies)`, (i) => (JSON.parse(sample[i & mask] as string) as { u: string }).u.length, minMs),
    measure('JSON.parse + hand-written check (src/delivery/context.ts)', (i) => parseUserContext(sample[i & mask] as string).u.length, minMs),
    measure('JSON.parse + zod schema (userContextSchema)', (i) => (userContextSchema.parse(JSON.parse(sample[i & mask] as string)).u ?? '').length, minMs),
  ];
}

/** Throws when the two XXH32 implementations disagree on any vector or benchmark user id. */
export function checkXxh32(users: readonly string[]): void {
  for (const [input, want] of XXH32_VECTORS) {
    const js = xxh32String(input);
    const addon = addonUid(input);
    if (js !== want || addon !== want) throw new Error(`XXH32(${JSON.stringify(input)}): pure JS ${js}, addon ${addon}, expected ${want}`);
  }
  for (const u of users) {
    if (xxh32String(u) !== addonUid(u)) throw new Error(`XXH32 mismatch for ${JSON.stringify(u)}`);
  }
}

const encoder = new TextEncoder();
let encoded = new Uint8Array(256);

/** src/shared/xxh32.ts's uid hash as it was: the codes copied into a buffer, TextEncoder#encodeInto when one is not ASCII. */
function xxh32ViaBuffer(s: string): number {
  if (encoded.length < s.length * 3) encoded = new Uint8Array(s.length * 3);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return xxh32Bytes(encoded, encoder.encodeInto(s, encoded).written, 0);
    encoded[i] = c;
  }
  return xxh32Bytes(encoded, s.length, 0);
}

export function runHashMicro(minMs = MIN_MS): Row[] {
  const { users } = requestBodies();
  checkXxh32(users);
  const mask = 1023;
  const sample = users.slice(0, mask + 1);
  const avg = Math.round(sample.reduce((n, u) => n + Buffer.byteLength(u), 0) / sample.length);
  const wide = users.filter((u) => Buffer.byteLength(u) !== u.length);
  if (wide.length === 0) throw new Error('the benchmark user ids have no non-ASCII id');
  for (const u of wide) if (xxh32ViaBuffer(u) !== xxh32String(u)) throw new Error(`XXH32 before/after mismatch for ${JSON.stringify(u)}`);
  const wideAvg = Math.round(wide.reduce((n, u) => n + Buffer.byteLength(u), 0) / wide.length);
  return [
    measure(`uid XXH32 xxhash-addon (Buffer.from + N-API, ${avg} B u)`, (i) => addonUid(sample[i & mask] as string), minMs),
    measure(`uid XXH32 pure JS, codes copied, TextEncoder for non-ASCII [before] (${avg} B u)`, (i) => xxh32ViaBuffer(sample[i & mask] as string), minMs),
    measure(`uid XXH32 pure JS (src/shared/xxh32.ts) [after] (${avg} B u)`, (i) => xxh32String(sample[i & mask] as string), minMs),
    measure(`uid XXH32 of non-ASCII ids only [before] (${wideAvg} B u)`, (i) => xxh32ViaBuffer(wide[i % wide.length] as string), minMs),
    measure(`uid XXH32 of non-ASCII ids only [after] (${wideAvg} B u)`, (i) => xxh32String(wide[i % wide.length] as string), minMs),
  ];
}


function main(): void {
  const groups: [string, () => Row[]][] = [
    ['Body parse + validation', () => runBodyMicro()],
    ['uid hash', () => runHashMicro()],
    ['JSON parse and validation (bench/micro/json.ts)', () => runJsonMicro()],
    ['Mapping: conditions, selection, render (bench/micro/mapping.ts)', () => runMappingMicro()],
    ['Front-end allocation per mapped request (bench/micro/alloc.ts)', () => runAllocMicro()],
    ['Content-id key (bench/micro/ids.ts)', () => runIdKeyMicro()],
    ['Metrics on the request path (bench/micro/metrics.ts)', () => runMetricsMicro()],
    ['SQLite store transactions (bench/micro/store.ts)', () => runStoreTransactionMicro()],
  ];
  process.stdout.write(`Node ${process.versions.node}; each row: ${WARMUP_MS} ms warm-up, >= ${MIN_MS} ms measured.\n\n`);
  for (const [title, run] of groups) process.stdout.write(formatTable(title, run()) + '\n');
  process.stdout.write(formatDirectoryTable(runDirectoryMicro()) + '\n');
  process.stdout.write(formatShardedMapResult(runShardedMapMicro()) + '\n');
}

main();
