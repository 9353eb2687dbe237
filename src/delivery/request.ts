/**
 * What a content request means (endpoints 1-3): which item or items, which revision, which rules
 * apply to this user, which front-cache entries or combine plan answer it, and whether the client's
 * copy is current (304). The request's life (body, abort, pool, failure, metrics) is lifecycle.ts's;
 * the bytes of every answer are written below the line, in wire/.
 *
 * HOT PATH: change with care.
 */
import type { HttpResponse } from 'uWebSockets.js';
import * as directory from './directory.js';
import type { ContentView, EnvView, RevisionView } from './directory.js';
import { RcdError, errorResponse, type ErrorCode } from '../runtime/errors.js';
import * as metrics from '../metrics/layout.js';
import { MetricRoute, Outcome } from '../metrics/layout.js';
import * as identity from '../shared/identity.js';
import * as mapping from '../mapping/index.js';
import type { Combination } from '../mapping/index.js';
import { JobKind, type Job } from '../pool/protocol.js';
import * as context from './context.js';
import type { UserContext } from './context.js';
import * as frontCache from './front-cache.js';
import { frontKeyOf, type FrontKey, type Rendered } from './front-cache.js';
import { DeliveryRequest } from './lifecycle.js';
import * as query from './query.js';
import type { CombineEntry, CompiledCombineQuery } from './query.js';
import * as reply from './wire/reply.js';
import { CC_PRIVATE, CC_SHARED, sendError, sendOverloaded, sendStarting } from './wire/reply.js';
import * as etag from './etag.js';
import { Coding, combineTag, describedTag, withMappedPart } from './etag.js';
import * as combinePlan from './combine-plan.js';
import * as plannedAnswers from './wire/planned-answer.js';
import * as combineBodies from './wire/combine-body.js';
import { keepPlan, planShapeKey, type CombinePlan, type PlanItem, type PlanTag } from './combine-plan.js';
import type { UidBlock } from './wire/header-block.js';
import { ACCEPT_BR, ACCEPT_GZIP, PREFER_BR } from './encoding.js';
import type { FrontEndState } from './state.js';

// The functions a request calls, as this module's own consts (wire/README.md, "Module consts").
const { chooseRevision, lookupContent } = directory;
const { L_FRONT_HITS, L_FRONT_MISSES } = metrics;
const { userMod, userUid } = identity;
const { combinationOfPath, evaluateMapping, evaluatePath } = mapping;
const { parseUserContext } = context;
const { frontEntryOf, pathEntryOf, rememberPathEntry } = frontCache;
const { checkPlainQuery, compiledCombineQuery, wrappedKind } = query;
const { holdConnection, sendContent, sendNotModified, sendUidContent, sendWrapped } = reply;
const { STAR_IGNORED, etagValue, itemTag, matchIfNoneMatch, withUid } = etag;
const { currentPlanOf, planMemoOf, planTagOf, planTagOfPath, rememberPlanTagPath } = combinePlan;
const { plannedAnswer } = plannedAnswers;
const { combineBody, combineGzipBody } = combineBodies;

/** The content routes, numbered as their metrics labels: a route is its own label (metricRouteOf). */
export const enum Route {
  Plain = MetricRoute.Config,
  Wrapped = MetricRoute.Dynamic,
  Combine = MetricRoute.Combine,
}

/** A content route's metrics label: the same number, without a table read per request. */
export function metricRouteOf(route: Route): MetricRoute {
  return route as number;
}

const NOT_FOUND_MESSAGE = 'content not found in this environment';

