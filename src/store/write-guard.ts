/**
 * The admin token a write is made with, checked again inside the write's own transaction.
 *
 * An admin call is authorised when its headers arrive, but its body may arrive much later (up to
 * the request timeout), and a write queued behind others runs later still. A token revoked
 * meanwhile, on this node or another one of the store, must not write: so the store's write
 * transaction itself reads the token's row (the admin state keeps it in the store's database) and
 * refuses the write when the token is revoked, with the code a revoked token gets at the door
 * (`unauthorized`). Under SQLite the transaction holds the database's write lock, which a revocation
 * needs too; under PostgreSQL the row is read FOR SHARE, which a revocation's UPDATE waits for. So a
 * write either commits before the revocation or sees it. A token's role and scope never change (a
 * token is revoked and another one created instead), so its id being live is the whole check.
 *
 * A store (or the admin state) hands out a view of itself whose writes carry the guard
 * (guardedView): the same object, the same connections, one more property read by its writes.
 */
import { RcdError } from '../runtime/errors.js';

export interface WriteGuard {
  /** The admin token row's id (`tok_…`); the bootstrap token and the scheduler write unguarded. */
  readonly tokenId: string;
}

/** Where a store keeps the guard of a guarded view; null (unguarded) on the store itself. */
export const WRITE_GUARD: unique symbol = Symbol('rcd.writeGuard');

export interface Guardable {
  readonly [WRITE_GUARD]: WriteGuard | null;
}

/** The SQL both stores run in the write's transaction (PostgreSQL appends FOR SHARE and numbers the parameter). */
export const LIVE_TOKEN_SQL = 'SELECT revoked_at FROM admin_tokens WHERE id = ';

/** Throws unauthorized unless the token row read by LIVE_TOKEN_SQL exists and is not revoked. */
export function requireLiveToken(row: { readonly revoked_at: string | null } | undefined): void {
  if (row === undefined || row.revoked_at !== null) throw new RcdError('unauthorized', 'invalid admin token (revoked while the call was made)');
}

/**
 * `target` with its WRITE_GUARD read as `guard`: every other member is the target's own, methods
 * run with the view as `this` (so their writes read the guard) and assignments land on the target
 * (its state stays one).
 */
export function guardedView<T extends Guardable>(target: T, guard: WriteGuard): T {
  return new Proxy(target, {
    get(t, prop, receiver): unknown {
      if (prop === WRITE_GUARD) return guard;
      return Reflect.get(t, prop, receiver);
    },
    set(t, prop, value): boolean {
      return Reflect.set(t, prop, value, t);
    },
  });
}
