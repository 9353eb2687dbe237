/**
 * What a content request means (endpoints 1-3): which item or items, which revision, which rules
 * apply to this user, which front-cache entries or combine plan answer it, and whether the client's
 * copy is current (304). The request's life (body, abort, pool, failure, metrics) is lifecycle.ts's;
 * the bytes of every answer are written below the line, in wire/.
 *
 * HOT PATH: change with care.
 */
import type { HttpResponse } from 'uWebSockets.js';
import type { EnvView } from './directory.js';
import { errorResponse, type ErrorCode } from '../runtime/errors.js';
import { MetricRoute } from '../metrics/layout.js';
import { JobKind } from '../pool/protocol.js';
import * as context from './context.js';
import { type Rendered } from './front-cache.js';
import { DeliveryRequest } from './lifecycle.js';
import type { CombineEntry } from './query.js';
import { sendError, sendOverloaded, sendStarting } from './wire/error-answers.js';
import type { FrontEndState } from './state.js';
import { Route } from './content-fields.js';
import * as single from './single.js';
import * as combine from './combine.js';

// The functions a request calls, as this module's own consts (wire/README.md, "Module consts").
const { parseUserContext } = context;
const { answerSingle, startSingle } = single;
const { answerCombine, startCombine } = combine;

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
    super(state, res, metricRouteOf(route), env, keyId, idLower, route === Route.Combine, ifNoneMatch, origin, declaredLength);
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

  protected answerOne(rendered: Rendered): void {
    answerSingle(this, rendered);
  }

  protected keepItem(slot: number, rendered: Rendered | null): void {
    if (rendered === null) this.missing!.push(this.entries![slot]!.id);
    this.rendered![slot] = rendered;
  }

  protected notFoundMessage(): string {
    return NOT_FOUND_MESSAGE;
  }

  protected writeError(code: ErrorCode, message: string, details: unknown, closeConnection: boolean): number {
    // 503s say when to come back (Retry-After), from answers built once.
    if (code === 'overloaded') return sendOverloaded(this.res, closeConnection, this.origin);
    if (code === 'starting') return sendStarting(this.res, closeConnection, this.origin);
    return sendError(this.res, errorResponse(code, message, details), closeConnection, this.origin);
  }

  protected answerFound(): void {
    answerCombine(this);
  }

  protected answerPoolFull(): void {
    this.answerError('overloaded', 'the server is at capacity; retry shortly', false);
  }
}