/** A content request (endpoints 1-3): one item, plain or personalised, or a combine of many. */
export class ContentRequest extends DeliveryRequest {
  declare readonly route: Route;
  declare readonly query: string;
  /** Accept-Encoding as flags (encoding.ts). */
  declare readonly accept: number;
  /**
   * For a single personalised answer, `tag` is the item's tag, to which the uid belongs (etag.ts
   * wrappedTag): the header block writes the uid's digits after it, and the whole string is built
   * only to compare it with If-None-Match.
   */
  declare tagUid: boolean;
  declare kind: JobKind;
  // Combine only: the ids found, in answer order (their keys prepared by the compiled query).
  declare entries: CombineEntry[] | null;
  declare rendered: (Rendered | null)[] | null;
  declare missing: string[] | null;

  constructor(
    state: FrontEndState,
    res: HttpResponse,
    route: Route,
    env: EnvView,
    keyId: string,
    idLower: string,
    query: string,
    ifNoneMatch: string,
    accept: number,
    origin: Uint8Array | null,
    declaredLength: boolean,
  ) {
    super(state, res, metricRouteOf(route), env, keyId, idLower, ifNoneMatch, origin, declaredLength);
    this.route = route;
    this.query = query;
    this.accept = accept;
    this.tagUid = false;
    this.kind = JobKind.Plain;
    this.entries = null;
    this.rendered = null;
    this.missing = null;
  }

  protected start(text: string): void {
    const ctx = parseUserContext(text);
    if (this.route === Route.Combine) startCombine(this, ctx);
    else startSingle(this, ctx);
  }

  protected onRendered(slot: number, rendered: Rendered | null, error: string): void {
    // Each answer from here reads the connection again (holdConnection) before it is written.
    if (rendered === null && (this.route !== Route.Combine || error !== 'content_not_found')) {
      this.res.resume();
      this.answerJobError(error, NOT_FOUND_MESSAGE);
      return;
    }
    if (this.route !== Route.Combine) {
      this.res.resume();
      answerSingle(this, rendered!);
      return;
    }
    if (rendered === null) this.missing!.push(this.entries![slot]!.id);
    this.rendered![slot] = rendered;
    if (--this.remaining === 0) {
      this.res.resume();
      answerCombine(this);
    }
  }

  protected writeError(code: ErrorCode, message: string, details: unknown, closeConnection: boolean): number {
    // 503s say when to come back (Retry-After), from answers built once.
    if (code === 'overloaded') return sendOverloaded(this.res, closeConnection, this.origin);
    if (code === 'starting') return sendStarting(this.res, closeConnection, this.origin);
    return sendError(this.res, errorResponse(code, message, details), closeConnection, this.origin);
  }
}

function startSingle(r: ContentRequest, ctx: UserContext): void {
  let kind: JobKind;
  if (r.route === Route.Plain) {
    checkPlainQuery(r.query);
    kind = JobKind.Plain;
  } else {
    // Tested here, not only inside: a call that returns at once runs too little bytecode for V8 to
    // optimize it, and ran as baseline code (~100 instructions a request, bench:cost).
    kind = r.query.length === 0 ? JobKind.Wrapped : wrappedKind(r.query);
  }
  const content = lookupContent(r.env, r.idLower);
  if (content === undefined) throw new RcdError('content_not_found', 'content not found in this environment');
  const rev = chooseRevision(content, ctx.version);
  if (rev === undefined) {
    throw new RcdError('content_not_found', `no revision of this content is available for app version ${ctx.v}`);
  }
  prepareUser(r, kind, ctx);
  let combination: Combination | null = null;
  let rulePath: Int32Array | null = null;
  let pathLength = 0;
  if (kind === JobKind.Plain) r.tag = rev.hash;
  else {
    if (content.mappingId !== 0) {
      // The rules' path first: an answer kept for it is found without its combination's objects.
      rulePath = r.state.scratch.rulePath;
      pathLength = rulePathOf(r, content, ctx, rulePath);
      const known = pathEntryOf(r.state.frontCache, kind, rev.revId, content.mappingId, rulePath, pathLength);
      if (known !== null) {
        answerKnown(r, known);
        return;
      }
      combination = combinationOfPath(content.mapping!, rulePath, pathLength);
    }
    r.tag = itemTag(kind, rev, content.mappingId, combination);
    r.tagUid = true;
  }
  if (answeredNotModified(r)) return;
  const hit = frontEntryOf(r.state.frontCache, kind, rev.revId, content.mappingId, combination);
  if (hit !== undefined) {
    if (combination !== null) rememberPathEntry(kind, rev.revId, content.mappingId, rulePath!, pathLength, hit, r.tag);
    r.state.counters[L_FRONT_HITS]! += 1;
    answerSingle(r, hit);
    return;
  }
  r.state.counters[L_FRONT_MISSES]! += 1;
  const batcher = r.state.batcher;
  if (!batcher.hasRoom(1)) {
    answerOverloaded(r);
    return;
  }
  r.outcome = Outcome.Miss;
  r.keys = [frontKeyOf(kind, rev.revId, content.mappingId, combination)];
  holdConnection(r.res);
  batcher.enqueue(missJob(kind, rev, content, combination), r, 0);
}

