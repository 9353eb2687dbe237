/**
 * A delivery loop's side of experiment exposures (docs/experiments.md): the rows its answers noted,
 * held as columns and sent to the exposure writer thread on the loop's port (protocol.ts), every
 * SEND_MS and whenever BATCH_ROWS wait, and once more when the loop stops.
 *
 * A request's exposures are staged while it is being answered and count only if the answer succeeds
 * (200, or 304: the client holds the variant); an error answer or a request that ends unanswered
 * notes none. The request path calls stageExposure for each variant a rule path chose; its
 * lifecycle (src/delivery/lifecycle.ts) then settles them: committed when the request was answered
 * well, dropped when it was answered with an error, or held on the request while the render pool
 * works (settleStaged), to be committed when it is answered (commitHeld).
 *
 * Before a batch is posted, its rows are reserved on the writer's shared queue counter (protocol.ts
 * QUEUED_ROWS): what would pass --exposure-queue is dropped and counted (L_EXPOSURES_DROPPED), what
 * is posted is counted as noted (L_EXPOSURES_NOTED).
 *
 * HOT PATH (with exposures on): stageExposure. A repeat its filter drops costs a hash and four
 * compares and allocates nothing.
 */
import type { MessagePort } from 'node:worker_threads';
import { L_EXPOSURES_DROPPED, L_EXPOSURES_NOTED, type LoopCounters } from '../metrics/layout.js';
import { dimensionsText } from './dimensions.js';
import * as repeatFilter from './filter.js';
import { NO_TEXT, QUEUED_ROWS, type ExposureBatch, type ExposureLink } from './protocol.js';

// The functions a request calls, as this module's own consts (src/delivery/wire/README.md, "Module consts").
const { isRepeat, remember, slotNow, slotOf } = repeatFilter;

/** The settings of ServeConfig.exposures a loop reads. */
export interface RecorderSettings {
  readonly dimensions: readonly string[];
  /** --exposure-queue: rows the writer holds at most. */
  readonly queue: number;
  /** --exposure-filter: slots of the repeat filter (0: none). */
  readonly filterSlots: number;
}

/** How long a noted row waits at most before it is sent. */
export const SEND_MS = 50;
/** Rows that are sent at once, without waiting for SEND_MS. */
export const BATCH_ROWS = 2048;

/**
 * Rows noted and not sent yet: the next ExposureBatch's texts and columns as the loop fills them (the
 * first `n` entries of each typed column; a column grows when a request's rows pass its end), plus
 * each row's filter slot. Reused from one batch to the next: a send copies what it posts.
 */
interface Rows {
  n: number;
  readonly texts: string[];
  /** The index of each text in `texts`. */
  readonly textIds: Map<string, number>;
  readonly players: string[];
  environments: Int32Array;
  experiments: Int32Array;
  variants: Int32Array;
  appVersions: Int32Array;
  dimensions: Int32Array;
  at: Float64Array;
  slots: Int32Array;
}

export interface ExposureRecorder {
  readonly port: MessagePort;
  readonly queued: Int32Array;
  readonly queueLimit: number;
  readonly dimensionNames: readonly string[];
  readonly filter: repeatFilter.RepeatFilter;
  readonly counters: LoopCounters;
  readonly rows: Rows;
  /** The pending send (SEND_MS after the first row of a batch), or null. */
  timer: NodeJS.Timeout | null;
  /**
   * The request whose exposures are staged (stagedCount of them, each an experiment, its variant and
   * its filter slot), or null. One at a time: a loop answers one request at a time up to its answer or
   * its pool jobs, and settles its exposures then.
   */
  owner: object | null;
  stagedCount: number;
  readonly stagedExperiments: string[];
  readonly stagedVariants: string[];
  readonly stagedSlots: number[];
  stagedEnvironment: string;
  stagedPlayer: string;
  stagedUid: number;
  stagedAppVersion: string;
  stagedP: Record<string, unknown> | null;
}

/** A request's exposures while the render pool works for it (settleStaged), committed once it is answered well. */
export interface HeldExposures {
  readonly environment: string;
  readonly player: string;
  readonly uid: number;
  readonly appVersion: string;
  readonly dimensions: string;
  readonly experiments: readonly string[];
  readonly variants: readonly string[];
  readonly slots: readonly number[];
}

export function newExposureRecorder(link: ExposureLink, settings: RecorderSettings, counters: LoopCounters): ExposureRecorder {
  return {
    port: link.port,
    queued: new Int32Array(link.queue),
    queueLimit: settings.queue,
    dimensionNames: settings.dimensions,
    filter: repeatFilter.newRepeatFilter(settings.filterSlots),
    counters,
    rows: newRows(),
    timer: null,
    owner: null,
    stagedCount: 0,
    stagedExperiments: [],
    stagedVariants: [],
    stagedSlots: [],
    stagedEnvironment: '',
    stagedPlayer: '',
    stagedUid: 0,
    stagedAppVersion: '',
    stagedP: null,
  };
}

