/**
 * Running a step (rows.ts): each driver answers the step's row calls its own way (synchronous
 * SQLite rows, asynchronous PostgreSQL rows, the in-memory overlay, a sliced snapshot read) and
 * moves the step on with resume(): the answer goes back into the step, or the failure is thrown at
 * its `yield`, so a step may catch a failure of its own part and go on.
 */
import type { AsyncRows, ParallelCall, RowCall, Rows, Step } from './rows.js';

/** The answer to one row call, or its failure. */
export type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };

/** What a step is resumed with before its first call. */
export const START: Outcome = { ok: true, value: undefined };

export function ok(value: unknown): Outcome {
  return { ok: true, value };
}

export function failure(error: unknown): Outcome {
  return { ok: false, error };
}

/** The step's next call, or its result, once `last` answered the call before. */
export function resume<T>(step: Step<T>, last: Outcome): IteratorResult<RowCall | ParallelCall, T> {
  return last.ok ? step.next(last.value) : step.throw(last.error);
}

export function isParallel(c: RowCall | ParallelCall): c is ParallelCall {
  return 'parallel' in c;
}

type RowFn = (this: unknown, ...args: unknown[]) => unknown;

/** One row call made on `rows` (synchronous or not: the caller awaits what it must). */
export function callRow(rows: Rows | AsyncRows, c: RowCall): unknown {
  return (rows as unknown as Record<keyof Rows, RowFn>)[c.method].apply(rows, [...c.args]);
}

/** A synchronous row call's outcome. */
export function answerNow(rows: Rows, c: RowCall): Outcome {
  try {
    return ok(callRow(rows, c));
  } catch (err) {
    return failure(err);
  }
}

/** Runs a step on synchronous rows (inside the caller's SQLite transaction). */
export function runRows<T>(rows: Rows, step: Step<T>): T {
  let last = START;
  for (;;) {
    const next = resume(step, last);
    if (next.done === true) return next.value;
    const c = next.value;
    last = isParallel(c) ? settleNow(rows, c.parallel) : answerNow(rows, c);
  }
}

/** Parallel steps run one by one, each to its end. */
function settleNow(rows: Rows, steps: readonly Step<unknown>[]): Outcome {
  const outcomes: Outcome[] = [];
  for (const s of steps) outcomes.push(runNow(rows, s));
  return settled(outcomes);
}

function runNow(rows: Rows, step: Step<unknown>): Outcome {
  try {
    return ok(runRows(rows, step));
  } catch (err) {
    return failure(err);
  }
}

/** Runs a step on asynchronous rows (inside the caller's PostgreSQL transaction). */
export async function runRowsAsync<T>(rows: AsyncRows, step: Step<T>): Promise<T> {
  let last = START;
  for (;;) {
    const next = resume(step, last);
    if (next.done === true) return next.value;
    const c = next.value;
    last = isParallel(c) ? settled(await Promise.all(c.parallel.map((s) => runRowsAsync(rows, s).then(ok, failure)))) : await answerLater(rows, c);
  }
}

async function answerLater(rows: AsyncRows, c: RowCall): Promise<Outcome> {
  try {
    return ok(await callRow(rows, c));
  } catch (err) {
    return failure(err);
  }
}

/** The outcome of steps run side by side: their values in order, or the first failure. */
export function settled(outcomes: readonly Outcome[]): Outcome {
  const failed = outcomes.find((o) => !o.ok);
  return failed ?? ok(outcomes.map((o) => (o.ok ? o.value : undefined)));
}
