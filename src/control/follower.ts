/**
 * Notices writes made to the store by other processes (another `rcd serve` on the same file, or
 * `rcd import --store`): polls the store's data version, a cheap read that changes whenever another
 * connection commits, and runs `onChange` once per change, never two at a time. Runs in the control
 * thread; what `onChange` does (read the change log, send deltas, record the applied seq) is the
 * same path as after this process's own writes.
 */
import type { Store } from '../store/types.js';

/** How often the data version is read: the bound on how late another process's write is noticed. */
export const FOLLOW_POLL_MS = 25;

export class StoreFollower {
  private readonly store: Store;
  private readonly onChange: () => Promise<void>;
  private readonly onError: (err: unknown) => void;
  private timer: NodeJS.Timeout | null = null;
  private version = -1;
  private running = false;

  constructor(store: Store, onChange: () => Promise<void>, onError: (err: unknown) => void) {
    this.store = store;
    this.onChange = onChange;
    this.onError = onError;
  }

  async start(): Promise<void> {
    this.version = await this.store.dataVersion();
    this.timer = setInterval(() => void this.poll(), FOLLOW_POLL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private async poll(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      const version = await this.store.dataVersion();
      if (version !== this.version) {
        this.version = version;
        await this.onChange();
      }
    } catch (err) {
      this.onError(err);
    } finally {
      this.running = false;
    }
  }
}
