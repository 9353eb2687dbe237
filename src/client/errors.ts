/**
 * A refresh that failed. `code` is the server's stable error code when it answered one
 * (`overloaded`, `invalid_api_key`, ...), otherwise one of the client's own:
 * `network` (no answer: server down, DNS, CORS refused), `bad_response` (an answer the protocol does
 * not allow), `storage` (the cache could not be read or written), `backoff` (not sent: the client is
 * waiting out a previous failure until `retryAt`).
 */
export class RcdClientError extends Error {
  readonly code: string;
  /** HTTP status, 0 when there was no answer. */
  readonly status: number;
  /** The server's Retry-After in ms, when it sent one. */
  readonly retryAfterMs: number | null;
  /** Epoch ms of the next attempt, when the client scheduled one. */
  retryAt: number | null = null;

  constructor(code: string, message: string, status = 0, retryAfterMs: number | null = null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RcdClientError';
    this.code = code;
    this.status = status;
    this.retryAfterMs = retryAfterMs;
  }

  /** Worth trying again later without a change on the client's side. */
  get retryable(): boolean {
    return this.status === 0 || this.status === 408 || this.status === 429 || this.status >= 500;
  }
}
