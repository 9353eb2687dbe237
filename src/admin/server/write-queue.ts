/** The admin write queue: one write at a time, urgent ones before those queued. */

/** Write queue lanes: urgent writes (the kill switch, scheduled changes due) go before queued ones. */
export const enum Lane {
  Normal = 0,
  Urgent = 1,
}

/**
 * Writes run one at a time (a 2xx means the next delivery request sees it, and the audit order is
 * the order of the changes). An urgent write (the kill switch, scheduled changes that fell due)
 * waits only for the write running now, not for the ones queued behind it: an 8 MiB import queued
 * before a kill must not delay the kill.
 */
export class WriteQueue {
  private readonly queued: [(() => void)[], (() => void)[]] = [[], []];
  private running = false;

  run<T>(fn: () => Promise<T>, lane: Lane): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queued[lane].push(() => {
        fn().then(resolve, reject).finally(() => {
          this.running = false;
          this.next();
        });
      });
      this.next();
    });
  }

  private next(): void {
    if (this.running) return;
    const task = this.queued[Lane.Urgent].shift() ?? this.queued[Lane.Normal].shift();
    if (task === undefined) return;
    this.running = true;
    task();
  }
}
