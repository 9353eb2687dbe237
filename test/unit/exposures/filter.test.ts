import { describe, expect, it } from 'vitest';
import { NO_SLOT, forget, isRepeat, newRepeatFilter, remember, slotOf } from '../../../src/exposures/filter.js';
import { experimentHash } from '../../../src/exposures/naming.js';
import { userUid } from '../../../src/shared/identity.js';
import { Rng } from '../../helpers/fuzz.js';

describe('the repeat filter', () => {
  it('drops exactly the row its slot holds, compared by value', () => {
    const f = newRepeatFilter(1024);
    const slot = slotOf(f, userUid('p1'), experimentHash('Shop:banner'));
    expect(isRepeat(f, slot, 'live', 'Shop:banner', 'A', 'p1')).toBe(false);
    remember(f, slot, 'live', 'Shop:banner', 'A', 'p1');
    // Strings built apart, equal by value: a repeat.
    expect(isRepeat(f, slot, ['li', 've'].join(''), 'Shop:' + 'banner', 'A', ['p', '1'].join(''))).toBe(true);
    expect(isRepeat(f, slot, 'live', 'Shop:banner', 'B', 'p1')).toBe(false); // moved to another variant
    expect(isRepeat(f, slot, 'staging', 'Shop:banner', 'A', 'p1')).toBe(false);
    expect(isRepeat(f, slot, 'live', 'Shop:banner', 'A', 'p2')).toBe(false);
    forget(f, slot, 'live', 'Shop:banner', 'B', 'p1'); // not the row it holds: kept
    expect(isRepeat(f, slot, 'live', 'Shop:banner', 'A', 'p1')).toBe(true);
    forget(f, slot, 'live', 'Shop:banner', 'A', 'p1');
    expect(isRepeat(f, slot, 'live', 'Shop:banner', 'A', 'p1')).toBe(false);
  });

  it('with 0 slots holds nothing: no exposure is a repeat', () => {
    const f = newRepeatFilter(0);
    const slot = slotOf(f, 123, 456);
    expect(slot).toBe(NO_SLOT);
    remember(f, slot, 'live', 'e', 'A', 'p');
    expect(isRepeat(f, slot, 'live', 'e', 'A', 'p')).toBe(false);
    expect(f.table).toHaveLength(0);
  });

  it('never drops a first exposure and drops a repeat while its slot holds it (fuzzed against a Set)', () => {
    const rng = new Rng(75);
    const next = (): number => rng.next();
    const environments = ['live', 'staging'];
    const experiments = ['Shop:banner', 'Shop:price', 'pricing', 'Daily:reward', 'x'];
    const variants = ['A', 'B', 'C'];
    const players = Array.from({ length: 300 }, (_, i) => 'player-' + i);
    const uids = players.map(userUid);
    const hashes = experiments.map(experimentHash);
    const rounds = 60_000;
    for (const slots of [0, 16, 1024, 65536]) {
      const f = newRepeatFilter(slots);
      const queued = new Set<string>();
      const lastInSlot = new Map<number, string>();
      let firsts = 0;
      let dropped = 0;
      let wrongDrops = 0;
      let missedRepeats = 0;
      for (let i = 0; i < rounds; i++) {
        const e = Math.floor(next() * experiments.length);
        const experiment = experiments[e]!;
        // Players from a pool small enough to come back often; most keep their environment and variant.
        const p = Math.floor(next() * players.length);
        const player = players[p]!;
        const environment = next() < 0.95 ? environments[p % environments.length]! : environments[Math.floor(next() * environments.length)]!;
        const variant = next() < 0.9 ? variants[p % variants.length]! : variants[Math.floor(next() * variants.length)]!;
        const key = environment + '|' + experiment + '|' + variant + '|' + player;
        const slot = slotOf(f, uids[p]!, hashes[e]!);
        if (isRepeat(f, slot, environment, experiment, variant, player)) {
          // Dropped: only ever a row queued before, and only the one its slot last took.
          if (!queued.has(key) || lastInSlot.get(slot) !== key) wrongDrops++;
          dropped++;
          continue;
        }
        if (!queued.has(key)) firsts++;
        // Queued although its slot's last row is this one: a repeat the filter should have dropped.
        if (slot !== NO_SLOT && lastInSlot.get(slot) === key) missedRepeats++;
        queued.add(key);
        remember(f, slot, environment, experiment, variant, player);
        lastInSlot.set(slot, key);
      }
      expect(wrongDrops).toBe(0);
      expect(missedRepeats).toBe(0);
      // Every distinct row of the stream was queued: no first exposure was lost.
      expect(firsts).toBe(queued.size);
      if (slots === 0) expect(dropped).toBe(0);
      else expect(dropped).toBeGreaterThan(0);
      // With room for every (player, experiment), nearly every repeat of a kept variant is dropped.
      if (slots === 65536) expect(dropped).toBeGreaterThan((rounds - queued.size) * 0.5);
    }
  });
});
