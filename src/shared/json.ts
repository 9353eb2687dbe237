/** Small helpers over parsed JSON values, shared by the mapping, store and admin validators. */

/** A JSON object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
