import { describe, expect, it } from 'vitest';
import { LATENCY_BOUNDS_S, MetricRoute, Outcome, countRequest, newLoopCounters, observeLatency, recordTimedRequest } from '../../../src/metrics/layout.js';

describe("a delivery loop's counters", () => {
  it('recordTimedRequest counts a request and its latency exactly as countRequest and observeLatency do', () => {
    const cases: [MetricRoute, number, Outcome, number][] = [
      [MetricRoute.Dynamic, 200, Outcome.Hit, 0.02],
      [MetricRoute.Dynamic, 200, Outcome.Hit, LATENCY_BOUNDS_S[0] * 1000],
      [MetricRoute.Combine, 200, Outcome.Miss, 3.7],
      [MetricRoute.Config, 304, Outcome.NotModified, 0.3],
      [MetricRoute.OfrepFlag, 404, Outcome.None, 70],
      [MetricRoute.OfrepBulk, 503, Outcome.None, 9_000],
      [MetricRoute.Dynamic, 0, Outcome.None, 0],
    ];
    const one = newLoopCounters();
    const two = newLoopCounters();
    for (const [route, status, outcome, ms] of cases) {
      recordTimedRequest(one, route, status, outcome, ms);
      countRequest(two, route, status, outcome);
      observeLatency(two, route, ms);
    }
    expect(Array.from(one)).toEqual(Array.from(two));
    expect(Array.from(one).reduce((a, b) => a + b, 0)).toBeGreaterThan(cases.length * 2);
  });
});