function newRows(): Rows {
  return {
    n: 0,
    texts: [],
    textIds: new Map(),
    players: [],
    environments: new Int32Array(BATCH_ROWS),
    experiments: new Int32Array(BATCH_ROWS),
    variants: new Int32Array(BATCH_ROWS),
    appVersions: new Int32Array(BATCH_ROWS),
    dimensions: new Int32Array(BATCH_ROWS),
    at: new Float64Array(BATCH_ROWS),
    slots: new Int32Array(BATCH_ROWS),
  };
}

/** The index of `text` in the batch's texts, added if new. */
function textOf(rows: Rows, text: string): number {
  let id = rows.textIds.get(text);
  if (id === undefined) {
    id = rows.texts.length;
    rows.texts.push(text);
    rows.textIds.set(text, id);
  }
  return id;
}

function grownInts(a: Int32Array): Int32Array {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}

/** Doubles the typed columns (a request's rows passed their end). */
function grow(rows: Rows): void {
  rows.environments = grownInts(rows.environments);
  rows.experiments = grownInts(rows.experiments);
  rows.variants = grownInts(rows.variants);
  rows.appVersions = grownInts(rows.appVersions);
  rows.dimensions = grownInts(rows.dimensions);
  rows.slots = grownInts(rows.slots);
  const at = new Float64Array(rows.at.length * 2);
  at.set(rows.at);
  rows.at = at;
}

/**
 * Stages one exposure of the request `owner` (its player `player` with uid `uid`, app version `v` as
 * sent, "" without one, attributes `p`): `variant` of `experiment` (whose hash is naming.ts
 * experimentHash). A repeat the filter holds is dropped here. HOT PATH.
 */
export function stageExposure(
  x: ExposureRecorder,
  owner: object,
  environment: string,
  experiment: string,
  hash: number,
  variant: string,
  uid: number,
  player: string,
  v: string,
  p: Record<string, unknown>,
): void {
  const filter = x.filter;
  const slot = slotOf(filter, uid, hash);
  if (isRepeat(filter, slot, environment, experiment, variant, player)) return;
  if (x.owner !== owner) {
    // Another request's stage left unsettled (its start failed past its own handling) is dropped.
    x.owner = owner;
    x.stagedCount = 0;
    x.stagedEnvironment = environment;
    x.stagedPlayer = player;
    x.stagedUid = uid;
    x.stagedAppVersion = v;
    x.stagedP = p;
  }
  const i = x.stagedCount++;
  x.stagedExperiments[i] = experiment;
  x.stagedVariants[i] = variant;
  x.stagedSlots[i] = slot;
}

/**
 * Settles the exposures `owner` staged once its start returned: `answered` (it was answered at once)
 * and `succeeded` (with 200 or 304): committed; answered otherwise: dropped; not answered yet (the
 * render pool works for it): returned to be held on the request until it is (commitHeld).
 */
export function settleStaged(x: ExposureRecorder, owner: object, answered: boolean, succeeded: boolean): HeldExposures | null {
  if (x.owner !== owner) return null;
  const n = x.stagedCount;
  let held: HeldExposures | null = null;
  if (answered) {
    if (succeeded) commitStaged(x, n);
  } else {
    held = {
      environment: x.stagedEnvironment,
      player: x.stagedPlayer,
      uid: x.stagedUid,
      appVersion: x.stagedAppVersion,
      dimensions: dimensionsText(x.dimensionNames, x.stagedP!),
      experiments: x.stagedExperiments.slice(0, n),
      variants: x.stagedVariants.slice(0, n),
      slots: x.stagedSlots.slice(0, n),
    };
  }
  x.owner = null;
  x.stagedCount = 0;
  x.stagedP = null;
  return held;
}

function commitStaged(x: ExposureRecorder, n: number): void {
  const rows = x.rows;
  const environment = x.stagedEnvironment;
  // The texts a request's rows share, looked up once.
  const environmentId = textOf(rows, environment);
  const v = appVersionId(rows, x.stagedAppVersion);
  const dimensions = textOf(rows, dimensionsText(x.dimensionNames, x.stagedP!));
  const at = Date.now();
  for (let i = 0; i < n; i++) {
    appendRow(x, environment, x.stagedExperiments[i]!, x.stagedVariants[i]!, x.stagedPlayer, environmentId, v, dimensions, at, x.stagedSlots[i]!, x.stagedUid);
  }
  rowsAdded(x);
}

/** The app version's text index, NO_TEXT for none ("" as sent). */
function appVersionId(rows: Rows, v: string): number {
  return v === '' ? NO_TEXT : textOf(rows, v);
}

