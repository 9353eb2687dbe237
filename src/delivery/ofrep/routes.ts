/**
 * The OpenFeature Remote Evaluation Protocol routes (OFREP 0.3.0, docs/openfeature.md) on a delivery
 * app: `POST /ofrep/v1/evaluate/flags/{key}` (one flag) and `POST /ofrep/v1/evaluate/flags` (every
 * flag of the key's environment). Checks run in the native order (docs/api.md): route and method →
 * key (401) → Content-Type (400) → body size (413) → JSON and context (400) → content lookup (404);
 * every error answers the OFREP body with rcd's code beside it (errors.ts).
 *
 * The key comes in X-Api-Key (the OFREP specification's ApiKeyAuth) or as `Authorization: Bearer
 * <key>` (its BearerAuth); X-Api-Key wins when both are sent. A key the directory does not hold
 * answers 401 (403 is never sent: a valid key reads everything in its environment).
 *
 * HOT PATH: everything needed from `req` is read synchronously here.
 */
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { KeyView } from '../directory.js';
import { contentIdKey } from '../../store/ids.js';
import { corsOriginFor } from '../http-policy.js';
import { declaredOver, headOf, isJsonContentType, runHandler } from '../routes.js';
import { declaresBodyLength, type RequestHead } from '../wire/request-head.js';
import type { FrontEndState } from '../state.js';
import { MetricRoute, Outcome, Phase, S_PHASE, countRequest } from '../../metrics/layout.js';
import { ERROR_STATUS, type ErrorCode } from '../../runtime/errors.js';
import { EMPTY_OFREP_BODY } from './context.js';
import { sendOfrepError } from './errors.js';
import { OfrepRequest, OfrepRoute } from './request.js';
import { noteKeyUse } from '../key-use.js';

export const BULK_PATH = '/ofrep/v1/evaluate/flags';
const FLAG_PREFIX = BULK_PATH + '/';

const BEARER = /^bearer[ \t]+/i;

/** The key as presented: X-Api-Key, else the token of `Authorization: Bearer`, else "". */
function presentedKey(head: RequestHead): string {
  const key = head.apiKey;
  if (key !== '') return key;
  const auth = head.authorization;
  if (auth === '') return '';
  const scheme = BEARER.exec(auth);
  return scheme === null ? '' : auth.slice(scheme[0].length).trim();
}

function refuse(state: FrontEndState, res: HttpResponse, key: string | null, origin: Uint8Array | null, route: MetricRoute, code: ErrorCode, message: string): void {
  sendOfrepError(res, key, code, message, state.shuttingDown, origin);
  countRequest(state.counters, route, ERROR_STATUS[code], Outcome.None);
}

/** Key then Content-Type; answers and returns undefined when either fails. `flag` is echoed in the error body. */
function authorize(state: FrontEndState, res: HttpResponse, head: RequestHead, origin: Uint8Array | null, route: MetricRoute, flag: string | null): KeyView | undefined {
  const key = presentedKey(head);
  if (key === '') {
    refuse(state, res, flag, origin, route, 'missing_api_key', 'an API key is required: X-Api-Key: <key> or Authorization: Bearer <key>');
    return undefined;
  }
  const directory = state.directory;
  const view = key === directory.lastKey ? directory.lastView : directory.lookupKey(key);
  if (view === undefined) {
    // While starting, an unknown key may only not be loaded yet: a client retries a 503, not a 401.
    if (state.server[S_PHASE] === Phase.Starting) refuse(state, res, flag, origin, route, 'starting', 'the server is starting: its keys and content may not all be loaded yet; retry shortly');
    else refuse(state, res, flag, origin, route, 'invalid_api_key', 'the API key is unknown or revoked');
    return undefined;
  }
  if (!isJsonContentType(head.contentType)) {
    refuse(state, res, flag, origin, route, 'unsupported_content_type', 'Content-Type must be application/json');
    return undefined;
  }
  noteKeyUse(state.keyUse, view);
  return view;
}

function evaluate(state: FrontEndState, res: HttpResponse, req: HttpRequest, route: OfrepRoute): void {
  const head = headOf(state, res, req, true);
  if (head === null) return;
  const origin = corsOriginFor(state.http, head.origin);
  const metric = route === OfrepRoute.Flag ? MetricRoute.OfrepFlag : MetricRoute.OfrepBulk;
  let flag: string | null = null;
  let idLower = '';
  if (route === OfrepRoute.Flag) {
    // The key is the rest of the path, so an id holding `/` may be sent as it is (the Node provider
    // does not encode keys) or percent-encoded (the web provider does).
    flag = req.getUrl().slice(FLAG_PREFIX.length);
    if (flag.indexOf('%') === -1) idLower = contentIdKey(flag);
    else {
      try {
        flag = decodeURIComponent(flag);
        idLower = contentIdKey(flag);
      } catch {
        // Left "", which no content id is (ids have 1..256 characters): FLAG_NOT_FOUND, echoing the key as sent.
      }
    }
  }
  const view = authorize(state, res, head, origin, metric, flag);
  if (view === undefined) return;
  const maxBody = state.http.maxBodyBytes;
  const declared = head.contentLength;
  if (declared !== '' && declaredOver(declared, maxBody)) {
    // Refuse before reading a byte; close since the client is about to send the body anyway.
    sendOfrepError(res, flag, 'payload_too_large', `the request body exceeds ${maxBody} bytes`, true, origin);
    countRequest(state.counters, metric, ERROR_STATUS.payload_too_large, Outcome.None);
    return;
  }
  if (declared === '0' || (declared === '' && head.transferEncoding === '')) {
    // No body to wait for: uWS calls no data handler for an empty body whose head came in pieces.
    refuse(state, res, flag, origin, metric, 'invalid_json', EMPTY_OFREP_BODY);
    return;
  }
  const r = new OfrepRequest(state, res, route, view.env, view.keyId, flag, idLower, head.ifNoneMatch, origin, declaresBodyLength(head));
  res.onAborted(() => r.onAborted());
  res.onData((chunk, isLast) => r.onChunk(chunk, isLast));
}

type Handler = (res: HttpResponse, req: HttpRequest) => void;

/**
 * Registers the OFREP routes on `app`. `postOnly` and `preflight` are the app's own handlers for
 * another method and for OPTIONS (405 with Allow, or the CORS preflight).
 */
export function addOfrepRoutes(app: TemplatedApp, state: FrontEndState, postOnly: Handler, preflight: Handler): void {
  const flag = (res: HttpResponse, req: HttpRequest): void => runHandler(evaluate, OfrepRoute.Flag, state, res, req);
  const bulk = (res: HttpResponse, req: HttpRequest): void => runHandler(evaluate, OfrepRoute.Bulk, state, res, req);
  // The bulk path with and without a trailing slash; any longer path is a flag key (uWS prefers the
  // exact routes over the wildcard).
  for (const path of [BULK_PATH, FLAG_PREFIX]) app.post(path, bulk).any(path, postOnly).options(path, preflight);
  app.post(FLAG_PREFIX + '*', flag).any(FLAG_PREFIX + '*', postOnly).options(FLAG_PREFIX + '*', preflight);
}
