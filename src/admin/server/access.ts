/**
 * Who may call which admin route. A caller is a principal: the bootstrap token (RCD_ADMIN_TOKEN or
 * the token file: role admin, every environment) or a named token created through the API, with a
 * role and a scope. Every route names the least role it needs; a route with an `:env` segment is
 * in scope when that environment is, every other route (it spans environments) only for a token
 * scoped to all environments. One table (ADMIN_ROUTES) and this one check decide, so a new route is
 * covered by the same rule (and by the table-driven test) without a line here.
 */
import { RcdError } from '../../runtime/errors.js';

/** Ordered: each role may do everything the previous one may. */
export const TOKEN_ROLES = ['read', 'editor', 'admin'] as const;
export type TokenRole = (typeof TOKEN_ROLES)[number];

/** `'*'` is every environment, present and future; otherwise the listed environment ids. */
export type TokenScope = '*' | readonly string[];

export interface Principal {
  /** Recorded as the audit actor for named tokens; `bootstrap` for the bootstrap token. */
  readonly name: string;
  /** The audit log's token id: the token row's id, or the bootstrap token's digest prefix. */
  readonly tokenId: string;
  readonly role: TokenRole;
  readonly scope: TokenScope;
  /** The bootstrap token may still declare an actor label (X-Rcd-Actor); a named token is its name. */
  readonly bootstrap: boolean;
}

export function roleRank(role: TokenRole): number {
  return TOKEN_ROLES.indexOf(role);
}

export function inScope(principal: Principal, env: string): boolean {
  return principal.scope === '*' || principal.scope.includes(env);
}

/**
 * Which environments a route acts on: `env` the one in its `:env` segment (always its first
 * param), `all` every environment (only tokens scoped to all may call it), `own` any token, the
 * handler answering within the caller's scope (the environment list).
 */
export type RouteScope = 'env' | 'all' | 'own';

/**
 * Throws forbidden_role when the principal's role is below `need`, then forbidden_scope when the
 * route's environments are outside its scope. Role first, so the code a caller gets does not
 * depend on which environment it named.
 */
export function authorise(principal: Principal, need: TokenRole, scope: RouteScope, env: string | undefined): void {
  if (roleRank(principal.role) < roleRank(need)) {
    throw new RcdError('forbidden_role', `token "${principal.name}" has role ${principal.role}; this call needs ${need}`);
  }
  if (scope === 'own') return;
  if (scope === 'all' || env === undefined) {
    if (principal.scope !== '*') {
      throw new RcdError('forbidden_scope', `token "${principal.name}" is limited to some environments; this call spans all of them`);
    }
    return;
  }
  if (!inScope(principal, env)) {
    throw new RcdError('forbidden_scope', `token "${principal.name}" may not act on environment "${env}"`);
  }
}