function startCombine(r: ContentRequest, ctx: UserContext): void {
  const q = compiledCombineQuery(r.query, r.state.config.maxCombineIds);
  prepareUser(r, q.kind, ctx);
  const memo = planMemoOf(q, ctx.version.key);
  const plan = currentPlanOf(r.state.combinePlans, memo, r.env);
  if (plan !== null && (!plan.compressible || (r.accept & ACCEPT_GZIP) === 0) && answeredByPlan(r, plan, ctx)) return;
  startCombineItems(r, q, ctx, plan === null ? memo.key : null);
}

/**
 * Whether two mapped items' combinations put the same part into a combine's tag (etag.ts: the part is
 * a function of the key). Items behind different mappings have their own combination objects, also
 * where the same rules applied: a game's contents each carry their own copy of a segment rule (the
 * bench's combine-50: five mappings of one rule), and comparing objects sent every user of that
 * segment down the per-request tag (its strings built and written byte by byte).
 */
const sameTagPart = (a: Combination | null, b: Combination | null): boolean => {
  return a === b || (a !== null && b !== null && a.key === b.key);
};

/**
 * Answers from a plan (combine-plan.ts) when every mapped item's head is a front-cache hit and the
 * answer goes out uncompressed; false (nothing written) sends the request the general way.
 */
function answeredByPlan(r: ContentRequest, plan: CombinePlan, ctx: UserContext): boolean {
  const mapped = plan.mapped;
  const gzip = (r.accept & ACCEPT_GZIP) !== 0;
  const scratch = r.state.scratch;
  const planPath = scratch.planPath;
  const combinations = scratch.planCombinations;
  let onePath = -1;
  if (plan.kind !== JobKind.Plain && mapped.length > 0) {
    // The mapped items' rule paths first: a PlanTag kept for their one path is found without their combinations.
    onePath = sharedRulePath(r, plan, ctx, scratch.rulePath, planPath);
    const known = onePath < 0 ? null : planTagOfPath(plan, planPath, onePath);
    if (known !== null) {
      if (gzip && known.compressed) return false;
      r.tag = known.tag;
      r.tagUid = true;
      return answerPlanned(r, plan, known.heads!, known.block);
    }
  }
  // The mapped items' combinations (their rules, per user), and whether they put one part into the tag.
  // Where the items share one rule path (onePath), each is that path's combination in its mapping:
  // the rules are not evaluated again.
  let uniform = true;
  let first: Combination | null = null;
  for (let k = 0; k < mapped.length; k++) {
    const content = mapped[k]!.content;
    const combination = onePath >= 0 ? combinationOfPath(content.mapping!, planPath, onePath) : combinationOf(r, plan.kind, content, ctx);
    combinations[k] = combination;
    if (k === 0) first = combination;
    else if (!sameTagPart(combination, first)) uniform = false;
  }
  // The tag before the uid, its header block and the mapped items' heads, kept for this combination.
  const planTag = plan.kind !== JobKind.Plain && uniform && (mapped.length === 0 || first !== null) ? planTagOf(plan, mapped.length === 0 ? null : first) : null;
  let heads: readonly Rendered[] = scratch.planHeads;
  if (planTag !== null && planTag.heads !== null) {
    if (gzip && planTag.compressed) return false;
    heads = planTag.heads;
  } else if (mapped.length > 0 && !plannedHeadsFound(r, plan, gzip, planTag, combinations, scratch.planHeads)) {
    return false;
  }
  let block: UidBlock | null = null;
  if (plan.kind === JobKind.Plain) {
    r.tag = plan.baseTag;
  } else if (planTag !== null) {
    r.tag = planTag.tag;
    r.tagUid = true;
    block = planTag.block;
    // One combination for all mapped items is one rule path (a key names its path): filed by it.
    if (planTag.heads !== null && mapped.length > 0 && onePath >= 0) rememberPlanTagPath(plan, planPath, onePath, planTag);
  } else {
    let parts = '';
    for (let k = 0; k < mapped.length; k++) parts = withMappedPart(parts, k, combinations[k]!);
    r.tag = combineTag(plan.baseTag, plan.kind, r.uid, parts, mapped.length);
  }
  return answerPlanned(r, plan, heads, block);
}

