/**
 * A combine (endpoint 3): many ids in one answer. A combine asked before is answered from its plan
 * (combine-plan.ts) when every mapped item's entry is at hand; otherwise item by item through the
 * front cache and the pool, and a plan is kept once every item was a hit.
 *
 * HOT PATH.
 */
import * as directory from './directory.js';
import type { ContentView } from './directory.js';
import * as metrics from '../metrics/layout.js';
import * as mapping from '../mapping/index.js';
import type { Combination } from '../mapping/index.js';
import { JobKind, type Job } from '../pool/protocol.js';
import type { UserContext } from './context.js';
import { frontKeyOf, type FrontKey, type Rendered } from './front-cache.js';
import * as query from './query.js';
import type { CombineEntry, CompiledCombineQuery } from './query.js';
import * as reply from './wire/reply.js';
import * as etag from './etag.js';
import { Coding, combineTag, describedTag, withMappedPart } from './etag.js';
import * as combinePlan from './combine-plan.js';
import * as plannedAnswers from './wire/planned-answer.js';
import * as combineBodies from './wire/combine-body.js';
import { keepPlan, planShapeKey, type CombinePlan, type PlanItem, type PlanTag } from './combine-plan.js';
import type { UidBlock } from './wire/header-block.js';
import { ACCEPT_GZIP } from './encoding.js';
import type { ContentFields } from './content-fields.js';
import * as contentAnswer from './content-answer.js';
import * as exposureNotes from './exposure-notes.js';

// The functions a request calls, as this module's own consts (wire/README.md, "Module consts").
const { chooseRevision } = directory;
const { L_FRONT_HITS } = metrics;
const { combinationOfPath } = mapping;
const { compiledCombineQuery } = query;
const { sendContent, sendUidContent } = reply;
const { itemTag } = etag;
const { currentPlanOf, planMemoOf, planTagOf, planTagOfPath, rememberPlanTagPath } = combinePlan;
const { plannedAnswer } = plannedAnswers;
const { combineBody, combineGzipBody } = combineBodies;
const { answeredNotModified, cacheControlOf, combinationOf, missJob, prepareUser, rulePathOf } = contentAnswer;
const { noteCombinationExposures, notePlanExposures, notePlanPathExposures } = exposureNotes;

export function startCombine(r: ContentFields, ctx: UserContext): void {
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
 * where the same rules applied: a game's contents each carry their own copy of a segment rule, and
 * comparing objects would send every user of that segment down the per-request tag (its strings
 * built and written byte by byte).
 */
const sameTagPart = (a: Combination | null, b: Combination | null): boolean => {
  return a === b || (a !== null && b !== null && a.key === b.key);
};

/**
 * Answers from a plan (combine-plan.ts) when every mapped item's head is a front-cache hit and the
 * answer goes out uncompressed; false (nothing written) sends the request the general way.
 */
function answeredByPlan(r: ContentFields, plan: CombinePlan, ctx: UserContext): boolean {
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
      const exposures = r.state.exposures;
      if (exposures !== null) notePlanPathExposures(exposures, r, plan, planPath, onePath, ctx);
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
  const exposures = r.state.exposures;
  if (exposures !== null) notePlanExposures(exposures, r, plan, combinations, ctx);
  return answerPlanned(r, plan, heads, block);
}

/**
 * The rule path every mapped item of a dynamic plan selected for this user, copied into `planPath`;
 * returns its length, or -1 when the items' paths differ or it is longer than the path table keeps.
 * `rulePath` receives each evaluation. Consecutive items of one mapping are evaluated once.
 */
function sharedRulePath(r: ContentFields, plan: CombinePlan, ctx: UserContext, rulePath: Int32Array, planPath: Int32Array): number {
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
function answerPlanned(r: ContentFields, plan: CombinePlan, heads: readonly Rendered[], block: UidBlock | null): boolean {
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
function plannedHeadsFound(r: ContentFields, plan: CombinePlan, gzip: boolean, planTag: PlanTag | null, combinations: readonly (Combination | null)[], heads: Rendered[]): boolean {
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
function startCombineItems(r: ContentFields, q: CompiledCombineQuery, ctx: UserContext, planKey: string | null): void {
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
  const exposures = r.state.exposures;
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
    if (mapped && exposures !== null) noteCombinationExposures(exposures, r, content, combination!, ctx);
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
  r.settleLookups(found.length, jobs, slots);
}

const H_MISSING_CONTENT = 'x-missing-content';

/** X-Missing-Content's value: the ids not found, URL-encoded, comma-separated ("" when none). */
function missingHeaderOf(missing: readonly string[]): string {
  return missing.length === 0 ? '' : missing.map(encodeURIComponent).join(',');
}

// The combine body is assembled into one buffer and written once: writing each entry's pieces
// separately would cost several uWS calls per id.
export function answerCombine(r: ContentFields): void {
  // Everything that can fail is computed before the first byte is written.
  const missingHeader = missingHeaderOf(r.missing!);
  const gzipped = (r.accept & ACCEPT_GZIP) !== 0 && combineWorthGzip(r);
  const body = gzipped ? combineGzipBody(r.entries!, r.rendered!, r.kind !== JobKind.Plain, r.uid, r.mod) : combineBody(r.entries!, r.rendered!, r.kind !== JobKind.Plain, r.uid, r.mod);
  sendCombine(r, body, gzipped ? Coding.Gzip : Coding.Identity, missingHeader);
}

/** A combine's 200 (from a plan or assembled item by item), with X-Missing-Content when ids were not found. */
function sendCombine(r: ContentFields, body: Uint8Array, coding: Coding, missingHeader: string): void {
  r.writing = true;
  r.answeredBytes = sendContent(r.res, r.state.http, body, coding, r.tag, cacheControlOf(r), missingHeader === '' ? '' : H_MISSING_CONTENT, missingHeader, r.origin, r.state.shuttingDown);
  r.finish();
}

/**
 * A combine is sent gzip when one of its items was compressed (at least --compress-min-bytes): those
 * go in as compressed, everything else (keys, braces, small items, per-user tails) in stored blocks.
 * With no compressed item the stored blocks would only add bytes.
 */
function combineWorthGzip(r: ContentFields): boolean {
  const rendered = r.rendered!;
  for (let i = 0; i < rendered.length; i++) {
    const item = rendered[i];
    if (item !== null && item !== undefined && item.gzPart !== null) return true;
  }
  return false;
}
