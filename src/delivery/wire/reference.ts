/**
 * A plain reference writer for every answer the wire writes: the same status lines, header lines and
 * bodies as reply.ts and the body writers beside it, built the plain way, to hold the fast writers to
 * (test/unit/delivery/wire-differential.test.ts sends each answer through both).
 *
 * Plain means: strings, `${n}` for digits, Buffer.concat for bodies, node:zlib for gzip, each header
 * its own writeHeader call with a string value, no reused buffer, no DataView, no state kept from one
 * answer to the next. Nothing here calls the fast writers' helpers (tail.ts, header-block.ts,
 * item-scratch.ts, gzip.ts's builder): an answer is what the comments of those files say it is,
 * spelled out once more. Only fixed inputs are shared: the plan's step numbers (planned-answer.ts),
 * the coding enum (etag.ts), the error bodies (errors.ts) and the writers' parameters: each send
 * function here takes the parameters of its fast twin (reply.ts, error-answers.ts), by type, so the
 * two stay interchangeable in the differential test.
 *
 * Not on the request path: no server route calls it.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { gzipSync } from 'node:zlib';
import { errorResponse } from '../../runtime/errors.js';
import { JobKind } from '../../pool/protocol.js';
import { Coding } from '../etag.js';
import type * as fastErrors from './error-answers.js';
import type * as fast from './reply.js';
import { STEP_MAPPED_BASE, STEP_USER, type WirePlan } from './plan-layout.js';

/** What the reference reads of a front-cache entry: its head, its seg and its compressed forms. */
export interface PlainItem {
  readonly head: Uint8Array;
  readonly seg: Uint8Array;
  readonly gzip: Uint8Array | null;
  readonly br: Uint8Array | null;
}

const ETAG_END = ['"', '.gz"', '.br"'];
const CODING_NAME = ['', 'gzip', 'br'];
const EXPOSED = 'ETag, X-Missing-Content, Retry-After';

function latin1(value: Uint8Array | string): string {
  return typeof value === 'string' ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('latin1');
}

