import { describe, expect, it } from 'vitest';
import { poolShare } from '../../../src/pool/pool.js';

describe('the delivery loops\' shares of --threads', () => {
  it.each([
    [2, 1],
    [2, 2],
    [5, 2],
    [7, 3],
    [64, 64],
    [64, 7],
  ])('%i worker threads over %i loops: every thread once, every loop at least one, shares differ by at most one', (threads, loops) => {
    const shares = Array.from({ length: loops }, (_, i) => poolShare(threads, loops, i));
    expect(shares.reduce((a, b) => a + b, 0)).toBe(threads);
    expect(Math.min(...shares)).toBeGreaterThanOrEqual(1);
    expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
  });
});