/**
 * The rule path every mapped item of a dynamic plan selected for this user, copied into `planPath`;
 * returns its length, or -1 when the items' paths differ or it is longer than the path table keeps.
 * `rulePath` receives each evaluation. Consecutive items of one mapping are evaluated once.
 */
function sharedRulePath(r: ContentRequest, plan: CombinePlan, ctx: UserContext, rulePath: Int32Array, planPath: Int32Array): number {
  const mapped = plan.mapped;
  let last: ContentView | null = null;
  let length = -1;
  for (let k = 0; k < mapped.length; k++) {
    const content = mapped[k]!.content;
    if (last !== null && content.mapping === last.mapping) continue;
    last = content;
    const n = rulePathOf(r, content, ctx, rulePath);
    if (length < 0) {
      length = n;
      if (n > planPath.length) return -1;
      for (let i = 0; i < n; i++) planPath[i] = rulePath[i]!;
    } else if (n !== length || !samePath(rulePath, planPath, n)) {
      return -1;
    }
  }
  return length;
}

/** Whether the first `length` edges of two rule paths are the same. */
const samePath = (a: Int32Array, b: Int32Array, length: number): boolean => {
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return false;
  return true;
};

/** The rest of an answer from a plan, once its tag and heads are known: 304, or the planned bytes. */
function answerPlanned(r: ContentRequest, plan: CombinePlan, heads: readonly Rendered[], block: UidBlock | null): boolean {
  if (answeredNotModified(r)) return true;
  r.state.counters[L_FRONT_HITS]! += plan.found;
  let body: Uint8Array;
  const steps = plan.steps;
  if (steps.length === 1 && steps[0]! >= 0) {
    // Nothing per user (a plain combine): the plan's bytes are the answer.
    body = plan.statics[steps[0]!]!;
  } else {
    body = plannedAnswer(plan, r.uid, r.mod, heads);
  }
  if (block === null) {
    sendCombine(r, body, Coding.Identity, plan.missingHeader);
    return true;
  }
  r.writing = true;
  r.answeredBytes = sendUidContent(r.res, r.state.http, body, block, r.tag, r.uid, cacheControlOf(r), plan.missingHeader === '' ? '' : H_MISSING_CONTENT, plan.missingHeader, r.origin, r.state.shuttingDown);
  r.finish();
  return true;
}

/**
 * The plan's mapped items' heads from the front cache, for their `combinations`, into `heads`; false
 * when one is missing or (for a gzip client) has a gzip form. Kept on `planTag` when given, for the
 * next answer of that combination.
 */