function utf8(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** A copy of `bytes` as a Buffer of its own. */
function copy(bytes: Uint8Array): Buffer {
  return Buffer.from(Uint8Array.prototype.slice.call(bytes));
}

function writeCors(res: HttpResponse, origin: Uint8Array | null): void {
  if (origin === null) return;
  res.writeHeader('access-control-allow-origin', latin1(origin));
  res.writeHeader('access-control-expose-headers', EXPOSED);
}

/** A non-content answer: status, JSON type, no-store, CORS, the optional header, the body. */
export function send(...[res, status, body, headerName, headerValue, closeConnection, origin]: Parameters<typeof fast.send>): void {
  res.cork(() => {
    res.writeStatus(status);
    res.writeHeader('content-type', 'application/json');
    res.writeHeader('cache-control', 'no-store');
    writeCors(res, origin);
    const name = latin1(headerName);
    if (name !== '') res.writeHeader(name, latin1(headerValue));
    res.end(typeof body === 'string' ? Buffer.from(body, 'utf8') : copy(body), closeConnection);
  });
}

/**
 * A 200 content answer: JSON type, Cache-Control, Vary, the ETag (`etag` whole), CORS,
 * Content-Encoding when compressed, the optional header, the body.
 */
function writeContent(
  res: HttpResponse,
  vary: Uint8Array,
  body: Uint8Array,
  coding: Coding,
  etag: string,
  cacheControl: Uint8Array | string,
  headerName: string,
  headerValue: string,
  origin: Uint8Array | null,
  closeConnection: boolean,
): void {
  res.cork(() => {
    res.writeStatus('200 OK');
    res.writeHeader('content-type', 'application/json');
    res.writeHeader('cache-control', latin1(cacheControl));
    res.writeHeader('vary', latin1(vary));
    res.writeHeader('etag', etag);
    writeCors(res, origin);
    if (coding !== Coding.Identity) res.writeHeader('content-encoding', CODING_NAME[coding]!);
    if (headerName !== '') res.writeHeader(headerName, headerValue);
    res.end(copy(body), closeConnection);
  });
}

/** 200 with a body already in `coding`; the ETag is `tag` in that coding. */
export function sendContent(
  ...[res, policy, body, coding, tag, cacheControl, headerName, headerValue, origin, closeConnection]: Parameters<typeof fast.sendContent>
): void {
  writeContent(res, policy.vary, body, coding, `"${tag}${ETAG_END[coding]!}`, cacheControl, headerName, headerValue, origin, closeConnection);
}

/** 200 with an uncompressed body whose ETag is `tag`.`uid` (`_block`: the fast writer's kept header block, not read). */
export function sendUidContent(
  ...[res, policy, body, _block, tag, uid, cacheControl, headerName, headerValue, origin, closeConnection]: Parameters<typeof fast.sendUidContent>
): void {
  writeContent(res, policy.vary, body, Coding.Identity, `"${tag}.${uid}"`, cacheControl, headerName, headerValue, origin, closeConnection);
}

/** `<uid>,"mod":<mod>,"seg":<seg>}}`: what follows a wrapped head for this user. */
function plainTail(seg: Uint8Array, uid: number, mod: number): Buffer {
  return Buffer.concat([Buffer.from(`${uid},"mod":${mod},"seg":`, 'latin1'), seg, Buffer.from('}}', 'latin1')]);
}

/** A wrapped item's whole answer for this user: its head and the tail. */
export function plainWrappedBody(item: PlainItem, uid: number, mod: number): Buffer {
  return Buffer.concat([item.head, plainTail(item.seg, uid, mod)]);
}

/** 200 with a wrapped answer, identity or gzip; the ETag is `itemTag`.`uid` in that coding, Cache-Control private. */
export function sendWrapped(...[res, policy, item, uid, mod, coding, itemTag, origin, closeConnection]: Parameters<typeof fast.sendWrapped>): void {
  if (coding === Coding.Br) throw new Error('reference: a wrapped answer is identity or gzip (no brotli is kept for wrapped heads)');
  const whole = plainWrappedBody(item, uid, mod);
  const body = coding === Coding.Gzip ? gzipSync(whole) : whole;
  writeContent(res, policy.vary, body, coding, `"${itemTag}.${uid}${ETAG_END[coding]!}`, 'private, no-cache', '', '', origin, closeConnection);
}

/** Ends an answer without a body; a closing one says Connection: close. */
function endEmpty(res: HttpResponse, closeConnection: boolean): void {
  if (closeConnection) res.writeHeader('connection', 'close');
  res.endWithoutBody();
}

/** 304 with the ETag, Cache-Control, Vary and CORS; no body, no Content-Length. */
export function sendNotModified(...[res, policy, etag, cacheControl, origin, closeConnection]: Parameters<typeof fast.sendNotModified>): void {
  res.cork(() => {
    res.writeStatus('304 Not Modified');
    res.writeHeader('etag', etag);
    res.writeHeader('cache-control', latin1(cacheControl));
    res.writeHeader('vary', latin1(policy.vary));
    writeCors(res, origin);
    endEmpty(res, closeConnection);
  });
}

/** 204 to OPTIONS: the preflight headers when `origin` is allowed, Vary: origin when CORS names origins. */
export function sendPreflight(...[res, policy, origin, closeConnection]: Parameters<typeof fast.sendPreflight>): void {
  res.cork(() => {
    res.writeStatus('204 No Content');
    res.writeHeader('allow', 'GET, POST, OPTIONS');
    res.writeHeader('cache-control', 'no-store');
    if (origin !== null) {
      res.writeHeader('access-control-allow-origin', latin1(origin));
      res.writeHeader('access-control-allow-methods', 'GET, POST');
      res.writeHeader('access-control-allow-headers', 'X-Api-Key, Authorization, Content-Type, If-None-Match, Last-Event-ID');
      res.writeHeader('access-control-max-age', '600');
    }
    if (policy.corsOrigins !== null) res.writeHeader('vary', 'origin');
    endEmpty(res, closeConnection);
  });
}

export function sendError(...[res, err, closeConnection, origin]: Parameters<typeof fastErrors.sendError>): void {
  send(res, err.statusLine, err.body, '', '', closeConnection, origin);
}

export function sendOverloaded(...[res, closeConnection, origin]: Parameters<typeof fastErrors.sendOverloaded>): void {
  const err = errorResponse('overloaded', 'the server is at capacity; retry shortly');
  send(res, err.statusLine, err.body, 'retry-after', '1', closeConnection, origin);
}

export function sendStarting(...[res, closeConnection, origin]: Parameters<typeof fastErrors.sendStarting>): void {
  const err = errorResponse('starting', 'the server is starting: its keys and content may not all be loaded yet; retry shortly');
  send(res, err.statusLine, err.body, 'retry-after', '1', closeConnection, origin);
}

/**
 * A combine answer from its plan: the fixed runs in step order, the user's `<uid>,"mod":<mod>` at
 * every user step, and each mapped item's head with its whole tail (`heads[k]` for mapped item k).
 */
export function plainPlannedAnswer(plan: WirePlan, uid: number, mod: number, heads: readonly PlainItem[]): Buffer {
  const user = plan.kind === JobKind.Plain ? Buffer.alloc(0) : Buffer.from(`${uid},"mod":${mod}`, 'latin1');
  const pieces: Uint8Array[] = [];
  for (const step of plan.steps) {
    if (step >= 0) {
      pieces.push(plan.statics[step]!);
    } else if (step === STEP_USER) {
      pieces.push(user);
    } else {
      const item = heads[STEP_MAPPED_BASE - step]!;
      pieces.push(item.head, plainTail(item.seg, uid, mod));
    }
  }
  return Buffer.concat(pieces);
}

/**
 * A combine assembled item by item: `{"<id>":<answer>,...}` over the found items (null: left out),
 * each wrapped item's answer its head and this user's tail.
 */
export function plainCombineBody(entries: readonly { readonly id: string }[], rendered: readonly (PlainItem | null)[], wrapped: boolean, uid: number, mod: number): Buffer {
  const pieces: Uint8Array[] = [];
  for (let i = 0; i < entries.length; i++) {
    const item = rendered[i];
    if (item === null || item === undefined) continue;
    pieces.push(Buffer.from((pieces.length === 0 ? '' : ',') + JSON.stringify(entries[i]!.id) + ':', 'utf8'));
    pieces.push(wrapped ? plainWrappedBody(item, uid, mod) : item.head);
  }
  return Buffer.concat([Buffer.from('{'), ...pieces, Buffer.from('}')]);
}

/** plainCombineBody as one gzip member (compressed here; the fast writer's bytes differ, its decoded body must not). */
export function plainCombineGzipBody(entries: readonly { readonly id: string }[], rendered: readonly (PlainItem | null)[], wrapped: boolean, uid: number, mod: number): Buffer {
  return gzipSync(plainCombineBody(entries, rendered, wrapped, uid, mod));
}

interface SegEntry {
  readonly n: string;
  readonly v: string | null;
}

/**
 * One OFREP evaluation of a wrapped item (`{"data":DATA,"hash":"<hash>","meta":{"uid":`) for the
 * user: `{"key":<id>,"value":DATA,"reason":…,"variant":…,"metadata":{"hash":…,"seg":<seg as a
 * string>,"uid":…,"mod":…}}`, reason and variant from the item's seg (docs/openfeature.md).
 */
function plainEvaluation(item: PlainItem, hash: string, id: string, uid: number, mod: number): Buffer {
  const head = utf8(item.head);
  const start = '{"data":';
  const end = `,"hash":"${hash}","meta":{"uid":`;
  if (!head.startsWith(start) || !head.endsWith(end)) throw new Error(`reference: not a wrapped head of hash ${hash}: ${head.slice(0, 80)}`);
  const value = head.slice(start.length, head.length - end.length);
  const segText = utf8(item.seg);
  const seg = (segText === '' ? [] : JSON.parse(segText)) as SegEntry[];
  const split = seg.some((s) => s.v !== null);
  const reason = seg.length === 0 ? 'STATIC' : split ? 'SPLIT' : 'TARGETING_MATCH';
  const variant = seg.length === 0 ? 'default' : seg.map((s) => (s.v === null ? s.n : `${s.n}:${s.v}`)).join(',');
  const rest = JSON.stringify({ reason, variant, metadata: { hash, seg: segText === '' ? '[]' : segText, uid, mod } });
  return Buffer.from(`{"key":${JSON.stringify(id)},"value":${value},${rest.slice(1)}`, 'utf8');
}

/** The answer of a single-flag OFREP evaluation. */
export function plainSingleAnswer(item: PlainItem, hash: string, id: string, uid: number, mod: number): Buffer {
  return plainEvaluation(item, hash, id, uid, mod);
}

/** One item of a bulk evaluation: an evaluation (`item` set) or a failure (a whole JSON object). */
export interface PlainBulkItem {
  readonly item: PlainItem | null;
  readonly hash: string;
  readonly id: string;
  readonly failure: Uint8Array | null;
}

/** `{"flags":[…]<streams>}`: every item's evaluation or failure, then the streams member as given. */
export function plainBulkAnswer(list: readonly PlainBulkItem[], uid: number, mod: number, streams: Uint8Array): Buffer {
  const flags = list.map((b) => (b.item === null ? copy(b.failure!) : plainEvaluation(b.item, b.hash, b.id, uid, mod)));
  const joined: Uint8Array[] = [];
  flags.forEach((f, i) => {
    if (i > 0) joined.push(Buffer.from(','));
    joined.push(f);
  });
  return Buffer.concat([Buffer.from('{"flags":['), ...joined, Buffer.from(']'), streams, Buffer.from('}')]);
}
