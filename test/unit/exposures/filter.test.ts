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

  it('keeps two rows of one set, forgets the older for a third, and never holds two variants of one player', () => {
    const f = newRepeatFilter(1024);
    const h = experimentHash('e');
    // Three players whose rows fall in one set.
    const players: string[] = [];
    const slot = slotOf(f, userUid('p0'), h);
    for (let i = 0; players.length < 3; i++) if (slotOf(f, userUid('p' + i), h) === slot) players.push('p' + i);
    const [a, b, c] = players as [string, string, string];
    remember(f, slot, 'live', 'e', 'A', a);
    remember(f, slot, 'live', 'e', 'A', b);
    expect(isRepeat(f, slot, 'live', 'e', 'A', a)).toBe(true);
    expect(isRepeat(f, slot, 'live', 'e', 'A', b)).toBe(true);
    remember(f, slot, 'live', 'e', 'A', c);
    expect(isRepeat(f, slot, 'live', 'e', 'A', a)).toBe(false);
    expect(isRepeat(f, slot, 'live', 'e', 'A', b)).toBe(true);
    expect(isRepeat(f, slot, 'live', 'e', 'A', c)).toBe(true);
    // c moves to B then C then back to B: each is queued (the writer keeps the newest other variant).
    remember(f, slot, 'live', 'e', 'B', c);
    expect(isRepeat(f, slot, 'live', 'e', 'A', c)).toBe(false);
    expect(isRepeat(f, slot, 'live', 'e', 'A', b)).toBe(true);
    remember(f, slot, 'live', 'e', 'C', c);
    expect(isRepeat(f, slot, 'live', 'e', 'B', c)).toBe(false);
    // b's row, older, and c's move in its newer slot: b moving pushes c's out, never two of b.
    remember(f, slot, 'live', 'e', 'B', b);
    expect(isRepeat(f, slot, 'live', 'e', 'A', b)).toBe(false);
    expect(isRepeat(f, slot, 'live', 'e', 'B', b)).toBe(true);
    expect(isRepeat(f, slot, 'live', 'e', 'C', c)).toBe(true);
    forget(f, slot, 'live', 'e', 'C', c);
    expect(isRepeat(f, slot, 'live', 'e', 'C', c)).toBe(false);
    expect(isRepeat(f, slot, 'live', 'e', 'B', b)).toBe(true);
  });

  it('with 0 slots holds nothing: no exposure is a repeat', () => {
    const f = newRepeatFilter(0);
    const slot = slotOf(f, 123, 456);
    expect(slot).toBe(NO_SLOT);
    remember(f, slot, 'live', 'e', 'A', 'p');
    expect(isRepeat(f, slot, 'live', 'e', 'A', 'p')).toBe(false);
    expect(f.table).toHaveLength(0);
  });

  it('never drops a first exposure and drops a repeat while its set holds it (fuzzed against a Set)', () => {
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
      /** (environment, experiment, player) -> the variant last queued. */
      const newest = new Map<string, string>();
      /** A set's rows as the filter should hold them, newer first: [player key, variant]. */
      const sets = new Map<number, [string, string][]>();
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
        const playerKey = environment + '|' + experiment + '|' + player;
        const key = playerKey + '|' + variant;
        const slot = slotOf(f, uids[p]!, hashes[e]!);
        const set = sets.get(slot) ?? [];
        if (isRepeat(f, slot, environment, experiment, variant, player)) {
          // Dropped: only ever a row queued before, the newest variant queued for its player, held by its set.
          if (!queued.has(key) || newest.get(playerKey) !== variant || !set.some(([k, v]) => k === playerKey && v === variant)) wrongDrops++;
          dropped++;
          continue;
        }
        if (!queued.has(key)) firsts++;
        // Queued although its set holds this row: a repeat the filter should have dropped.
        if (slot !== NO_SLOT && set.some(([k, v]) => k === playerKey && v === variant)) missedRepeats++;
        queued.add(key);
        newest.set(playerKey, variant);
        remember(f, slot, environment, experiment, variant, player);
        // The set's newer row is replaced when it is this player's, else it moves to the older slot.
        sets.set(slot, set.length > 0 && set[0]![0] === playerKey ? [[playerKey, variant], ...set.slice(1)] : [[playerKey, variant], ...set.slice(0, 1)]);
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
