import { describe, expect, it } from 'vitest';
import {
  EXPOSURE_PLAYERS_MOVED,
  EXPOSURE_QUEUE_ROWS,
  EXPOSURE_ROWS_WRITTEN,
  EXPOSURE_WRITE_FAILURES,
  newExposureCounters,
  newLoopCounters,
  newServerCounters,
} from '../../../src/metrics/layout.js';
import { metricsRegistry } from '../../../src/metrics/registry.js';

describe("the exposure writer's metrics", () => {
  it('read the writer\'s array when scraped', async () => {
    const c = newExposureCounters();
    const registry = metricsRegistry([newLoopCounters()], newServerCounters(), c);
    c[EXPOSURE_ROWS_WRITTEN] = 1234;
    c[EXPOSURE_PLAYERS_MOVED] = 5;
    c[EXPOSURE_WRITE_FAILURES] = 2;
    c[EXPOSURE_QUEUE_ROWS] = 777;
    const text = await registry.metrics();
    expect(text).toMatch(/^rcd_exposure_rows_written_total 1234$/m);
    expect(text).toMatch(/^rcd_exposure_players_moved_total 5$/m);
    expect(text).toMatch(/^rcd_exposure_write_failures_total 2$/m);
    expect(text).toMatch(/^rcd_exposure_queue_rows 777$/m);
    expect(text).toMatch(/^# TYPE rcd_exposure_queue_rows gauge$/m);
    registry.clear();
  });

  it('are absent without --exposures', async () => {
    const registry = metricsRegistry([newLoopCounters()], newServerCounters());
    expect(await registry.metrics()).not.toContain('rcd_exposure_');
    registry.clear();
  });
});