function plannedHeadsFound(r: ContentRequest, plan: CombinePlan, gzip: boolean, planTag: PlanTag | null, combinations: readonly (Combination | null)[], heads: Rendered[]): boolean {
  const mapped = plan.mapped;
  const cache = r.state.frontCache;
  let compressed = false;
  for (let k = 0; k < mapped.length; k++) {
    const m = mapped[k]!;
    const hit = cache.get(frontKeyOf(plan.kind, m.rev.revId, m.content.mappingId, combinations[k] ?? null));
    if (hit === undefined) return false;
    if (hit.gzPart !== null) {
      if (gzip) return false;
      compressed = true;
    }
    heads[k] = hit;
  }
  if (planTag !== null) {
    planTag.heads = heads.slice(0, mapped.length);
    planTag.compressed = compressed;
  }
  return true;
}

/**
 * A combine item by item: directory, revision, rules, front cache, the pool for what it misses.
 * `planKey` (when no current plan exists) asks for a plan to be built once every item was a hit.
 */
function startCombineItems(r: ContentRequest, q: CompiledCombineQuery, ctx: UserContext, planKey: string | null): void {
  const contents = r.env.contents;
  const cache = r.state.frontCache;
  const found: CombineEntry[] = [];
  const keys: FrontKey[] = [];
  const rendered: (Rendered | null)[] = [];
  const missing: string[] = [];
  const jobs: Job[] = [];
  const slots: number[] = [];
  const planItems: PlanItem[] | null = planKey === null ? null : [];
  // What the plan would be made of (combine-plan.ts keepPlan): the revision of each id, '-' for none.
  let revisions = '';
  // The answer's description for its tag (etag.ts combineTag): the kind, each id as written
  // (length-prefixed: ids may hold any character) and each item's parts but its rule combination,
  // which goes into the per-request part with the uid.
  let description = q.kind === JobKind.Plain ? 'p' : q.kind === JobKind.Wrapped ? 'w' : 's';
  let mappedParts = '';
  let mappedCount = 0;
  const entries = q.entries;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const content = contents.get(entry.lookup);
    const rev = content === undefined ? undefined : chooseRevision(content, ctx.version);
    if (content === undefined || rev === undefined) {
      missing.push(entry.id);
      description += entry.tagPrefix;
      if (planItems !== null) revisions += '-,';
      continue;
    }
    if (planItems !== null) revisions += rev.revId + ',';
    const combination = combinationOf(r, q.kind, content, ctx);
    const mapped = q.kind !== JobKind.Plain && content.mappingId !== 0;
    description += entry.tagPrefix + itemTag(q.kind, rev, content.mappingId, null);
    if (mapped) mappedParts = withMappedPart(mappedParts, mappedCount++, combination);
    const key = frontKeyOf(q.kind, rev.revId, content.mappingId, combination);
    const hit = cache.get(key);
    if (hit === undefined) {
      jobs.push(missJob(q.kind, rev, content, combination));
      slots.push(found.length);
    } else if (planItems !== null) {
      planItems.push({ entry, content, rev, mapped, rendered: hit });
    }
    found.push(entry);
    keys.push(key);
    rendered.push(hit ?? null);
  }
  r.entries = found;
  r.keys = keys;
  r.rendered = rendered;
  r.missing = missing;
  r.remaining = jobs.length;
  const baseTag = describedTag(description);
  r.tag = combineTag(baseTag, q.kind, r.uid, mappedParts, mappedCount);
  if (planKey !== null && jobs.length === 0) {
    keepPlan(r.state.combinePlans, planKey, planShapeKey(q, revisions), r.env, q.kind, planItems!, baseTag, missingHeaderOf(missing));
  }
  if (answeredNotModified(r)) return;
  const counters = r.state.counters;
  counters[L_FRONT_MISSES]! += jobs.length;
  counters[L_FRONT_HITS]! += found.length - jobs.length;
  if (jobs.length === 0) {
    answerCombine(r);
    return;
  }
  const batcher = r.state.batcher;
  if (!batcher.hasRoom(jobs.length)) {
    answerOverloaded(r);
    return;
  }
  r.outcome = Outcome.Miss;
  holdConnection(r.res);
  for (let i = 0; i < jobs.length; i++) batcher.enqueue(jobs[i]!, r, slots[i]!);
}

