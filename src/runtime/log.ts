/**
 * Start-up, shutdown and error lines. The request path does not log (a log line per request would
 * cost more than the request); failures there are counted and logged once per second at most.
 */
export function logInfo(line: string): void {
  process.stdout.write(`rcd: ${line}\n`);
}

export function logError(line: string): void {
  process.stderr.write(`rcd: error: ${line}\n`);
}

/** Something the operator should fix that does not stop the server (a certificate past its end date). */
export function logWarning(line: string): void {
  process.stderr.write(`rcd: warning: ${line}\n`);
}

/** Logs an unexpected request-path failure, at most once per interval, with a count of the others. */
export function rateLimitedErrorLogger(intervalMs: number): (err: unknown) => void {
  let last = 0;
  let suppressed = 0;
  return (err: unknown) => {
    const now = Date.now();
    if (now - last < intervalMs) {
      suppressed++;
      return;
    }
    last = now;
    const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
    logError(`${detail}${suppressed > 0 ? ` (and ${suppressed} more since the last report)` : ''}`);
    suppressed = 0;
  };
}
