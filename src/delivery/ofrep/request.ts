/**
 * One OFREP evaluation after its headers passed (routes.ts): read the body under --max-body, map
 * the evaluation context to rcd's user context, evaluate the item's rules on this loop, answer from
 * the front cache or have the pool render what it lacks, and write the OFREP answer around the
 * cached wrapped head (wire/ofrep-answer.ts). A single-flag evaluation is endpoint 1 for one item;
 * a bulk evaluation is a combine of every item of the environment (bulk-plan.ts), bounded by
 * --ofrep-bulk-max-items.
 *
 * The request's life (body, abort, pool, failure, metrics) is lifecycle.ts's, as a content request's;
 * this file holds what OFREP adds: its context, its errors, its envelopes.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { chooseRevision, lookupContent, type ContentView, type EnvView } from '../directory.js';
import { RcdError, type ErrorCode } from '../../runtime/errors.js';
import { L_FRONT_HITS, L_FRONT_MISSES, MetricRoute, Outcome } from '../../metrics/layout.js';
import { userMod, userUid } from '../../shared/identity.js';
import { xxh32String } from '../../shared/xxh32.js';
import { evaluateMapping, type Combination, type CompiledMapping } from '../../mapping/index.js';
import { JobKind, type Job } from '../../pool/protocol.js';
import { frontEntryOf, frontKeyOf, type FrontKey, type Rendered } from '../front-cache.js';
import { DeliveryRequest } from '../lifecycle.js';
import { brokenMapping, missJob } from '../content-answer.js';
import { sendContent, sendNotModified } from '../wire/reply.js';
import { CC_PRIVATE } from '../wire/header-values.js';
import { answerBuffer, answerWords } from '../wire/answer-buffer.js';
import { Coding, STAR_IGNORED, describedTag, etagValue, itemTag, matchIfNoneMatch, wrappedTag } from '../etag.js';
import type { HttpPolicy } from '../http-policy.js';
import type { FrontEndState } from '../state.js';
import { bulkAnswer, singleAnswer, type BulkItem } from '../wire/ofrep-answer.js';
import { bulkPlanOf } from './bulk-plan.js';
import { parseOfrepContext, type OfrepContext } from './context.js';
import { errorCodeOf, sendOfrepError } from './errors.js';
import { eventStreamsMember, streamWindow } from './event-streams.js';
import { noteCombinationExposures } from '../exposure-notes.js';

export const enum OfrepRoute {
  /** POST /ofrep/v1/evaluate/flags/{key} */
  Flag = 0,
  /** POST /ofrep/v1/evaluate/flags */
  Bulk = 1,
}

const METRIC_ROUTE = [MetricRoute.OfrepFlag, MetricRoute.OfrepBulk] as const;
const NOT_FOUND_MESSAGE = 'no content item of this environment has this id (flag key)';
const TOO_MANY_MESSAGE = 'the server is at capacity; retry after Retry-After seconds';
const SPLIT_MESSAGE = 'this content has an A/B test: the evaluation context needs a targetingKey to place the user in a group';
const BROKEN_MESSAGE = "this content's mapping cannot be compiled (the server log says why)";
const NO_STREAMS = Buffer.alloc(0);

/** An OFREP evaluation: one flag, or every flag of the environment (bulk: `many`). */
export class OfrepRequest extends DeliveryRequest {
  /** The flag key as sent (decoded), echoed by error answers; null for a bulk evaluation. */
  declare readonly key: string | null;
  /** Single: the content id as created and the hash of the revision answered. */
  declare id: string;
  declare hash: string;
  /** Bulk: every item in answer order (a job's slot is its index here) and the eventStreams member. */
  declare list: BulkItem[] | null;
  declare streams: Buffer;

  constructor(state: FrontEndState, res: HttpResponse, route: OfrepRoute, env: EnvView, keyId: string, key: string | null, idLower: string, ifNoneMatch: string, origin: Uint8Array | null, declaredLength: boolean) {
    super(state, res, METRIC_ROUTE[route], env, keyId, idLower, route === OfrepRoute.Bulk, ifNoneMatch, origin, declaredLength);
    this.key = key;
    this.id = '';
    this.hash = '';
    this.list = null;
    this.streams = NO_STREAMS;
  }

  protected start(text: string): void {
    const ctx = parseOfrepContext(text);
    if (this.many) startBulk(this, ctx);
    else startFlag(this, ctx);
  }

  protected answerOne(rendered: Rendered): void {
    answerFlag(this, rendered);
  }