/** uid and mod for wrapped kinds (the per-user tail); plain answers do not depend on the user. */
const prepareUser = (r: ContentRequest, kind: JobKind, ctx: UserContext): void => {
  r.kind = kind;
  if (kind === JobKind.Plain) return;
  r.uid = userUid(ctx.u);
  r.mod = userMod(r.uid);
};

/**
 * The item's combination of applied rules; null for plain answers and content without a mapping. The
 * mapping's rules are evaluated here, per user, in the front end.
 */
const combinationOf = (r: ContentRequest, kind: JobKind, content: ContentView, ctx: UserContext): Combination | null => {
  if (kind === JobKind.Plain || content.mappingId === 0) return null;
  if (content.mappingBroken) throw brokenMapping(content);
  const mapping = content.mapping!;
  if (mapping === r.evaluatedMapping) return r.evaluated;
  const combination = evaluateMapping(mapping, ctx.p, ctx.version, r.mod);
  r.evaluatedMapping = mapping;
  r.evaluated = combination;
  return combination;
};

/** Evaluates a mapped item's rules for this user into `out`; returns the path's length. */
const rulePathOf = (r: ContentRequest, content: ContentView, ctx: UserContext, out: Int32Array): number => {
  if (content.mappingBroken) throw brokenMapping(content);
  return evaluatePath(content.mapping!, ctx.p, ctx.version, r.mod, out);
};

/** A mapped item whose mapping did not compile: an internal error (500), the log says which. */
function brokenMapping(content: ContentView): Error {
  return new Error(`mapping ${content.mappingId} of "${content.id}" cannot be compiled`);
}

/** A wrapped item's answer from the entry kept for its rule path (pathEntryOf), or 304. */
const answerKnown = (r: ContentRequest, entry: Rendered): void => {
  r.tag = entry.pathTag;
  r.tagUid = true;
  if (answeredNotModified(r)) return;
  r.state.counters[L_FRONT_HITS]! += 1;
  answerSingle(r, entry);
};

/** The pool job that renders an item the front cache does not hold. */
export function missJob(kind: JobKind, rev: RevisionView, content: ContentView, combination: Combination | null): Job {
  return { kind, revId: rev.revId, mappingId: combination === null ? 0 : content.mappingId, comboKey: combination === null ? '' : combination.key };
}

/** Cache-Control of the answer: personalised answers (they carry meta.uid) are private. */
const cacheControlOf = (r: ContentRequest): Uint8Array => {
  return r.kind === JobKind.Plain ? CC_SHARED : CC_PRIVATE;
};

/**
 * 304 when If-None-Match names the answer's tag (r.tag) in any coding; returns whether it answered.
 * POST included, on purpose: these POSTs read (the body is the user context, nothing changes), so a
 * client revalidates them as a GET (docs/api.md, "Conditional requests"); `*` names no copy, and is
 * ignored.
 */
const answeredNotModified = (r: ContentRequest): boolean => {
  // Tested here, not only inside: a call that returns at once runs too little bytecode for V8 to
  // compile it soon, and ran interpreted (~230 instructions per request under bench:cost).
  if (r.ifNoneMatch.length === 0) return false;
  const tag = r.tagUid ? withUid(r.tag, r.uid) : r.tag;
  const coding = matchIfNoneMatch(r.ifNoneMatch, tag, STAR_IGNORED);
  if (coding === -1) return false;
  r.writing = true;
  r.answeredBytes = sendNotModified(r.res, r.state.http, etagValue(tag, coding), cacheControlOf(r), r.origin, r.state.shuttingDown);
  r.status = 304;
  r.outcome = Outcome.NotModified;
  r.finish();
  return true;
};

