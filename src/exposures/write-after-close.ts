/**
 * postgres.js (3.4.x) can send a query's bytes from a setImmediate after its connection closed (a
 * transaction's rollback after the database went away): a TypeError thrown outside any promise
 * (porsager/postgres#1066, #1154). The exposure writer thread recognises it (writer-thread.ts) and
 * goes on with a fresh driver instance instead of ending.
 *
 * Recognised by the message and by the driver's `nextWrite` in src/connection.js on the stack, in
 * either of the package's builds: its ES module (src/) or its CommonJS build (cjs/src/), which is the
 * one the store's connect() loads (src/store/postgres/connection.ts).
 */
export function isWriteAfterClose(err: unknown): boolean {
  return err instanceof TypeError && /\(reading 'write'\)/.test(err.message) && /nextWrite .*postgres[/\\](?:cjs[/\\])?src[/\\]connection\.js/.test(err.stack ?? '');
}