  protected keepItem(slot: number, rendered: Rendered | null): void {
    const item = this.list![slot]!;
    if (rendered !== null) item.item = rendered;
    else item.failure = failureOf(item.id, 'content_not_found', NOT_FOUND_MESSAGE);
  }

  protected notFoundMessage(): string {
    return NOT_FOUND_MESSAGE;
  }

  protected writeError(code: ErrorCode, message: string, _details: unknown, closeConnection: boolean): number {
    return sendOfrepError(this.res, this.key, code, message, closeConnection, this.origin);
  }

  protected answerFound(): void {
    answerBulk(this);
  }

  protected answerPoolFull(): void {
    // 429: what OFREP providers wait on (they pause evaluations or polling until Retry-After).
    this.answerError('too_many_requests', TOO_MANY_MESSAGE, false);
  }
}

/** Whether a mapping has an A/B test (its variants are chosen by the targeting key), memoized per compiled mapping. */
const splits = new WeakMap<CompiledMapping, boolean>();
function hasSplit(mapping: CompiledMapping): boolean {
  let known = splits.get(mapping);
  if (known === undefined) {
    known = mapping.rules.some((rule) => rule.variantOfMod !== null);
    splits.set(mapping, known);
  }
  return known;
}

/**
 * The item's combination of applied rules (null without a mapping). Throws targeting_key_missing when
 * the mapping has an A/B test and the context named no targetingKey: every such user would share one
 * group (the group of u = ""), silently skewing the test.
 */
function combinationOf(r: OfrepRequest, content: ContentView, ctx: OfrepContext): Combination | null {
  if (content.mappingId === 0) return null;
  if (content.mappingBroken) throw brokenMapping(content);
  const mapping = content.mapping!;
  if (!ctx.targeted && hasSplit(mapping)) throw new RcdError('targeting_key_missing', SPLIT_MESSAGE);
  if (mapping === r.evaluatedMapping) return r.evaluated;
  const combination = evaluateMapping(mapping, ctx.user.p, ctx.user.version, r.mod);
  r.evaluatedMapping = mapping;
  r.evaluated = combination;
  return combination;
}

function startFlag(r: OfrepRequest, ctx: OfrepContext): void {
  const content = lookupContent(r.env, r.idLower);
  if (content === undefined) throw new RcdError('content_not_found', NOT_FOUND_MESSAGE);
  const rev = chooseRevision(content, ctx.user.version);
  if (rev === undefined) throw new RcdError('content_not_found', `no revision of this content is available for app version ${ctx.user.v}`);
  r.uid = userUid(ctx.user.u);
  r.mod = userMod(r.uid);
  const combination = combinationOf(r, content, ctx);
  const exposures = r.state.exposures;
  if (exposures !== null && combination !== null) noteCombinationExposures(exposures, r, content, combination, ctx.user);
  r.id = content.id;
  r.hash = rev.hash;
  // The wrapped answer's tag (the same parts), marked as OFREP's, with the id as created (the answer
  // echoes it: a content deleted and created again under another spelling is another answer).
  r.tag = 'o' + xxh32String(content.id) + '.' + wrappedTag(JobKind.Wrapped, rev, content.mappingId, combination, r.uid);
  if (answeredNotModified(r)) return;
  const hit = frontEntryOf(r.state.frontCache, JobKind.Wrapped, rev.revId, content.mappingId, combination);
  if (hit !== undefined) {
    r.state.counters[L_FRONT_HITS]! += 1;
    answerFlag(r, hit);
    return;
  }
  r.state.counters[L_FRONT_MISSES]! += 1;
  r.renderMiss(missJob(JobKind.Wrapped, rev, content, combination), frontKeyOf(JobKind.Wrapped, rev.revId, content.mappingId, combination));
}

/** A failed item of a bulk answer: `{"key":…,"errorCode":…,"errorDetails":…}`. */
function failureOf(id: string, code: ErrorCode, message: string): Buffer {
  return Buffer.from(`{"key":${JSON.stringify(id)},"errorCode":"${errorCodeOf(code)}","errorDetails":${JSON.stringify(message)}}`, 'utf8');
}