/** 503 overloaded: the pool's pending-job bound is reached. */
function answerOverloaded(r: ContentRequest): void {
  r.answerError('overloaded', 'the server is at capacity; retry shortly', false);
}

/** The coding a single item goes out in: what the client accepts among what was compressed for it. */
const codingOf = (accept: number, item: Rendered): Coding => {
  // The client's flags first: one that takes no compression reads nothing of the entry here.
  if ((accept & ACCEPT_BR) !== 0 && item.br !== null && ((accept & PREFER_BR) !== 0 || (accept & ACCEPT_GZIP) === 0)) return Coding.Br;
  if ((accept & ACCEPT_GZIP) !== 0 && item.gzip !== null) return Coding.Gzip;
  return Coding.Identity;
};

const answerSingle = (r: ContentRequest, item: Rendered): void => {
  r.writing = true;
  const coding = codingOf(r.accept, item);
  const http = r.state.http;
  if (r.kind === JobKind.Plain) {
    const body = coding === Coding.Identity ? item.head : coding === Coding.Gzip ? item.gzip! : item.br!;
    r.answeredBytes = sendContent(r.res, http, body, coding, r.tag, CC_SHARED, '', '', r.origin, r.state.shuttingDown);
  } else {
    // Workers keep no brotli for tail-bearing heads (a brotli stream is not appended to), so codingOf
    // gave gzip or identity here.
    r.answeredBytes = sendWrapped(r.res, http, item, r.uid, r.mod, coding, r.tag, r.origin, r.state.shuttingDown);
  }
  r.finish();
};

const H_MISSING_CONTENT = 'x-missing-content';

/** X-Missing-Content's value: the ids not found, URL-encoded, comma-separated ("" when none). */
function missingHeaderOf(missing: readonly string[]): string {
  return missing.length === 0 ? '' : missing.map(encodeURIComponent).join(',');
}

// The combine body is assembled into one buffer and written once: writing each entry's pieces
// separately cost ~4 uWS calls per id, which dominated a 10-id answer (bench: combine).
function answerCombine(r: ContentRequest): void {
  // Everything that can fail is computed before the first byte is written.
  const missingHeader = missingHeaderOf(r.missing!);
  const gzipped = (r.accept & ACCEPT_GZIP) !== 0 && combineWorthGzip(r);
  const body = gzipped ? combineGzipBody(r.entries!, r.rendered!, r.kind !== JobKind.Plain, r.uid, r.mod) : combineBody(r.entries!, r.rendered!, r.kind !== JobKind.Plain, r.uid, r.mod);
  sendCombine(r, body, gzipped ? Coding.Gzip : Coding.Identity, missingHeader);
}

/** A combine's 200 (from a plan or assembled item by item), with X-Missing-Content when ids were not found. */
function sendCombine(r: ContentRequest, body: Uint8Array, coding: Coding, missingHeader: string): void {
  r.writing = true;
  r.answeredBytes = sendContent(r.res, r.state.http, body, coding, r.tag, cacheControlOf(r), missingHeader === '' ? '' : H_MISSING_CONTENT, missingHeader, r.origin, r.state.shuttingDown);
  r.finish();
}

/**
 * A combine is sent gzip when one of its items was compressed (at least --compress-min-bytes): those
 * go in as compressed, everything else (keys, braces, small items, per-user tails) in stored blocks.
 * With no compressed item the stored blocks would only add bytes.
 */
function combineWorthGzip(r: ContentRequest): boolean {
  const rendered = r.rendered!;
  for (let i = 0; i < rendered.length; i++) {
    const item = rendered[i];
    if (item !== null && item !== undefined && item.gzPart !== null) return true;
  }
  return false;
}
