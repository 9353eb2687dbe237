/**
 * Giving up on a database that went silent. A partition that drops packets closes nothing: a
 * statement sent into it waits until the kernel gives its connection up, for many minutes, and
 * postgres.js cannot cancel one statement. So a caller bounds what it waits for (answeredWithin),
 * gives up on its calls in flight at once (CallsInFlight: each call runs with an AbortSignal, and
 * transaction.ts rolls a given-up transaction back instead of committing it later), and replaces
 * the pool whose connections went silent, ending the old one at once (store.ts, reader.ts, the
 * admin state's state-postgres.ts). Ending the pool alone is not enough: the driver parks a
 * transaction's statements behind one it refused, and they wait for a close that a partition
 * never delivers.
 */

/**
 * The longest a call that should take a moment (a heartbeat, the probe, an admin state statement)
 * waits for an answer before the database counts as silent: as long as the other nodes of a fleet
 * wait for a node's heartbeat (NODE_LIVENESS_MS, src/control/nodes.ts).
 */
export const STALL_MS = 5000;

/** The code of a given-up call's error: it counts as unreachable (connection.ts). */
export const DATABASE_STALLED = 'DATABASE_STALLED';

/** The error of a call given up on because the database has not answered for `ms`. */
export function stalledFor(ms: number): Error {
  return Object.assign(new Error(`no answer from the database within ${ms} ms`), { code: DATABASE_STALLED });
}

/** True for stalledFor's error: a call given up on is not tried again. */
export function isStalled(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === DATABASE_STALLED;
}

/**
 * `work`, or stalledFor(ms) when it has had no answer within `ms`; `onSilent` hears of it first (to
 * give up on the other calls and replace the pool).
 */
export function answeredWithin<T>(work: Promise<T>, ms: number, onSilent: (err: Error) => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = stalledFor(ms);
      onSilent(err);
      reject(err);
    }, ms);
  });
  work.catch(() => undefined);
  return Promise.race([work, silent]).finally(() => clearTimeout(timer));
}

/** The error a call given up on (its aborted signal) rejects with. */
export function givenUpReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason));
}

/**
 * `work`'s outcome, or its signal's reason as soon as the signal aborts: the caller answers at once
 * and `work` is left to settle on its own (its failure then goes unheard).
 */
export function orGivenUp<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const giveUp = (): void => {
      work.catch(() => undefined);
      reject(givenUpReason(signal));
    };
    if (signal.aborted) return giveUp();
    signal.addEventListener('abort', giveUp, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', giveUp));
  });
}

/** The calls waiting on one database, each with a signal that gives it up. */
export class CallsInFlight {
  private readonly calls = new Set<AbortController>();

  /** `fn` with its signal: its outcome, or its signal's reason once the calls are given up on. */
  async run<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const call = new AbortController();
    this.calls.add(call);
    try {
      return await orGivenUp(fn(call.signal), call.signal);
    } finally {
      this.calls.delete(call);
    }
  }

  /** Gives up on every call in flight with `err`. */
  giveUp(err: Error): void {
    for (const call of this.calls) call.abort(err);
    this.calls.clear();
  }
}
