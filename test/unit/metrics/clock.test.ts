import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { nowMs } from '../../../src/metrics/clock.js';

describe("a request's latency clock", () => {
  it('reads milliseconds that advance with the monotonic clock, never backwards', async () => {
    const t0 = nowMs();
    const p0 = performance.now();
    let last = t0;
    for (let i = 0; i < 10_000; i++) {
      const t = nowMs();
      expect(t).toBeGreaterThanOrEqual(last);
      last = t;
    }
    await sleep(60);
    const elapsed = nowMs() - t0;
    const reference = performance.now() - p0;
    // The same interval in the same unit as performance.now (a factor of 1,000 would be seconds or µs).
    expect(elapsed).toBeGreaterThanOrEqual(55);
    expect(Math.abs(elapsed - reference)).toBeLessThan(5);
  });
});
