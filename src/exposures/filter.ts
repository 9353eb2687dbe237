/**
 * A delivery loop's repeat filter (--exposure-filter): most exposures are a player seen again, and
 * the writer needs each (environment, experiment, player) once. A direct-mapped table: a row's slot
 * is a hash of the player's uid and the experiment; a slot holding exactly the same (experiment,
 * variant, player, environment) means the row was queued before, and the exposure is dropped as a
 * repeat. Anything else is queued and takes the slot (a collision only forgets the older row, which
 * then may be queued once more: the database's key keeps one).
 *
 * Exact: the strings are compared, never their hashes, so a first exposure is never dropped
 * (test/unit/exposures/filter.test.ts holds it to a plain Set). A player who moves to another
 * variant is not a repeat: the writer records the move.
 *
 * HOT PATH (with exposures on): a repeat is found with one hash, one slot's four compares and no
 * allocation.
 */

/** The table: SLOT_FIELDS strings per slot, "" in an empty one (no experiment is named ""). */
export interface RepeatFilter {
  /** Slots - 1 (slots are a power of two), or -1 for no filter (--exposure-filter 0). */
  readonly mask: number;
  readonly table: string[];
}

const SLOT_FIELDS = 4;
const EXPERIMENT = 0;
const VARIANT = 1;
const PLAYER = 2;
const ENVIRONMENT = 3;

/** No slot: nothing is a repeat (no filter). */
export const NO_SLOT = -1;

/** A filter of `slots` (0, or a power of two: src/runtime/config.ts checks it). */
export function newRepeatFilter(slots: number): RepeatFilter {
  // Pushed, not `new Array(n)`: V8 gives a large preallocated array dictionary elements, slow to read.
  const table: string[] = [];
  for (let i = slots * SLOT_FIELDS; i > 0; i--) table.push('');
  return { mask: slots === 0 ? -1 : slots - 1, table };
}

/** The slot of (player's uid, experiment's hash: naming.ts experimentHash), or NO_SLOT without a filter. */
export function slotOf(filter: RepeatFilter, uid: number, experimentHash: number): number {
  const mask = filter.mask;
  if (mask < 0) return NO_SLOT;
  return ((uid ^ experimentHash) & mask) * SLOT_FIELDS;
}

/** Whether the slot holds exactly this row: it was queued before. */
export function isRepeat(filter: RepeatFilter, slot: number, environment: string, experiment: string, variant: string, player: string): boolean {
  if (slot === NO_SLOT) return false;
  const t = filter.table;
  return t[slot + EXPERIMENT] === experiment && t[slot + VARIANT] === variant && t[slot + PLAYER] === player && t[slot + ENVIRONMENT] === environment;
}

/** The row was queued: the slot holds it from now on. */
export function remember(filter: RepeatFilter, slot: number, environment: string, experiment: string, variant: string, player: string): void {
  if (slot === NO_SLOT) return;
  const t = filter.table;
  t[slot + EXPERIMENT] = experiment;
  t[slot + VARIANT] = variant;
  t[slot + PLAYER] = player;
  t[slot + ENVIRONMENT] = environment;
}

/** The row was not queued after all (the writer's queue was full): its slot forgets it, if it holds it. */
export function forget(filter: RepeatFilter, slot: number, environment: string, experiment: string, variant: string, player: string): void {
  if (!isRepeat(filter, slot, environment, experiment, variant, player)) return;
  filter.table[slot + EXPERIMENT] = '';
}
