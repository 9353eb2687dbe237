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
 * A filter that does not pay its way steps aside. A lookup in a table of many slots costs a few
 * cache misses; a repeat it drops saves the writer a row. In a launch spike, where nearly every row
 * is new, the table costs more than it saves: when fewer than one row in SIDE_BELOW of a window of
 * WINDOW_ROWS lookups is a repeat, the filter empties its table and looks up only the rows of
 * sentinel players (one player in eight, by the uid's top three bits); every other row is queued
 * without a lookup (slotOf and slotNow answer NO_SLOT). The sentinels' rows go on measuring how
 * often rows repeat, and once one in BACK_FROM of a window is a repeat again, every row is looked up
 * again. Stepping aside only ever queues more rows (the database's key keeps one): the table is
 * emptied as the filter steps aside, so that it never holds a row of a player whose later rows it
 * did not see, and a row is still a repeat only of the newest variant queued for its key.
 *
 * HOT PATH (with exposures on): a repeat is found with one hash, at most two slots' four compares
 * and no allocation; a row of a player who is not a sentinel while the filter stands aside costs
 * one compare.
 */

/** The table: SLOT_FIELDS strings per slot, "" in an empty one (no experiment is named ""). */
export interface RepeatFilter {
  /** (Slots - 1) without its lowest bit (a set's first slot is even), or -1 for no filter (--exposure-filter 0). */
  readonly mask: number;
  readonly table: string[];
  /** Rows looked up in this window: each either a repeat (hits) or remembered. */
  looked: number;
  hits: number;
  /** Standing aside: only sentinel players' rows are looked up. */
  aside: boolean;
}

/** Lookups over which the share of repeats is judged. */
export const WINDOW_ROWS = 4096;
/** The filter steps aside when fewer than one row in SIDE_BELOW of a window is a repeat... */
export const SIDE_BELOW = 16;
/** ...and looks up every row again once one in BACK_FROM is. */
export const BACK_FROM = 8;
/** Players whose uid's top three bits are 0 (one in eight) are the sentinels. */
const SENTINEL_SHIFT = 29;

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
  return { mask: slots === 0 ? -1 : (slots - 1) & ~1, table, looked: 0, hits: 0, aside: false };
}

/**
 * A set found by slotOf earlier (a request's rows are looked up when staged and again when its answer
 * is committed), as the filter stands now: NO_SLOT when it has stepped aside since and the player is
 * not a sentinel, so that no such row enters the table while it stands aside.
 */
export function slotNow(filter: RepeatFilter, slot: number, uid: number): number {
  return passesBy(filter, uid) ? NO_SLOT : slot;
}

/** Whether the filter stands aside for the player of uid `uid` (it is not a sentinel). */
function passesBy(filter: RepeatFilter, uid: number): boolean {
  return filter.aside && uid >>> SENTINEL_SHIFT !== 0;
}

/** The set of (player's uid, experiment's hash: naming.ts experimentHash) as its newer slot's offset, or NO_SLOT without a filter. */
export function slotOf(filter: RepeatFilter, uid: number, experimentHash: number): number {
  const mask = filter.mask;
  if (mask < 0 || passesBy(filter, uid)) return NO_SLOT;
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
  if (!holds(t, slot, environment, experiment, variant, player) && !holds(t, slot + SLOT_FIELDS, environment, experiment, variant, player)) return false;
  filter.hits++;
  if (++filter.looked === WINDOW_ROWS) judgeWindow(filter);
  return true;
}

/**
 * A window of lookups is over: the filter steps aside (its table emptied) or back, or stays as it is
 * between the two shares.
 */
function judgeWindow(filter: RepeatFilter): void {
  const looked = filter.looked;
  const hits = filter.hits;
  filter.looked = 0;
  filter.hits = 0;
  if (!filter.aside && hits * SIDE_BELOW < looked) {
    filter.aside = true;
    filter.table.fill('');
  } else if (filter.aside && hits * BACK_FROM >= looked) {
    filter.aside = false;
  }
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
  // Judged after the row is in: stepping aside empties the table, this row too.
  if (++filter.looked === WINDOW_ROWS) judgeWindow(filter);
}

/** The row was not queued after all (the writer's queue was full): its set forgets it, if it holds it. */
export function forget(filter: RepeatFilter, slot: number, environment: string, experiment: string, variant: string, player: string): void {
  if (slot === NO_SLOT) return;
  const t = filter.table;
  if (holds(t, slot, environment, experiment, variant, player)) t[slot + EXPERIMENT] = '';
  if (holds(t, slot + SLOT_FIELDS, environment, experiment, variant, player)) t[slot + SLOT_FIELDS + EXPERIMENT] = '';
}
