/**
 * Waiting in a test for something a server does on its own time (a scheduled change, a reconnection,
 * a webhook delivery): `cond` is polled until it holds, and the wait fails with `what` once `ms` passed.
 */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms: number, everyMs = 25): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
