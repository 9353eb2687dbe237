/**
 * When to try again after a failed refresh: exponential in the number of failures in a row, with
 * "equal jitter" (a random point in the upper half of the step) so that clients that failed together
 * (a server restart, an overload) do not come back together, and never sooner than the server's
 * Retry-After.
 */
export interface BackoffOptions {
  /** The first step, in ms (default 1000). */
  readonly baseMs?: number;
  /** The longest step, in ms (default 300000: five minutes). */
  readonly maxMs?: number;
}

export const DEFAULT_BACKOFF_BASE_MS = 1000;
export const DEFAULT_BACKOFF_MAX_MS = 300_000;

/**
 * The delay before attempt `failures + 1` (`failures` >= 1), in ms. `random` is in [0, 1).
 * Retry-After is a floor, not jittered: the server named the earliest time it wants to see us.
 */
export function backoffDelay(failures: number, retryAfterMs: number | null, options: BackoffOptions, random: number): number {
  const base = options.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
  const max = options.maxMs ?? DEFAULT_BACKOFF_MAX_MS;
  const step = Math.min(max, base * 2 ** Math.min(failures - 1, 30));
  const jittered = step / 2 + (step / 2) * random;
  return Math.max(jittered, retryAfterMs ?? 0);
}

/**
 * Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP date. Null when absent or unreadable.
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}
