/**
 * The bound on previews at a time (`preview?at=`): each replays pending changes in memory on a read
 * snapshot, which a read-only token may ask for, so how many run at once and how much each replays
 * are bounded (docs/schedule.md, "Previews"). One past the bound answers `503 overloaded` at once.
 */
import { RcdError } from '../../runtime/errors.js';

export interface PreviewLimits {
  /** Ops of pending changes one preview replays at most (--preview-max-ops). */
  readonly maxOps: number;
  /** Previews at a time running on this process (--preview-concurrency). */
  readonly concurrency: number;
}

export const DEFAULT_PREVIEW_LIMITS: PreviewLimits = { maxOps: 20_000, concurrency: 2 };

export class PreviewGate {
  private running = 0;

  constructor(readonly limits: PreviewLimits) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.limits.concurrency) {
      throw new RcdError('overloaded', `${this.running} previews at a time are running (--preview-concurrency ${this.limits.concurrency}); retry shortly`);
    }
    this.running++;
    try {
      return await fn();
    } finally {
      this.running--;
    }
  }
}
