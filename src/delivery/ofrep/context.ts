/**
 * The OFREP evaluation request (`{"context":{...}}`) as rcd's user context, by the mapping of
 * docs/openfeature.md: `targetingKey` → u, `appVersion` → v (the rule of v), every other attribute
 * → p. The result has the same fields in the same order as the native body's (src/delivery/context.ts),
 * so rule evaluation sees one object shape whichever API the request came by.
 *
 * Why a missing context is allowed: a provider given no evaluation context sends `{}` (the JS
 * providers serialize `{context: undefined}`), and the native API accepts its shorter bodies the same
 * way. A missing targetingKey is refused only where it changes the answer (an A/B test, request.ts).
 *
 * HOT PATH: once per OFREP request.
 */
import { RcdError } from '../../runtime/errors.js';
import { MAX_P_DEPTH, appVersionOf, checkDepthOfP, type UserContext } from '../context.js';
import { bodyJson } from '../body.js';
import { NO_VERSION } from '../../shared/app-version.js';

/** The context attribute that carries the app version (rcd's `v`). */
export const VERSION_ATTRIBUTE = 'appVersion';
const TARGETING_KEY = 'targetingKey';

export interface OfrepContext {
  readonly user: UserContext;
  /** True when the context named a targetingKey (an empty string counts: it is a choice). */
  readonly targeted: boolean;
}

export const EMPTY_OFREP_BODY = 'the request body is empty; send {"context":{"targetingKey":"…"}}';

// Shared and frozen, as the native parser's: a context with no other attribute gets this one object.
const EMPTY_P: Record<string, unknown> = Object.freeze({});

const CONTEXT_TOO_DEEP = `context must not nest deeper than ${MAX_P_DEPTH} levels of arrays and objects`;

/** Parses and validates a body; throws RcdError invalid_json (OFREP PARSE_ERROR) or invalid_body (INVALID_CONTEXT). */
export function parseOfrepContext(text: string): OfrepContext {
  const root = bodyJson(text, EMPTY_OFREP_BODY);
  if (typeof root !== 'object' || root === null || Array.isArray(root)) {
    throw new RcdError('invalid_body', 'the request body must be a JSON object {"context":{…}}');
  }
  const context = (root as Record<string, unknown>).context;
  if (context === undefined) return { user: { u: '', p: EMPTY_P, v: '', version: NO_VERSION }, targeted: false };
  if (typeof context !== 'object' || context === null || Array.isArray(context)) {
    throw new RcdError('invalid_body', 'context must be a JSON object');
  }
  const attributes = context as Record<string, unknown>;
  const targetingKey = attributes[TARGETING_KEY];
  if (targetingKey !== undefined && typeof targetingKey !== 'string') throw new RcdError('invalid_body', 'context.targetingKey must be a string');
  const version = attributes[VERSION_ATTRIBUTE];
  let v = '';
  let comparable = NO_VERSION;
  if (version !== undefined) {
    if (typeof version !== 'string') throw new RcdError('invalid_body', `context.${VERSION_ATTRIBUTE} must be a string of the form X.Y.Z (e.g. "1.4.2")`);
    try {
      comparable = appVersionOf(version);
    } catch {
      throw new RcdError('invalid_body', `context.${VERSION_ATTRIBUTE} must be a string of the form X.Y.Z (e.g. "1.4.2")`);
    }
    v = version;
  }
  const p = otherAttributes(attributes);
  checkDepthOfP(p, text.length, CONTEXT_TOO_DEEP);
  return { user: { u: targetingKey ?? '', p, v, version: comparable }, targeted: targetingKey !== undefined };
}

/** The attributes other than targetingKey and the app version: rcd's p. */
function otherAttributes(attributes: Record<string, unknown>): Record<string, unknown> {
  let p: Record<string, unknown> | null = null;
  for (const name in attributes) {
    if (name === TARGETING_KEY || name === VERSION_ATTRIBUTE) continue;
    p ??= {};
    // A `__proto__` attribute is data, as in the native p: an assignment would set the prototype.
    if (name === '__proto__') Object.defineProperty(p, name, { value: attributes[name], enumerable: true, writable: true, configurable: true });
    else p[name] = attributes[name];
  }
  return p ?? EMPTY_P;
}
