/**
 * Error answers of the OFREP routes: the bodies the OFREP specification defines (`errorCode`,
 * `errorDetails`; `key` on a single-flag evaluation) with rcd's own error envelope beside them, so a
 * client matches the same stable code (`error.code`) on every rcd route:
 *
 *   {"key":"Shop","errorCode":"FLAG_NOT_FOUND","errorDetails":"…","error":{"status":404,"code":"content_not_found","message":"…"}}
 *
 * rcd's code decides the OFREP errorCode (errorCodeOf). The part after the key is built once per
 * (code, message) and kept, as errors.ts keeps its bodies: bad clients retry at full rate.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { ERROR_STATUS, errorResponse, statusLine, type ErrorCode } from '../../runtime/errors.js';
import { send } from '../wire/reply.js';
import { H_RETRY_AFTER } from '../wire/header-names.js';

/** The OpenFeature error codes an OFREP answer carries (OFREP 0.3.0, evaluationFailure and flagNotFound). */
export type OfrepErrorCode = 'FLAG_NOT_FOUND' | 'PARSE_ERROR' | 'TARGETING_KEY_MISSING' | 'INVALID_CONTEXT' | 'GENERAL';

/** rcd's code → the OpenFeature code an SDK maps to its error (FlagNotFoundError, ParseError, …). */
export function errorCodeOf(code: ErrorCode): OfrepErrorCode {
  switch (code) {
    case 'content_not_found':
      return 'FLAG_NOT_FOUND';
    case 'invalid_json':
      return 'PARSE_ERROR';
    case 'invalid_body':
      return 'INVALID_CONTEXT';
    case 'targeting_key_missing':
      return 'TARGETING_KEY_MISSING';
    default:
      return 'GENERAL';
  }
}

/** `"errorCode":…,"errorDetails":…,"error":{…}}`: everything after the opening brace (and the key). */
const tails = new Map<string, string>();
const TAILS_LIMIT = 1024;

function tailOf(code: ErrorCode, message: string): string {
  const cacheKey = code + '\0' + message;
  let tail = tails.get(cacheKey);
  if (tail === undefined) {
    // errorResponse's body is `{"error":{…}}`: its members follow ours.
    tail = `"errorCode":"${errorCodeOf(code)}","errorDetails":${JSON.stringify(message)},` + errorResponse(code, message).body.slice(1);
    if (tails.size < TAILS_LIMIT) tails.set(cacheKey, tail);
  }
  return tail;
}

/** The body of an OFREP error: with the flag key on a single-flag evaluation, without it on a bulk one (key === null). */
export function ofrepErrorBody(key: string | null, code: ErrorCode, message: string): string {
  const tail = tailOf(code, message);
  return key === null ? '{' + tail : '{"key":' + JSON.stringify(key) + ',' + tail;
}

const RETRY_ONE = Buffer.from('1', 'latin1');

/**
 * Writes an OFREP error answer. 429 and 503 say when to come back (Retry-After: 1 s): the 429 is what
 * OFREP providers wait on (they pause evaluations or polling until then).
 */
export function sendOfrepError(res: HttpResponse, key: string | null, code: ErrorCode, message: string, closeConnection: boolean, origin: Uint8Array | null): number {
  const status = ERROR_STATUS[code];
  const retry = status === 429 || status === 503;
  return send(res, statusLine(status), ofrepErrorBody(key, code, message), retry ? H_RETRY_AFTER : '', retry ? RETRY_ONE : '', closeConnection, origin);
}