function startBulk(r: OfrepRequest, ctx: OfrepContext): void {
  const state = r.state;
  const plan = bulkPlanOf(r.env, state.config.ofrepBulkMaxItems);
  const contents = r.env.contents;
  const cache = state.frontCache;
  const user = ctx.user;
  const exposures = state.exposures;
  r.uid = userUid(user.u);
  r.mod = userMod(r.uid);
  const window = streamWindow(state, Date.now());
  const streams = eventStreamsMember(state, r.keyId, window);
  const entries = plan.entries;
  const list = new Array<BulkItem>(entries.length);
  const keys = new Array<FrontKey>(entries.length);
  const jobs: Job[] = [];
  const slots: number[] = [];
  // What the answer is made of, for its tag (as a combine's, etag.ts): the uid, the stream token's
  // key and window when the answer names one, and each item's parts or why it failed.
  let tagParts = 'b' + r.uid + (streams.byteLength === 0 ? '' : '|' + r.keyId + '.' + window);
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    keys[i] = '';
    const content = contents.get(entry.lookup);
    const rev = content === undefined ? undefined : chooseRevision(content, user.version);
    if (content === undefined || rev === undefined) {
      const message = content === undefined ? NOT_FOUND_MESSAGE : `no revision of this content is available for app version ${user.v}`;
      list[i] = { item: null, hash: '', id: entry.id, failure: failureOf(entry.id, 'content_not_found', message) };
      tagParts += entry.tagPrefix + '!n';
      continue;
    }
    let combination: Combination | null;
    try {
      combination = combinationOf(r, content, ctx);
    } catch (err) {
      // One item's failure is that flag's, not the whole evaluation's (OFREP lists failures per flag).
      const split = err instanceof RcdError;
      if (!split) state.onInternalError(err);
      list[i] = { item: null, hash: '', id: content.id, failure: split ? failureOf(content.id, err.code, err.message) : failureOf(content.id, 'internal', BROKEN_MESSAGE) };
      tagParts += entry.tagPrefix + (split ? '!t' : '!m' + content.mappingId);
      continue;
    }
    if (exposures !== null && combination !== null) noteCombinationExposures(exposures, r, content, combination, user);
    tagParts += entry.tagPrefix + itemTag(JobKind.Wrapped, rev, content.mappingId, combination);
    const key = frontKeyOf(JobKind.Wrapped, rev.revId, content.mappingId, combination);
    const hit = cache.get(key);
    list[i] = { item: hit ?? null, hash: rev.hash, id: content.id, failure: null };
    keys[i] = key;
    if (hit === undefined) {
      jobs.push(missJob(JobKind.Wrapped, rev, content, combination));
      slots.push(i);
    }
  }
  r.list = list;
  r.keys = keys;
  r.streams = streams;
  r.remaining = jobs.length;
  r.tag = describedTag(tagParts);
  if (answeredNotModified(r)) return;
  r.settleLookups(entries.length, jobs, slots);
}

/**
 * Vary of OFREP answers: the key may come as a bearer token, so Authorization is named beside
 * X-Api-Key. Compiled once per policy (per loop).
 */
const policies = new WeakMap<HttpPolicy, HttpPolicy>();
function ofrepPolicy(policy: HttpPolicy): HttpPolicy {
  let p = policies.get(policy);
  if (p === undefined) {
    p = { ...policy, vary: Buffer.from(policy.vary.toString('latin1') + ', authorization', 'latin1') };
    policies.set(policy, p);
  }
  return p;
}

/** 304 when If-None-Match names the answer's tag; returns whether it answered. */
function answeredNotModified(r: OfrepRequest): boolean {
  if (r.ifNoneMatch.length === 0) return false; // as content-answer.ts answeredNotModified
  const coding = matchIfNoneMatch(r.ifNoneMatch, r.tag, STAR_IGNORED);
  if (coding === -1) return false;
  r.writing = true;
  r.answeredBytes = sendNotModified(r.res, ofrepPolicy(r.state.http), etagValue(r.tag, coding), CC_PRIVATE, r.origin, r.state.shuttingDown);
  r.status = 304;
  r.outcome = Outcome.NotModified;
  r.finish();
  return true;
}

/**
 * OFREP answers go uncompressed: the value is a slice of the cached wrapped head, whose gzip member
 * cannot be cut to it; compressing here would be per-request work (docs/openfeature.md, "Limits").
 */
function answerFlag(r: OfrepRequest, item: Rendered): void {
  r.writing = true;
  const body = singleAnswer(answerBuffer, answerWords, item, r.hash, r.id, r.uid, r.mod);
  r.answeredBytes = sendContent(r.res, ofrepPolicy(r.state.http), body, Coding.Identity, r.tag, CC_PRIVATE, '', '', r.origin, r.state.shuttingDown);
  r.finish();
}

function answerBulk(r: OfrepRequest): void {
  r.writing = true;
  const body = bulkAnswer(answerBuffer, answerWords, r.list!, r.uid, r.mod, r.streams);
  r.answeredBytes = sendContent(r.res, ofrepPolicy(r.state.http), body, Coding.Identity, r.tag, CC_PRIVATE, '', '', r.origin, r.state.shuttingDown);
  r.finish();
}
