import { describe, expect, it } from 'vitest';
import { NO_SLOT, WINDOW_ROWS, forget, isRepeat, newRepeatFilter, remember, slotNow, slotOf } from '../../../src/exposures/filter.js';
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

  it('steps aside in a run of new players, looking up only sentinel players, and comes back once rows repeat', () => {
    const f = newRepeatFilter(1024);
    const h = experimentHash('Launch:price');
    for (let i = 0; i < WINDOW_ROWS; i++) {
      const player = 'new-' + i;
      const slot = slotOf(f, userUid(player), h);
      expect(isRepeat(f, slot, 'live', 'Launch:price', 'A', player)).toBe(false);
      remember(f, slot, 'live', 'Launch:price', 'A', player);
    }
    // Not one repeat in the window: aside, the table emptied.
    expect(f.aside).toBe(true);
    expect(f.table.every((x) => x === '')).toBe(true);
    const players = Array.from({ length: 4000 }, (_, i) => 'p' + i);
    const sentinels = players.filter((p) => userUid(p) >>> 29 === 0);
    const others = players.filter((p) => userUid(p) >>> 29 !== 0);
    expect(sentinels.length).toBeGreaterThan(300);
    for (const p of others.slice(0, 50)) {
      expect(slotOf(f, userUid(p), h)).toBe(NO_SLOT);
      // A slot found before the filter stepped aside is not used for such a player either.
      expect(slotNow(f, 8, userUid(p))).toBe(NO_SLOT);
    }
    for (const p of sentinels.slice(0, 50)) {
      expect(slotOf(f, userUid(p), h)).toBeGreaterThanOrEqual(0);
      expect(slotNow(f, 8, userUid(p))).toBe(8);
    }
    // The sentinels come back again and again: repeats, and the filter looks up every row again.
    const back = sentinels.slice(0, 20);
    let lookups = 0;
    while (f.aside && lookups < 4 * WINDOW_ROWS) {
      for (const p of back) {
        const slot = slotOf(f, userUid(p), h);
        lookups++;
        if (!isRepeat(f, slot, 'live', 'Launch:price', 'A', p)) remember(f, slot, 'live', 'Launch:price', 'A', p);
      }
    }
    expect(f.aside).toBe(false);
    expect(lookups).toBeLessThanOrEqual(WINDOW_ROWS + back.length);
    expect(slotOf(f, userUid(others[0]!), h)).not.toBe(NO_SLOT);
  });

  it('stays in the middle between its two shares of repeats', () => {
    const f = newRepeatFilter(1024);
    const h = experimentHash('e');
    // One repeat in ten: above the share that sends it aside.
    const pool = Array.from({ length: 40 }, (_, i) => 'pool-' + i);
    for (const p of pool) remember(f, slotOf(f, userUid(p), h), 'live', 'e', 'A', p);
    let fresh = 0;
    for (let i = 0; i < 3 * WINDOW_ROWS; i++) {
      const player = i % 10 === 0 ? pool[(i / 10) % pool.length]! : 'fresh-' + fresh++;
      const slot = slotOf(f, userUid(player), h);
      if (!isRepeat(f, slot, 'live', 'e', 'A', player)) remember(f, slot, 'live', 'e', 'A', player);
      expect(f.aside).toBe(false);
    }
  });

  /**
   * Offers `rounds` rows of `row()` to a filter of `slots` and checks it against a model: a Set of the
   * rows queued, the newest variant queued per player, and each set's rows as the filter should hold
   * them (emptied whenever the filter steps aside). Returns how many were dropped and how often the
   * filter stepped aside.
   */
  function fuzz(slots: number, rounds: number, row: (i: number) => { environment: string; experiment: string; hash: number; variant: string; player: string; uid: number }): { dropped: number; queued: number; asides: number } {
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
    let asides = 0;
    const watchAside = (wasAside: boolean): void => {
      if (!wasAside && f.aside) {
        asides++;
        sets.clear();
      }
    };
    for (let i = 0; i < rounds; i++) {
      const { environment, experiment, hash, variant, player, uid } = row(i);
      const playerKey = environment + '|' + experiment + '|' + player;
      const key = playerKey + '|' + variant;
      const slot = slotOf(f, uid, hash);
      if (f.aside && userUid(player) >>> 29 !== 0) expect(slot).toBe(NO_SLOT);
      const set = sets.get(slot) ?? [];
      const wasAside = f.aside;
      if (isRepeat(f, slot, environment, experiment, variant, player)) {
        // Dropped: only ever a row queued before, the newest variant queued for its player, held by its set.
        if (!queued.has(key) || newest.get(playerKey) !== variant || !set.some(([k, v]) => k === playerKey && v === variant)) wrongDrops++;
        dropped++;
        watchAside(wasAside);
        continue;
      }
      if (!queued.has(key)) firsts++;
      // Queued although its set holds this row: a repeat the filter should have dropped.
      if (slot !== NO_SLOT && set.some(([k, v]) => k === playerKey && v === variant)) missedRepeats++;
      queued.add(key);
      newest.set(playerKey, variant);
      remember(f, slot, environment, experiment, variant, player);
      // The set's newer row is replaced when it is this player's, else it moves to the older slot.
      if (slot !== NO_SLOT) sets.set(slot, set.length > 0 && set[0]![0] === playerKey ? [[playerKey, variant], ...set.slice(1)] : [[playerKey, variant], ...set.slice(0, 1)]);
      watchAside(wasAside);
    }
    expect(wrongDrops).toBe(0);
    expect(missedRepeats).toBe(0);
    // Every distinct row of the stream was queued: no first exposure was lost.
    expect(firsts).toBe(queued.size);
    return { dropped, queued: queued.size, asides };
  }

  const environments = ['live', 'staging'];
  const experiments = ['Shop:banner', 'Shop:price', 'pricing', 'Daily:reward', 'x'];
  const hashes = experiments.map(experimentHash);
  const variants = ['A', 'B', 'C'];

  it('never drops a first exposure and drops a repeat while its set holds it (fuzzed against a Set)', () => {
    const rng = new Rng(75);
    const next = (): number => rng.next();
    const players = Array.from({ length: 300 }, (_, i) => 'player-' + i);
    const uids = players.map(userUid);
    const rounds = 60_000;
    for (const slots of [0, 16, 1024, 65536]) {
      const r = fuzz(slots, rounds, () => {
        const e = Math.floor(next() * experiments.length);
        // Players from a pool small enough to come back often; most keep their environment and variant.
        const p = Math.floor(next() * players.length);
        const environment = next() < 0.95 ? environments[p % environments.length]! : environments[Math.floor(next() * environments.length)]!;
        const variant = next() < 0.9 ? variants[p % variants.length]! : variants[Math.floor(next() * variants.length)]!;
        return { environment, experiment: experiments[e]!, hash: hashes[e]!, variant, player: players[p]!, uid: uids[p]! };
      });
      if (slots === 0) expect(r.dropped).toBe(0);
      else expect(r.dropped).toBeGreaterThan(0);
      // With room for every (player, experiment), nearly every repeat of a kept variant is dropped.
      if (slots === 65536) {
        expect(r.asides).toBe(0);
        expect(r.dropped).toBeGreaterThan((rounds - r.queued) * 0.5);
      }
    }
  });

  it('never drops a first exposure while it steps aside and back (launch spikes between players coming back, fuzzed)', () => {
    const rng = new Rng(7575);
    const next = (): number => rng.next();
    const pool = Array.from({ length: 500 }, (_, i) => 'regular-' + i);
    const poolUids = pool.map(userUid);
    let spikePlayer = 0;
    let spikeUid = 0;
    for (const slots of [1024, 65536]) {
      const r = fuzz(slots, 120_000, (i) => {
        // Phases of 15,000 rows: a spike of new players (each one row of every experiment), then the pool.
        if (Math.floor(i / 15_000) % 2 === 0) {
          const k = i % experiments.length;
          if (k === 0) spikeUid = userUid('spike-' + ++spikePlayer);
          const player = 'spike-' + spikePlayer;
          return { environment: 'live', experiment: experiments[k]!, hash: hashes[k]!, variant: variants[spikePlayer % 3]!, player, uid: spikeUid };
        }
        const e = Math.floor(next() * experiments.length);
        const p = Math.floor(next() * pool.length);
        // Some players move to another variant, and back, across the phases.
        const variant = next() < 0.8 ? variants[p % 3]! : variants[Math.floor(next() * 3)]!;
        return { environment: 'live', experiment: experiments[e]!, hash: hashes[e]!, variant, player: pool[p]!, uid: poolUids[p]! };
      });
      expect(r.asides).toBeGreaterThanOrEqual(2);
      expect(r.dropped).toBeGreaterThan(0);
    }
  });
});
