import { Piscina } from 'piscina';
import { afterAll, describe, expect, it } from 'vitest';
import { Batcher, type JobSink } from '../../../src/pool/batcher.js';
import { JobKind, type Job, type JobResult } from '../../../src/pool/protocol.js';
import { newLoopCounters } from '../../../src/metrics/layout.js';

const pool = new Piscina({ filename: new URL('../../helpers/echo-worker.mjs', import.meta.url).href, minThreads: 1, maxThreads: 2 });
afterAll(async () => {
  await pool.destroy();
});

function job(revId: number): Job {
  return { kind: JobKind.Plain, revId, mappingId: 0, comboKey: '' };
}

class RecordingSink implements JobSink {
  results: [number, string][] = [];
  failures: [number, unknown][] = [];
  constructor(private readonly throwOnResult = false) {}
  onResult(slot: number, result: JobResult): void {
    if (this.throwOnResult) throw new Error('a bug while answering');
    this.results.push([slot, result.head === null ? result.error : new TextDecoder().decode(result.head)]);
  }
  onFailure(slot: number, err: unknown): void {
    this.failures.push([slot, err]);
  }
}

function settled(b: Batcher): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => (b.pending === 0 ? resolve() : void setTimeout(check, 2));
    check();
  });
}

describe('Batcher', () => {
  it('sends the jobs of one turn together and gives each result to its sink and slot', async () => {
    const b = new Batcher(pool, 2, 100, newLoopCounters());
    const a = new RecordingSink();
    const c = new RecordingSink();
    b.enqueue(job(11), a, 0);
    b.enqueue(job(12), c, 3);
    b.enqueue(job(0), a, 1);
    expect(b.pending).toBe(3);
    await settled(b);
    expect(a.results).toEqual([
      [0, '11'],
      [1, 'content_not_found'],
    ]);
    expect(c.results).toEqual([[3, '12']]);
  });

  it('splits a large turn across threads and still answers every slot once', async () => {
    const b = new Batcher(pool, 2, 1000, newLoopCounters());
    const sinks = Array.from({ length: 40 }, () => new RecordingSink());
    sinks.forEach((s, i) => b.enqueue(job(i + 1), s, i));
    await settled(b);
    sinks.forEach((s, i) => expect(s.results).toEqual([[i, String(i + 1)]]));
  });

  it('admits jobs only while there is room (the caller answers 503 otherwise)', () => {
    const b = new Batcher(pool, 1, 2, newLoopCounters());
    expect(b.hasRoom(2)).toBe(true);
    expect(b.hasRoom(3)).toBe(false);
  });

  it('fails only the sink whose onResult threw; the others of the batch get their results, nothing is unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown): void => void unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    try {
      const b = new Batcher(pool, 1, 100, newLoopCounters());
      const bad = new RecordingSink(true);
      const good = new RecordingSink();
      b.enqueue(job(1), bad, 0);
      b.enqueue(job(2), good, 0);
      await settled(b);
      await new Promise((r) => setTimeout(r, 20));
      expect(bad.failures).toHaveLength(1);
      expect((bad.failures[0]![1] as Error).message).toBe('a bug while answering');
      expect(good.results).toEqual([[0, '2']]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
