/**
 * A delivery loop's repeat filter (--exposure-filter): most exposures are a player seen again, and
 * the writer needs each (environment, experiment, player) once. A two-way set-associative table: a
 * row's set (two slots side by side) is a hash of the player's uid and the experiment; a slot of
 * its set holding exactly the same (experiment, variant, player, environment) means the row was
 * queued before, and the exposure is dropped as a repeat. Anything else is queued and takes the
 * set's newer slot; the newer row before it moves to the older slot, and the older one is forgotten
 * (then it may be queued once more: the database's key keeps one). Two rows of one set that share
 * a hash no longer push each other out, as they would in a single slot.
 *
 * A set never holds two variants of one (environment, experiment, player): a row whose key its
 * newer slot holds replaces that slot, one whose key its older slot holds pushes that slot out.
 * So a row is a repeat only of the newest variant queued for its key, as the writer counts moves.
 *
 * Exact: the strings are compared, never their hashes, so a first exposure is never dropped
 * (test/unit/exposures/filter.test.ts holds it to a plain Set). A player who moves to another
 * variant is not a repeat: the writer records the move.
 *
 * HOT PATH (with exposures on): a repeat is found with one hash, at most two slots' four compares
 * and no allocation.
 */

/** The table: SLOT_FIELDS strings per slot, "" in an empty one (no experiment is named ""). */
export interface RepeatFilter {
  /** (Slots - 1) without its lowest bit (a set's first slot is even), or -1 for no filter (--exposure-filter 0). */
  readonly mask: number;
  readonly table: string[];
}

const SLOT_FIELDS = 4;
const EXPERIMENT = 0;
const VARIANT = 1;
const PLAYER = 2;
const ENVIRONMENT = 3;

/** No set: nothing is a repeat (no filter). */
export const NO_SLOT = -1;

/** A filter of `slots` (0, or a power of two of at least 2: src/runtime/config.ts checks it). */
export function newRepeatFilter(slots: number): RepeatFilter {
  // Pushed, not `new Array(n)`: V8 gives a large preallocated array dictionary elements, slow to read.
  const table: string[] = [];
  for (let i = slots * SLOT_FIELDS; i > 0; i--) table.push('');
  return { mask: slots === 0 ? -1 : (slots - 1) & ~1, table };
}

/** The set of (player's uid, experiment's hash: naming.ts experimentHash) as its newer slot's offset, or NO_SLOT without a filter. */
export function slotOf(filter: RepeatFilter, uid: number, experimentHash: number): number {
  const mask = filter.mask;
  if (mask < 0) return NO_SLOT;
  return ((uid ^ experimentHash) & mask) * SLOT_FIELDS;
}

function holds(t: readonly string[], at: number, environment: string, experiment: string, variant: string, player: string): boolean {
  return t[at + EXPERIMENT] === experiment && t[at + VARIANT] === variant && t[at + PLAYER] === player && t[at + ENVIRONMENT] === environment;
}

function holdsKey(t: readonly string[], at: number, environment: string, experiment: string, player: string): boolean {
  return t[at + EXPERIMENT] === experiment && t[at + PLAYER] === player && t[at + ENVIRONMENT] === environment;
}

/** Whether the set `slot` holds exactly this row: it was queued before. */
export function isRepeat(filter: RepeatFilter, slot: number, environment: string, experiment: string, variant: string, player: string): boolean {
  if (slot === NO_SLOT) return false;
  const t = filter.table;
  return holds(t, slot, environment, experiment, variant, player) || holds(t, slot + SLOT_FIELDS, environment, experiment, variant, player);
}

function put(t: string[], at: number, environment: string, experiment: string, variant: string, player: string): void {
  t[at + EXPERIMENT] = experiment;
  t[at + VARIANT] = variant;
  t[at + PLAYER] = player;
  t[at + ENVIRONMENT] = environment;
}

/** The row was queued: its set's newer slot holds it from now on. */
export function remember(filter: RepeatFilter, slot: number, environment: string, experiment: string, variant: string, player: string): void {
  if (slot === NO_SLOT) return;
  const t = filter.table;
  // The newer slot holds this key with another variant: replaced, the older slot kept.
  if (!holdsKey(t, slot, environment, experiment, player)) put(t, slot + SLOT_FIELDS, t[slot + ENVIRONMENT]!, t[slot + EXPERIMENT]!, t[slot + VARIANT]!, t[slot + PLAYER]!);
  put(t, slot, environment, experiment, variant, player);
}

/** The row was not queued after all (the writer's queue was full): its set forgets it, if it holds it. */
export function forget(filter: RepeatFilter, slot: number, environment: string, experiment: string, variant: string, player: string): void {
  if (slot === NO_SLOT) return;
  const t = filter.table;
  if (holds(t, slot, environment, experiment, variant, player)) t[slot + EXPERIMENT] = '';
  if (holds(t, slot + SLOT_FIELDS, environment, experiment, variant, player)) t[slot + SLOT_FIELDS + EXPERIMENT] = '';
}
