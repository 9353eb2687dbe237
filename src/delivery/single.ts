/**
 * A single item asked for (endpoint 1: plain; endpoint 2: wrapped or serialized): its revision for
 * the app version, its rules for this user, then the answer kept for their path, the front cache's
 * entry, or a pool job.
 *
 * HOT PATH.
 */
import * as directory from './directory.js';
import { RcdError } from '../runtime/errors.js';
import * as metrics from '../metrics/layout.js';
import * as mapping from '../mapping/index.js';
import type { Combination } from '../mapping/index.js';
import { JobKind } from '../pool/protocol.js';
import type { UserContext } from './context.js';
import * as frontCache from './front-cache.js';
import { frontKeyOf, type Rendered } from './front-cache.js';
import * as query from './query.js';
import * as reply from './wire/reply.js';
import { CC_SHARED } from './wire/header-values.js';
import * as etag from './etag.js';
import { Coding } from './etag.js';
import { ACCEPT_BR, ACCEPT_GZIP, PREFER_BR } from './encoding.js';
import { Route, type ContentFields } from './content-fields.js';
import * as contentAnswer from './content-answer.js';
import * as exposureNotes from './exposure-notes.js';

// The functions a request calls, as this module's own consts (wire/README.md, "Module consts").
const { chooseRevision, lookupContent } = directory;
const { L_FRONT_HITS, L_FRONT_MISSES } = metrics;
const { combinationOfPath } = mapping;
const { frontEntryOf, pathEntryOf, rememberPathEntry } = frontCache;
const { checkPlainQuery, wrappedKind } = query;
const { sendContent, sendWrapped } = reply;
const { itemTag } = etag;
const { answeredNotModified, missJob, prepareUser, rulePathOf } = contentAnswer;
const { notePathExposures } = exposureNotes;

export function startSingle(r: ContentFields, ctx: UserContext): void {
  let kind: JobKind;
  if (r.route === Route.Plain) {
    checkPlainQuery(r.query);
    kind = JobKind.Plain;
  } else {
    // Tested here, not only inside: a call that returns at once runs too little bytecode for V8 to
    // optimize it, and would run as baseline code.
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
      const exposures = r.state.exposures;
      if (exposures !== null) notePathExposures(exposures, r, content, rulePath, pathLength, ctx);
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
  r.renderMiss(missJob(kind, rev, content, combination), frontKeyOf(kind, rev.revId, content.mappingId, combination));
}

/** The coding a single item goes out in: what the client accepts among what was compressed for it. */
const codingOf = (accept: number, item: Rendered): Coding => {
  // The client's flags first: one that takes no compression reads nothing of the entry here.
  if ((accept & ACCEPT_BR) !== 0 && item.br !== null && ((accept & PREFER_BR) !== 0 || (accept & ACCEPT_GZIP) === 0)) return Coding.Br;
  if ((accept & ACCEPT_GZIP) !== 0 && item.gzip !== null) return Coding.Gzip;
  return Coding.Identity;
};

export const answerSingle = (r: ContentFields, item: Rendered): void => {
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


/** A wrapped item's answer from the entry kept for its rule path (pathEntryOf), or 304. */
const answerKnown = (r: ContentFields, entry: Rendered): void => {
  r.tag = entry.pathTag;
  r.tagUid = true;
  if (answeredNotModified(r)) return;
  r.state.counters[L_FRONT_HITS]! += 1;
  answerSingle(r, entry);
};

