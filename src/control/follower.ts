/**
 * Notices writes made to the store by other processes (another `rcd serve` on the same store, or
 * `rcd import --store`) through the store's own commit watch (Store.watchCommits: SQLite polls its
 * data version, PostgreSQL listens for notifications and catches up periodically), and runs
 * `onChange` once per wake, never two at a time; a wake while one runs runs it once more after.
 * Runs in the control thread; what `onChange` does (read the change log, send deltas, record the
 * applied seq) is the same path as after this process's own writes.
 */
import type { CommitWatch, Store } from '../store/types.js';

export class StoreFollower {
  private readonly store: Store;
  private readonly onChange: () => Promise<void>;
  private readonly onError: (err: unknown) => void;
  private watch: CommitWatch | null = null;
  private running = false;
  private again = false;

  constructor(store: Store, onChange: () => Promise<void>, onError: (err: unknown) => void) {
    this.store = store;
    this.onChange = onChange;
    this.onError = onError;
  }

  async start(): Promise<void> {
    this.watch = await this.store.watchCommits(() => void this.run(), this.onError);
  }

  stop(): void {
    this.watch?.stop();
    this.watch = null;
  }

  private async run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        try {
          await this.onChange();
        } catch (err) {
          this.onError(err);
        }
      } while (this.again && this.watch !== null);
    } finally {
      this.running = false;
    }
  }
}
