/**
 * The exposure writer thread (--exposures): receives the loops' batches on one port per loop, holds
 * them (the loops reserve every row on the shared QUEUED_ROWS counter before they post, and drop
 * what would pass --exposure-queue: the rows held here are bounded by it), and writes them to the
 * exposure database in transactions of at most WRITE_ROWS rows (db.ts), oldest first.
 *
 * The database down or refusing: the rows stay held and the write is tried again after 100 ms,
 * doubling to 2 s; the loops meanwhile fill the queue and drop (their counters), which this thread
 * logs once a minute with the reason. Writing resumes by itself when the database answers. The
 * database is opened at the start, but a start that cannot reach it goes on: delivery never waits
 * for exposures.
 *
 * On stop it takes what the ports still hold, writes until nothing is held or the time given has
 * passed, then closes the database and ends.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { configureLog, logError, logInfo, logWarning } from '../runtime/log.js';
import { EXPOSURE_PLAYERS_MOVED, EXPOSURE_QUEUE_ROWS, EXPOSURE_ROWS_WRITTEN, EXPOSURE_WRITE_FAILURES } from '../metrics/layout.js';
import { HeldRows } from './held-rows.js';
import { QUEUED_ROWS, type ExposureMessage } from './protocol.js';
import { describeExposuresTarget, sqlitePathOf } from './url.js';
import { WRITE_ROWS, type ExposureRow, type ExposureWriter, type WriteOutcome } from './db.js';
import type { WriterCommand, WriterEvent, WriterInit } from './writer-protocol.js';

const lifecycle = parentPort;
if (lifecycle === null) throw new Error('src/exposures/writer-thread.ts runs as a worker thread');
const init = workerData as WriterInit;
configureLog(init.log);

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 2000;
/**
 * A write with no answer for this long (a network partition: no error, no reply) counts as failed:
 * the connection is dropped and opened again. The late transaction may still commit; writing its rows
 * again inserts and counts nothing twice (postgres.ts).
 */
const WRITE_TIMEOUT_MS = 10_000;
/** Rows refused by the database itself (not its state) are logged at most this often. */
const REFUSED_LOG_MS = 60_000;

/** One kind of database as this thread uses it: how to open it and how its failures read. */
interface Kind {
  open(): Promise<ExposureWriter>;
  /** True when the failure is about the rows themselves (writing them again cannot succeed). */
  refusesRows(err: unknown): boolean;
  describe(err: unknown): string;
}

/** The database opened. */
interface Target {
  readonly kind: Kind;
  readonly writer: ExposureWriter;
}

const state = {
  kind: null as Kind | null,
  target: null as Target | null,
  /** The failure of the last write or opening while it lasts (the reason the drop line gives), else null. */
  failure: null as string | null,
  everOpened: false,
  /** Set by the stop command: the time after which held rows are given up. */
  deadline: null as number | null,
  /** Resolves the pump's wait for rows (a batch or the stop ends it). */
  wake: null as (() => void) | null,
  /** Resolves the pump's wait before a retry (only the stop ends it early). */
  interrupt: null as (() => void) | null,
  droppedLogged: 0,
  refusedLoggedAt: 0,
  refusedSinceLog: 0,
};
const held = new HeldRows();
const queued = new Int32Array(init.queue);
const counters = init.counters;
const where = describeExposuresTarget({ kind: init.kind, url: init.url });

function post(event: WriterEvent): void {
  lifecycle!.postMessage(event);
}

function onBatch(batch: ExposureMessage): void {
  held.add(batch);
  counters[EXPOSURE_QUEUE_ROWS] = held.size;
  const wake = state.wake;
  state.wake = null;
  wake?.();
}

/** Only the driver of the kind in use is loaded. */
async function loadKind(): Promise<Kind> {
  if (init.kind === 'sqlite') {
    const m = await import('./sqlite.js');
    return { open: () => Promise.resolve(m.openSqliteExposureWriter(sqlitePathOf(init.url))), refusesRows: m.sqliteRefusesRows, describe: m.describeSqliteFailure };
  }
  const m = await import('./postgres.js');
  return { open: () => m.openPostgresExposureWriter(init.url), refusesRows: m.postgresRefusesRows, describe: m.describePostgresFailure };
}

function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A write or an opening failed: the first failure of an outage is logged, the rest counted. */
function noteFailure(reason: string): void {
  counters[EXPOSURE_WRITE_FAILURES]! += 1;
  if (state.failure === null) logWarning(`exposures: cannot write to ${where} (${reason}); rows are held and written when it answers`);
  state.failure = reason;
}

function noteWritten(): void {
  if (state.failure !== null) logInfo(`exposures: writing to ${where} again`);
  state.failure = null;
}

/** Rows the database refused for what they hold: given up, logged at most once a minute. */
function noteRefused(kind: Kind, err: unknown): void {
  state.refusedSinceLog++;
  const now = Date.now();
  if (now - state.refusedLoggedAt < REFUSED_LOG_MS) return;
  logError(`exposures: ${state.refusedSinceLog} row(s) refused by the database and not written: ${kind.describe(err)}`);
  state.refusedLoggedAt = now;
  state.refusedSinceLog = 0;
}

/** Writes `rows`; a batch the database refuses for its rows is written in halves down to the row at fault. */
async function writeSplitting(target: Target, rows: readonly ExposureRow[]): Promise<WriteOutcome> {
  try {
    return await target.writer.write(rows);
  } catch (err) {
    if (!target.kind.refusesRows(err)) throw err;
    if (rows.length === 1) {
      noteRefused(target.kind, err);
      return { inserted: 0, moved: 0 };
    }
    const half = rows.length >> 1;
    const a = await writeSplitting(target, rows.slice(0, half));
    const b = await writeSplitting(target, rows.slice(half));
    return { inserted: a.inserted + b.inserted, moved: a.moved + b.moved };
  }
}

