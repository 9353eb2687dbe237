/**
 * Times the store's writes for the metrics (control thread). The Store is wrapped once when it is
 * opened: a proxy times each write method and hands everything else to the store itself, so neither
 * store implementation knows about metrics.
 */
import { RcdError } from '../runtime/errors.js';
import type { Store } from '../store/types.js';
import type { WriteGuard } from '../store/write-guard.js';
import { STORE_WRITES, observeStoreWrite, type ServerCounters } from './layout.js';

/** Failures of the store itself; bad input (invalid_content, conflict, not found) is not one. */
function isStoreFailure(err: unknown): boolean {
  if (!(err instanceof RcdError)) return true;
  return err.code === 'store_unavailable' || err.code === 'store_busy' || err.code === 'internal';
}

export function timeStoreWrites(store: Store, counters: ServerCounters): Store {
  const wrappers = new Map<PropertyKey, (...args: unknown[]) => Promise<unknown>>();
  STORE_WRITES.forEach((name, op) => {
    const original = (store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[name]!;
    wrappers.set(name, async (...args: unknown[]): Promise<unknown> => {
      const t0 = performance.now();
      try {
        const result = await original.apply(store, args);
        observeStoreWrite(counters, op, performance.now() - t0, false);
        return result;
      } catch (err) {
        observeStoreWrite(counters, op, performance.now() - t0, isStoreFailure(err));
        throw err;
      }
    });
  });
  // A guarded view's writes are timed as the store's.
  const guarded = (guard: WriteGuard): Store => timeStoreWrites(store.guarded(guard), counters);
  // Every other member is the store's own, called on the store itself (its private state stays its own).
  return new Proxy(store, {
    get(target, prop): unknown {
      const wrapped = wrappers.get(prop);
      if (wrapped !== undefined) return wrapped;
      if (prop === 'guarded') return guarded;
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
