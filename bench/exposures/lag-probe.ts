/**
 * The writer-lag probe of the launch: sample players, sent by this process one at a time on a fixed
 * pace beside the load, each timed from the moment its (first and only) request leaves to the moment
 * the table holds its rows of all three experiments, polled every few milliseconds. The samples are
 * players of the launch like the others (a prefix of their own), so the table's count stays exact.
 * Samples still unsent when the load ends are sent after it, and reported apart.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ExposureTable } from './exposure-table.js';
import { LAUNCH_EXPERIMENTS, LAUNCH_HEADERS, LAUNCH_PATH, launchBody } from './launch-fixture.js';
import { playerName } from './players-script.js';

const POLL_MS = 10;
/** At most this many players asked about in one query. */
const POLL_BATCH = 500;

export interface LagFigures {
  /** Lags of the samples sent while the load ran, ms, ascending. */
  readonly underLoadMs: readonly number[];
  /** Lags of the samples sent after it, ms, ascending. */
  readonly afterLoadMs: readonly number[];
  /** Samples whose rows never appeared within the wait. */
  readonly missing: number;
  /** Samples whose request did not get a 200. */
  readonly failed: number;
}

interface Sample {
  readonly player: string;
  readonly sentAt: number;
  readonly underLoad: boolean;
  foundAt: number | null;
}

export class LagProbe {
  private readonly samples: Sample[] = [];
  private loadRunning = true;
  private failed = 0;
  private sending: Promise<void> | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly url: string,
    private readonly table: ExposureTable,
    private readonly prefix: string,
    private readonly count: number,
    private readonly paceMs: number,
  ) {}

  /** The sample players' names (they are part of the launch's players). */
  players(): string[] {
    return Array.from({ length: this.count }, (_, k) => playerName(this.prefix, k));
  }

  start(): void {
    this.sending = this.send();
    this.polling = this.poll();
  }

  /** The load ended: the samples sent from now on are reported apart. */
  loadEnded(): void {
    this.loadRunning = false;
  }

  /** Waits until every sample was sent and found, at most `waitMs` after the last was sent. */
  async finish(waitMs: number): Promise<LagFigures> {
    await this.sending;
    const until = performance.now() + waitMs;
    while (performance.now() < until && this.samples.some((s) => s.foundAt === null)) await sleep(POLL_MS);
    this.stopped = true;
    await this.polling;
    const lags = (underLoad: boolean): number[] =>
      this.samples
        .filter((s) => s.underLoad === underLoad && s.foundAt !== null)
        .map((s) => s.foundAt! - s.sentAt)
        .sort((a, b) => a - b);
    return { underLoadMs: lags(true), afterLoadMs: lags(false), missing: this.samples.filter((s) => s.foundAt === null).length, failed: this.failed };
  }

  private async send(): Promise<void> {
    const players = this.players();
    for (let k = 0; k < players.length; k++) {
      const due = performance.now() + this.paceMs;
      const sample: Sample = { player: players[k]!, sentAt: performance.now(), underLoad: this.loadRunning, foundAt: null };
      this.samples.push(sample);
      try {
        const res = await fetch(`${this.url}${LAUNCH_PATH}`, { method: 'POST', headers: LAUNCH_HEADERS, body: launchBody(sample.player), signal: AbortSignal.timeout(10_000) });
        await res.arrayBuffer();
        if (res.status !== 200) this.failed++;
      } catch {
        this.failed++;
      }
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
    }
  }

  private async poll(): Promise<void> {
    while (!this.stopped) {
      const pending = this.samples.filter((s) => s.foundAt === null).slice(0, POLL_BATCH);
      if (pending.length > 0) {
        const found = await this.table.found(pending.map((s) => s.player));
        const now = performance.now();
        for (const s of pending) if ((found.get(s.player) ?? 0) >= LAUNCH_EXPERIMENTS.length) s.foundAt = now;
      }
      await sleep(POLL_MS);
    }
  }
}

/** The p-th percentile (nearest rank) of ascending values, or null when there are none. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