/** Opens the database, or notes why it cannot be (tried again before the next write). */
async function ensureTarget(): Promise<Target | null> {
  if (state.target !== null) return state.target;
  const kind = (state.kind ??= await loadKind());
  // Through a promise: an opening that throws at once (a SQLite path that cannot be a file) is a failure like any other.
  const opening = Promise.resolve().then(() => kind.open());
  try {
    state.target = { kind, writer: await inTime(opening) };
    if (!state.everOpened) logInfo(`exposures: recording to ${where}`);
    state.everOpened = true;
    return state.target;
  } catch (err) {
    // An opening that answers after its time is closed at once: the next try opens its own.
    if (err instanceof WriteTimeout) opening.then((late) => late.close(), () => undefined).catch(() => undefined);
    noteFailure(kind.describe(err));
    return null;
  }
}

class WriteTimeout extends Error {
  constructor() {
    super(`no answer within ${WRITE_TIMEOUT_MS / 1000} s`);
  }
}

/** `work`, or a WriteTimeout once it has had no answer for WRITE_TIMEOUT_MS (an opening or a write). */
function inTime<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new WriteTimeout()), WRITE_TIMEOUT_MS);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** One write of the oldest rows; true when it succeeded. */
async function writeOnce(): Promise<boolean> {
  const target = await ensureTarget();
  if (target === null) return false;
  const rows = held.peek(WRITE_ROWS);
  let outcome: WriteOutcome;
  try {
    outcome = await inTime(writeSplitting(target, rows));
  } catch (err) {
    if (err instanceof WriteTimeout) {
      noteFailure(err.message);
      // Opened again for the next try; the connection that hangs is let go without waiting for it.
      state.target = null;
      target.writer.close().catch(() => undefined);
      return false;
    }
    noteFailure(target.kind.describe(err));
    return false;
  }
  release(rows.length);
  counters[EXPOSURE_ROWS_WRITTEN]! += outcome.inserted;
  counters[EXPOSURE_PLAYERS_MOVED]! += outcome.moved;
  noteWritten();
  return true;
}

/** Takes `n` rows off the front (written or given up) and out of the loops' queue count. */
function release(n: number): void {
  held.remove(n);
  Atomics.sub(queued, QUEUED_ROWS, n);
  counters[EXPOSURE_QUEUE_ROWS] = held.size;
}

function waitForRows(): Promise<void> {
  return new Promise((resolve) => (state.wake = resolve));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    // A stop cuts the wait short: the time left goes to writing. New rows do not: they wait with the others.
    const timer = setTimeout(() => {
      state.interrupt = null;
      resolve();
    }, ms);
    state.interrupt = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

function stopped(): boolean {
  return state.deadline !== null && (held.size === 0 || Date.now() >= state.deadline);
}

async function pump(): Promise<void> {
  let retryMs = RETRY_MIN_MS;
  while (!stopped()) {
    if (held.size === 0) {
      await waitForRows();
      continue;
    }
    if (await writeOnce()) {
      retryMs = RETRY_MIN_MS;
      continue;
    }
    const wait = state.deadline === null ? retryMs : Math.min(retryMs, Math.max(0, state.deadline - Date.now()));
    await sleep(wait);
    retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
  }
}

/** The loops' dropped rows so far (their counters, summed). */
function droppedSoFar(): number {
  let n = 0;
  if (init.drops !== null) for (const c of init.drops.counters) n += c[init.drops.slot]!;
  return n;
}

function logDrops(): void {
  const total = droppedSoFar();
  const n = total - state.droppedLogged;
  state.droppedLogged = total;
  if (n <= 0) return;
  const reason = state.failure ?? `${where} does not keep up (${held.size} rows held)`;
  const period = init.dropLogMs === 60_000 ? 'the last minute' : `the last ${init.dropLogMs / 1000} s`;
  logWarning(`exposures: ${n} dropped in ${period} (writer queue full: ${reason})`);
}

/** The stop: what the ports still hold first (a loop's last batch may not have been delivered yet). */
function onCommand(cmd: WriterCommand): void {
  for (const port of init.ports) {
    for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) onBatch(m.message as ExposureMessage);
  }
  state.deadline = Date.now() + cmd.timeoutMs;
  const wake = state.wake;
  const interrupt = state.interrupt;
  state.wake = null;
  state.interrupt = null;
  wake?.();
  interrupt?.();
}

async function finish(dropTimer: NodeJS.Timeout): Promise<void> {
  clearInterval(dropTimer);
  logDrops();
  for (const port of init.ports) port.close();
  const left = held.size;
  if (left > 0) {
    logError(`exposures: ${left} rows not written at shutdown (${state.failure ?? 'out of time'}): ${where} did not take them within the shutdown timeout`);
    release(left);
  }
  try {
    await state.target?.writer.close();
  } catch (err) {
    logError(`exposures: closing ${where}: ${describeError(err)}`);
  }
  post({ type: 'stopped', left });
  lifecycle!.close();
}

async function main(): Promise<void> {
  for (const port of init.ports) port.on('message', onBatch);
  lifecycle!.on('message', onCommand);
  // The driver first: one that cannot load fails the start (`failed`), where the database's state never does.
  state.kind = await loadKind();
  const dropTimer = setInterval(logDrops, init.dropLogMs);
  dropTimer.unref();
  post({ type: 'ready' });
  // Opened now (the tables created, the connection tried): a failure is logged and tried again with the first rows.
  await ensureTarget();
  await pump();
  await finish(dropTimer);
}

main().catch((err: unknown) => {
  post({ type: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  lifecycle.close();
});
