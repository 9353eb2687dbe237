/**
 * Every error the service can answer with: one stable code, one HTTP status.
 * Clients and tests match on `code`; `message` is for humans and may change.
 *
 * Bodies are built once per (code, message) and reused: error responses are on the hot path
 * too (bad clients retry at full rate), so they must not allocate per request.
 */

export const ERROR_STATUS = {
  missing_api_key: 401,
  invalid_api_key: 401,
  unauthorized: 401,
  /** A named admin token whose role is below what the admin route needs. */
  forbidden_role: 403,
  /** A named admin token used on an environment outside its scope (or on a route spanning every environment). */
  forbidden_scope: 403,
  /** An event-stream token that is malformed, expired, or whose key was revoked. */
  invalid_stream_token: 401,
  unsupported_content_type: 400,
  payload_too_large: 413,
  invalid_json: 400,
  invalid_body: 400,
  invalid_query: 400,
  invalid_content: 400,
  invalid_mapping: 400,
  invalid_bundle: 400,
  invalid_request: 400,
  /** A webhook URL whose address is not public (loopback, private, link-local...), without --webhook-allow-private. */
  webhook_target_refused: 400,
  /** OFREP: the content's mapping has an A/B test and the evaluation context has no targetingKey (docs/openfeature.md). */
  targeting_key_missing: 400,
  /** OFREP bulk evaluation: the environment holds more items than --ofrep-bulk-max-items. */
  ofrep_bulk_too_large: 400,
  content_not_found: 404,
  /** Admin readout: no rule of the environment's current mappings runs an experiment of that name (docs/experiments.md). */
  experiment_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  // Only when a store is opened: its upgrade would make distinct content ids one (src/store/sqlite/schema.ts).
  content_id_conflict: 409,
  /** A change pinned to a base revision found the item at another revision (or gone): nothing was written. */
  base_revision_changed: 409,
  /** A rule edit (rollout step, kill of one rule) found another rule, or no such variant, at the index it names. */
  target_changed: 409,
  /** A move would apply a rollout's step before the step before it or after the step after it (docs/schedule.md). */
  rollout_step_order: 409,
  /** A rollout's first step would serve fewer players than its rule (or variant) serves now (docs/schedule.md). */
  rollout_shrinks: 409,
  /** A resume that asked to be refused when a held step's time passed while its rollout was paused (docs/schedule.md). */
  rollout_step_overdue: 409,
  /** The store already holds --schedule-max-pending scheduled changes that are not settled. */
  too_many_schedules: 409,
  /** A preview at a time would replay more ops of pending changes than --preview-max-ops. */
  preview_too_large: 409,
  overloaded: 503,
  /**
   * OFREP routes only, in place of `overloaded`: OFREP providers honour Retry-After on a 429 alone
   * (docs/openfeature.md, "Errors").
   */
  too_many_requests: 429,
  /** This delivery loop holds --max-streams open event streams (the admin listener: --admin-max-streams); Retry-After says when to try again. */
  too_many_streams: 503,
  /** Another connection holds the store's write lock past --store-busy-timeout; retry (Retry-After). */
  store_busy: 503,
  /** The store's files were deleted or replaced under the running server: writes are refused. */
  store_unavailable: 503,
  /** /readyz: the server has not finished starting (routing loading, bundle import, demo seed). */
  starting: 503,
  /** /readyz: the server is shutting down (SIGTERM): take it out of the load balancer. */
  draining: 503,
  /** Only when a store is opened: it was written by a newer rcd (a higher schema version); upgrade rcd. */
  store_schema_too_new: 500,
  internal: 500,
  // Answered by the recommended reverse proxy (docs/nginx/rcd.conf), never by rcd itself: nginx
  // refuses what rcd's HTTP parser cannot answer (docs/security.md, "HTTP layer") with these codes.
  request_timeout: 408,
  header_too_large: 431,
  not_implemented: 501,
  upstream_unavailable: 502,
  http_version_not_supported: 505,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

const STATUS_TEXT: Record<number, string> = {
  304: 'Not Modified',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  505: 'HTTP Version Not Supported',
};

/** uWS wants the whole status line text, e.g. "404 Not Found". */
export function statusLine(status: number): string {
  const text = STATUS_TEXT[status];
  return text === undefined ? String(status) : `${status} ${text}`;
}

/** A failure with a stable code. Thrown by validation and store code, turned into a response at the edge. */
export class RcdError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Optional structured details (e.g. every problem of a refused bundle). Sent to the client. */
  readonly details: unknown;

  constructor(code: ErrorCode, message: string, details?: unknown) {
    super(message);
    this.name = 'RcdError';
    this.code = code;
    this.status = ERROR_STATUS[code];
    this.details = details;
  }
}

export interface ErrorResponse {
  readonly statusLine: string;
  readonly body: string;
}

// Bounded: messages come from a fixed vocabulary plus a few that name a field; a flood of
// distinct messages would only stop caching, never grow memory.
const CACHE_LIMIT = 1024;
const cache = new Map<string, ErrorResponse>();

/** The complete, prebuilt answer for (code, message). */
export function errorResponse(code: ErrorCode, message: string, details?: unknown): ErrorResponse {
  if (details !== undefined) return buildErrorResponse(code, message, details);
  const key = code + '\0' + message;
  let hit = cache.get(key);
  if (hit === undefined) {
    hit = buildErrorResponse(code, message, undefined);
    if (cache.size < CACHE_LIMIT) cache.set(key, hit);
  }
  return hit;
}

function buildErrorResponse(code: ErrorCode, message: string, details: unknown): ErrorResponse {
  const status = ERROR_STATUS[code];
  const error: Record<string, unknown> = { status, code, message };
  if (details !== undefined) error.details = details;
  return { statusLine: statusLine(status), body: JSON.stringify({ error }) };
}

export function responseForError(err: RcdError): ErrorResponse {
  return errorResponse(err.code, err.message, err.details);
}