/** Commits the exposures of a request answered well after the render pool worked for it. */
export function commitHeld(x: ExposureRecorder, held: HeldExposures): void {
  const rows = x.rows;
  const environmentId = textOf(rows, held.environment);
  const v = appVersionId(rows, held.appVersion);
  const dimensions = textOf(rows, held.dimensions);
  const at = Date.now();
  for (let i = 0; i < held.experiments.length; i++) {
    appendRow(x, held.environment, held.experiments[i]!, held.variants[i]!, held.player, environmentId, v, dimensions, at, held.slots[i]!, held.uid);
  }
  rowsAdded(x);
}

/**
 * Queues one row, unless the filter holds it by now (a row noted twice in one answer, or meanwhile);
 * `environmentId`, `v` and `dimensions` are the text indexes of its environment, app version and
 * dimensions, `staged` the filter slot found when it was staged, `uid` its player's.
 */
function appendRow(
  x: ExposureRecorder,
  environment: string,
  experiment: string,
  variant: string,
  player: string,
  environmentId: number,
  v: number,
  dimensions: number,
  at: number,
  staged: number,
  uid: number,
): void {
  const filter = x.filter;
  const slot = slotNow(filter, staged, uid);
  if (isRepeat(filter, slot, environment, experiment, variant, player)) return;
  remember(filter, slot, environment, experiment, variant, player);
  const rows = x.rows;
  const i = rows.n++;
  if (i === rows.at.length) grow(rows);
  rows.players.push(player);
  rows.environments[i] = environmentId;
  rows.appVersions[i] = v;
  rows.dimensions[i] = dimensions;
  rows.experiments[i] = textOf(rows, experiment);
  rows.variants[i] = textOf(rows, variant);
  rows.at[i] = at;
  rows.slots[i] = slot;
}

/** After rows were added: send now when a batch is full, else within SEND_MS. */
function rowsAdded(x: ExposureRecorder): void {
  const waiting = x.rows.n;
  if (waiting >= BATCH_ROWS) sendExposures(x);
  else if (waiting > 0 && x.timer === null) {
    x.timer = setTimeout(sendExposures, SEND_MS, x);
    x.timer.unref();
  }
}

/**
 * Sends the rows waiting: reserves them on the writer's queue counter, drops (and counts) what does
 * not fit, posts the rest as one batch.
 */
export function sendExposures(x: ExposureRecorder): void {
  if (x.timer !== null) {
    clearTimeout(x.timer);
    x.timer = null;
  }
  const rows = x.rows;
  const n = rows.n;
  if (n === 0) return;
  const kept = reserveRows(x.queued, x.queueLimit, n);
  if (kept < n) {
    // The newest rows go. Their slots forget them: the player's next exposure is queued again.
    const texts = rows.texts;
    for (let i = kept; i < n; i++) {
      repeatFilter.forget(x.filter, rows.slots[i]!, texts[rows.environments[i]!]!, texts[rows.experiments[i]!]!, texts[rows.variants[i]!]!, rows.players[i]!);
    }
    x.counters[L_EXPOSURES_DROPPED]! += n - kept;
    rows.players.length = kept;
  }
  if (kept > 0) {
    x.counters[L_EXPOSURES_NOTED]! += kept;
    const batch: ExposureBatch = {
      type: 'exposures',
      texts: rows.texts,
      players: rows.players,
      environments: rows.environments.slice(0, kept),
      experiments: rows.experiments.slice(0, kept),
      variants: rows.variants.slice(0, kept),
      appVersions: rows.appVersions.slice(0, kept),
      dimensions: rows.dimensions.slice(0, kept),
      at: rows.at.slice(0, kept),
    };
    // A message is a copy: the columns are filled again from the start.
    x.port.postMessage(batch);
  }
  rows.n = 0;
  rows.players.length = 0;
  rows.texts.length = 0;
  rows.textIds.clear();
}

/**
 * Adds up to `n` rows to the writer's queue counter without passing `limit`; returns how many it
 * added. A compare-and-exchange loop rather than an add and a correction: a loop never makes the
 * counter pass the bound, not even for a moment, so another loop never drops rows it had room for.
 */
export function reserveRows(queued: Int32Array, limit: number, n: number): number {
  let current = Atomics.load(queued, QUEUED_ROWS);
  for (;;) {
    const take = Math.min(n, Math.max(0, limit - current));
    if (take === 0) return 0;
    const seen = Atomics.compareExchange(queued, QUEUED_ROWS, current, current + take);
    if (seen === current) return take;
    current = seen;
  }
}

/** The loop stops: the rows waiting are sent, the port is closed (the writer sees it close after the last batch). */
export function stopRecorder(x: ExposureRecorder): void {
  sendExposures(x);
  x.port.close();
}
