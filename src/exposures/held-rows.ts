/**
 * The rows the writer thread holds: the loops' batches as they came (columns, never copied), oldest
 * first, and how far into the oldest the writes got. A write takes rows from the front and removes
 * them only once they are written (or given up), so a failed write leaves them in place.
 */
import { NO_TEXT, type ExposureBatch } from './protocol.js';
import type { ExposureRow } from './db.js';

export class HeldRows {
  private readonly batches: ExposureBatch[] = [];
  /** Rows of batches[0] already taken off. */
  private offset = 0;
  private held = 0;

  get size(): number {
    return this.held;
  }

  add(batch: ExposureBatch): void {
    const n = batch.players.length;
    if (n === 0) return;
    this.batches.push(batch);
    this.held += n;
  }

  /** Up to `max` rows from the front, in arrival order (they stay held). */
  peek(max: number): ExposureRow[] {
    const rows: ExposureRow[] = [];
    let offset = this.offset;
    for (const batch of this.batches) {
      const n = batch.players.length;
      for (let i = offset; i < n && rows.length < max; i++) rows.push(rowOf(batch, i));
      if (rows.length >= max) break;
      offset = 0;
    }
    return rows;
  }

  /** Takes `n` rows off the front (written, or given up). */
  remove(n: number): void {
    let left = Math.min(n, this.held);
    this.held -= left;
    while (left > 0) {
      const batch = this.batches[0]!;
      const rest = batch.players.length - this.offset;
      if (left < rest) {
        this.offset += left;
        return;
      }
      left -= rest;
      this.batches.shift();
      this.offset = 0;
    }
  }
}

/** Row `i` of a batch, its texts looked up. */
export function rowOf(batch: ExposureBatch, i: number): ExposureRow {
  const texts = batch.texts;
  const appVersion = batch.appVersions[i]!;
  return {
    environment: texts[batch.environments[i]!]!,
    experiment: texts[batch.experiments[i]!]!,
    player: batch.players[i]!,
    variant: texts[batch.variants[i]!]!,
    appVersion: appVersion === NO_TEXT ? null : texts[appVersion]!,
    dimensions: texts[batch.dimensions[i]!]!,
    // Whole milliseconds: the counts table keeps them as integers.
    atMs: Math.floor(batch.at[i]!),
  };
}
