/**
 * The control thread's end of every delivery loop's feed (src/control/protocol.ts): sends routing
 * updates and resolves once every loop applied them; receives the loops' key-use reports.
 *
 * The first update is the whole directory snapshot. After that, each publish() reads the change log
 * from the sequence number every loop applied, loads the current state of what changed and sends it
 * as a delta (src/control/delta.ts: catalog bodies built here, cut into slices). A reader that fell
 * behind the log's retained window, or a delta that a loop could not apply, gets a whole snapshot
 * again, which puts every side back on one state.
 */
import { receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { BULK_ENTRIES, SAME_PRIORITY, type BulkRunner } from '../runtime/priority.js';
import type { ChangeEntry, RoutingDelta, Store } from '../store/types.js';
import { CatalogBook } from './catalog.js';
import { deltaUpdates, SLICE_BUDGET_US } from './delta.js';
import type { AccessRecord, DirectoryUpdate, FeedMessage, FeedReply, MappingText } from './protocol.js';
import { routedSnapshot } from './routed.js';

/**
 * Change-log entries read per delta: bounds the memory of one step of a big import or sync (its
 * entries and their current state); the loops see the next batch after the previous one applied.
 */
export const CHANGE_BATCH = 10_000;

interface Pending {
  remaining: number;
  readonly errors: string[];
  readonly resolve: () => void;
  readonly reject: (err: Error) => void;
}

export interface FeedsOptions {
  /** Change-log entries per delta (default CHANGE_BATCH). */
  readonly changeBatch?: number;
  /** What one slice may cost a loop, by src/control/delta.ts's model (default SLICE_BUDGET_US). */
  readonly sliceBudgetUs?: number;
  /** Receives the loops' sampled access-log records (--access-log); dropped when absent. */
  readonly onAccess?: (records: readonly AccessRecord[]) => void;
  /** Runs a big batch, or a reload once delivery runs, at a lower priority (default: as it is). */
  readonly bulk?: BulkRunner;
}

/** The control thread's end of every delivery loop's feed. */
export class Feeds {
  private readonly ports: readonly MessagePort[];
  private readonly onKeyUse: (keyIds: readonly string[], at: string) => void;
  private readonly log: (line: string) => void;
  private readonly onAccess: ((records: readonly AccessRecord[]) => void) | undefined;
  private readonly pending = new Map<number, Pending>();
  private seq = 0;
  /** The catalog entries the loops hold; null until a snapshot was applied (or after a failure). */
  private book: CatalogBook | null = null;
  private applied = 0;
  /** The first snapshot was applied: the loops serve. */
  private serving = false;
  private chain: Promise<void> = Promise.resolve();

  private readonly changeBatch: number;
  private readonly sliceBudgetUs: number;
  private readonly bulk: BulkRunner;

  constructor(
    ports: readonly MessagePort[],
    onKeyUse: (keyIds: readonly string[], at: string) => void,
    log: (line: string) => void,
    opts: FeedsOptions = {},
  ) {
    this.ports = ports;
    this.onKeyUse = onKeyUse;
    this.log = log;
    this.changeBatch = opts.changeBatch ?? CHANGE_BATCH;
    this.onAccess = opts.onAccess;
    this.sliceBudgetUs = opts.sliceBudgetUs ?? SLICE_BUDGET_US;
    this.bulk = opts.bulk ?? SAME_PRIORITY;
    for (const port of ports) port.on('message', (m: FeedReply) => this.onReply(m));
  }

  /** The change-log sequence number every loop has applied. */
  get appliedSeq(): number {
    return this.applied;
  }

  /**
   * Resolves, with the change-log seq they now reflect, once every loop answers that requests see
   * the store's state as of now (every change committed before the call). Calls run one after the other; each carries whatever the log holds
   * beyond what the loops applied, so concurrent writes share the updates.
   */
  publish(store: Store): Promise<number> {
    const run = this.chain.then(() => this.publishChanges(store));
    this.chain = run.catch(() => undefined);
    return run.then(() => this.applied);
  }

  private async publishChanges(store: Store): Promise<void> {
    if (this.book === null) return this.publishSnapshot(store);
    for (;;) {
      const batch = await store.changesSince(this.applied, this.changeBatch);
      if (!batch.complete) {
        this.log(`the change log no longer holds the changes after ${this.applied}: reloading the whole directory`);
        return this.publishSnapshot(store);
      }
      const lastEntry = batch.entries[batch.entries.length - 1];
      if (lastEntry === undefined) return;
      const applied = batch.entries.length >= BULK_ENTRIES
        ? await this.bulk.run(() => this.publishBatch(store, batch.entries, lastEntry.seq))
        : await this.publishBatch(store, batch.entries, lastEntry.seq);
      if (!applied) return this.publishSnapshot(store);
      if (lastEntry.seq >= batch.headSeq) return;
    }
  }

  /** Sends one batch of the change log as a delta; false when a whole snapshot must follow. */
  private async publishBatch(store: Store, entries: readonly ChangeEntry[], lastSeq: number): Promise<boolean> {
    // A failed read leaves every side as it was: the next publish reads the same entries again.
    const book = this.book!;
    const delta = await store.loadDelta(entries, this.applied, lastSeq);
    const texts = await store.readMappings(newMappingIds(delta, book));
    const reader = { readMapping: (id: number) => texts.get(id) };
    try {
      // One slice at a time: a loop's port hands it every queued message in one turn, so the
      // next slice goes out only once every loop applied the previous one and served requests.
      for (const update of deltaUpdates(delta, book, reader, this.sliceBudgetUs)) await this.sendUpdate(update);
      this.applied = delta.toSeq;
      return true;
    } catch (err) {
      // The loops (or the catalog book) may now hold part of the delta: a whole snapshot puts
      // every side back on one state, and the write is live once it is applied.
      this.log(`a routing delta could not be applied (${(err as Error).message}): reloading the whole directory`);
      this.book = null;
      return false;
    }
  }

  /** The whole directory; once delivery runs, a reload (a reader behind the log) is bulk work. */
  private publishSnapshot(store: Store): Promise<void> {
    if (!this.serving) return this.sendSnapshot(store);
    return this.bulk.run(() => this.sendSnapshot(store));
  }

  private async sendSnapshot(store: Store): Promise<void> {
    this.book = null;
    const snapshot = await store.loadDirectory();
    const book = new CatalogBook(snapshot);
    const ids = new Set<number>();
    for (const c of snapshot.contents) if (c.mappingId !== null) ids.add(c.mappingId);
    const texts = await store.readMappings([...ids]);
    const mappings: MappingText[] = [];
    for (const [id, json] of texts) mappings.push({ id, json });
    await this.sendUpdate({ kind: 'snapshot', snapshot: routedSnapshot(snapshot), mappings, catalogs: book.allBodies() });
    this.book = book;
    this.applied = snapshot.seq;
    this.serving = true;
  }

  /** Sends one update to every loop; resolves once all applied it. */
  private sendUpdate(update: DirectoryUpdate): Promise<void> {
    const seq = ++this.seq;
    const applied = new Promise<void>((resolve, reject) => {
      this.pending.set(seq, { remaining: this.ports.length, errors: [], resolve, reject });
    });
    this.send({ type: 'directory', seq, update });
    return applied;
  }

  send(message: FeedMessage): void {
    for (const port of this.ports) port.postMessage(message);
  }

  /** Handles what the loops sent before now (their last key-use reports) without waiting a turn. */
  drain(): void {
    for (const port of this.ports) {
      for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) this.onReply(m.message as FeedReply);
    }
  }

  close(): void {
    for (const port of this.ports) port.close();
    for (const p of this.pending.values()) p.reject(new Error('the control thread is closing'));
    this.pending.clear();
  }

  private onReply(m: FeedReply): void {
    if (m.type === 'key-use') {
      this.onKeyUse(m.keyIds, m.at);
      return;
    }
    if (m.type === 'access') {
      this.onAccess?.(m.records);
      return;
    }
    const p = this.pending.get(m.seq);
    if (p === undefined) return;
    if (m.error !== null) p.errors.push(m.error);
    if (--p.remaining > 0) return;
    this.pending.delete(m.seq);
    if (p.errors.length === 0) p.resolve();
    else p.reject(new Error(`a delivery loop could not apply the directory: ${p.errors.join('; ')}`));
  }
}

/** The mapping ids a delta references that the loops do not hold yet: their texts travel with it. */
function newMappingIds(delta: RoutingDelta, book: CatalogBook): number[] {
  const ids = new Set<number>();
  for (const c of delta.contents) {
    const id = c.meta?.mappingId ?? null;
    if (id !== null && !book.knowsMapping(id)) ids.add(id);
  }
  return [...ids];
}
