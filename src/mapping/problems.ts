/**
 * Validation problems of a mapping: every problem is collected (a console and a bundle import show
 * them all at once) and each names where it is, as a path into the mapping JSON, plus the rule index.
 */
import { isPlainObject } from '../shared/json.js';

export interface MappingProblem {
  /** Index of the rule in `rules`, or null for a problem of the mapping as a whole. */
  readonly rule: number | null;
  /** JSON path into the mapping, e.g. `rules[2].variants[1].mod`. */
  readonly path: string;
  readonly reason: string;
}

/** Keys that could reach an object's prototype; refused anywhere in conditions and patches. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export { isPlainObject };

/** Appends `key` to a JSON path the way the problem paths spell it. */
export function childPath(path: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** Reports every forbidden key inside a literal JSON value (a patch value, an equality operand). */
export function findForbiddenKeys(value: unknown, path: string, rule: number, problems: MappingProblem[]): void {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) findForbiddenKeys(value[i], `${path}[${i}]`, rule, problems);
  } else if (isPlainObject(value)) {
    for (const key of Object.keys(value)) {
      const p = childPath(path, key);
      if (FORBIDDEN_KEYS.has(key)) problems.push({ rule, path: p, reason: `key "${key}" is not allowed` });
      else findForbiddenKeys(value[key], p, rule, problems);
    }
  }
}
