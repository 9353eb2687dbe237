import { describe, expect, it } from 'vitest';
import { HeldRows } from '../../../src/exposures/held-rows.js';
import { batchOf } from './as-loop.js';
import { row } from './tables.js';

const batch = (from: number, n: number) => batchOf(Array.from({ length: n }, (_, i) => row('X', `u${from + i}`, 'A', 1000 + from + i + 0.7)));
const players = (h: HeldRows, max: number): string[] => h.peek(max).map((r) => r.player);

describe('the rows the writer holds', () => {
  it('are taken oldest first across batches, and stay until removed', () => {
    const h = new HeldRows();
    h.add(batch(0, 3));
    h.add(batch(3, 0));
    h.add(batch(3, 4));
    expect(h.size).toBe(7);
    expect(players(h, 5)).toEqual(['u0', 'u1', 'u2', 'u3', 'u4']);
    expect(players(h, 5)).toEqual(['u0', 'u1', 'u2', 'u3', 'u4']);
    h.remove(2);
    expect(h.size).toBe(5);
    expect(players(h, 2)).toEqual(['u2', 'u3']);
    h.remove(2);
    expect(players(h, 10)).toEqual(['u4', 'u5', 'u6']);
    h.add(batch(7, 2));
    h.remove(4);
    expect(players(h, 10)).toEqual(['u8']);
    h.remove(5);
    expect(h.size).toBe(0);
    expect(h.peek(10)).toEqual([]);
  });

  it('a row keeps what the loop noted, its time in whole milliseconds', () => {
    const h = new HeldRows();
    h.add(batchOf([row('Shop:price', 'p', 'B', 1234.9, { environment: 'staging', appVersion: '1.2.3', dimensions: '{"c":"DE"}' })]));
    expect(h.peek(1)).toEqual([{ environment: 'staging', experiment: 'Shop:price', player: 'p', variant: 'B', appVersion: '1.2.3', dimensions: '{"c":"DE"}', atMs: 1234 }]);
  });
});
