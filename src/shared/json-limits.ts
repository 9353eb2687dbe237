/**
 * The limits on JSON that requests and writes bring in, defined once: how deeply a value may nest
 * (checked with a bounded walk) and what stored content may weigh.
 *
 * How deeply a JSON value nests, checked with a bounded walk. Everything that walks JSON values
 * recursively (JSON.stringify, the condition matcher, deep equality, the renderers) is safe from
 * stack exhaustion once the value's depth is known to be at most a limit; this is where that is
 * known. Used on writes (stored content and mappings, src/store/jsonc.ts) and on every content
 * request's `p` (src/delivery/context.ts, src/delivery/ofrep/context.ts).
 *
 * Depth counts containers: a scalar is 0, `[]` and `{}` are 1, `{"a":[1]}` is 2.
 */

/** The default limit of stored content and mappings, and the fixed limit of a request's `p`. */
export const MAX_JSON_DEPTH = 64;

/**
 * What one piece of content, and one write, may store (--max-content-depth, --max-content-bytes,
 * --max-write-bytes; docs/admin.md, "Limits"), enforced by src/store/jsonc.ts.
 */
export interface ContentLimits {
  /** Containers a stored text's value may nest (a mapping: a few more, jsonc.ts). */
  readonly maxDepth: number;
  /** UTF-8 bytes of one stored text. */
  readonly maxBytes: number;
  /** UTF-8 bytes of every text one write stores together (a bundle, a change set). */
  readonly maxWriteBytes: number;
}

export const DEFAULT_CONTENT_LIMITS: ContentLimits = Object.freeze({
  maxDepth: MAX_JSON_DEPTH,
  maxBytes: 10 * 1024 * 1024,
  maxWriteBytes: 64 * 1024 * 1024,
});

/**
 * Whether `value` nests more than `limit` containers deep. Recursion stops one level past the
 * limit, so the stack it uses is bounded by the limit whatever the value. Own enumerable members
 * only: the values are parsed JSON.
 */
export function exceedsDepth(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit <= 0) return true;
  const below = limit - 1;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      if (typeof item === 'object' && item !== null && exceedsDepth(item, below)) return true;
    }
    return false;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const item = record[key];
    if (typeof item === 'object' && item !== null && exceedsDepth(item, below)) return true;
  }
  return false;
}
