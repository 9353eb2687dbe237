/**
 * Runs `fn` at once and hands its outcome over as a promise: a synchronous throw becomes a
 * rejection. The Store and the admin state are asynchronous interfaces (a networked backend will
 * need that) implemented over synchronous better-sqlite3; their methods return `settle(...)` so a
 * caller never sees a throw at the call site, and no method is `async` without awaiting anything.
 */
export function settle<T>(fn: () => T): Promise<T> {
  return new Promise<T>((resolve) => {
    resolve(fn());
  });
}
