/**
 * What single and combine answers share: the user's uid and mod, a mapped item's rules, the pool
 * job of a miss, Cache-Control and the 304 test.
 *
 * HOT PATH.
 */
import type { ContentView, RevisionView } from './directory.js';
import { Outcome } from '../metrics/layout.js';
import * as identity from '../shared/identity.js';
import * as mapping from '../mapping/index.js';
import type { Combination } from '../mapping/index.js';
import { JobKind, type Job } from '../pool/protocol.js';
import type { UserContext } from './context.js';
import * as reply from './wire/reply.js';
import { CC_PRIVATE, CC_SHARED } from './wire/header-values.js';
import * as etag from './etag.js';
import type { ContentFields } from './content-fields.js';

// The functions a request calls, as this module's own consts (wire/README.md, "Module consts").
const { userMod, userUid } = identity;
const { evaluateMapping, evaluatePath } = mapping;
const { sendNotModified } = reply;
const { STAR_IGNORED, etagValue, matchIfNoneMatch, withUid } = etag;

/** uid and mod for wrapped kinds (the per-user tail); plain answers do not depend on the user. */
export const prepareUser = (r: ContentFields, kind: JobKind, ctx: UserContext): void => {
  r.kind = kind;
  if (kind === JobKind.Plain) return;
  r.uid = userUid(ctx.u);
  r.mod = userMod(r.uid);
};

/**
 * The item's combination of applied rules; null for plain answers and content without a mapping. The
 * mapping's rules are evaluated here, per user, in the front end.
 */
export const combinationOf = (r: ContentFields, kind: JobKind, content: ContentView, ctx: UserContext): Combination | null => {
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
export const rulePathOf = (r: ContentFields, content: ContentView, ctx: UserContext, out: Int32Array): number => {
  if (content.mappingBroken) throw brokenMapping(content);
  return evaluatePath(content.mapping!, ctx.p, ctx.version, r.mod, out);
};

/** A mapped item whose mapping did not compile: an internal error (500), the log says which. */
export function brokenMapping(content: ContentView): Error {
  return new Error(`mapping ${content.mappingId} of "${content.id}" cannot be compiled`);
}

/** The pool job that renders an item the front cache does not hold. */
export function missJob(kind: JobKind, rev: RevisionView, content: ContentView, combination: Combination | null): Job {
  return { kind, revId: rev.revId, mappingId: combination === null ? 0 : content.mappingId, comboKey: combination === null ? '' : combination.key };
}

/** Cache-Control of the answer: personalised answers (they carry meta.uid) are private. */
export const cacheControlOf = (r: ContentFields): Uint8Array => {
  return r.kind === JobKind.Plain ? CC_SHARED : CC_PRIVATE;
};

/**
 * 304 when If-None-Match names the answer's tag (r.tag) in any coding; returns whether it answered.
 * POST included, on purpose: these POSTs read (the body is the user context, nothing changes), so a
 * client revalidates them as a GET (docs/api.md, "Conditional requests"); `*` names no copy, and is
 * ignored.
 */
export const answeredNotModified = (r: ContentFields): boolean => {
  // Tested here, not only inside: a call that returns at once runs too little bytecode for V8 to
  // compile it soon, and would run interpreted.
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

