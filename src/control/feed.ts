/**
 * A delivery loop's end of its feed from the control thread (src/control/protocol.ts): builds a
 * Directory from a snapshot and swaps it in, or applies a delta slice to the current one in place,
 * then acknowledges it; sends the key ids its requests used. CPU only: mapping texts and catalog
 * bodies come with the update, nothing is read from the store here.
 */
import type { MessagePort } from 'node:worker_threads';
import { Directory, MappingLibrary, type CatalogBodies, type CatalogView } from '../delivery/directory.js';
import { recordApply } from '../runtime/loop-delay.js';
import { logError } from '../runtime/log.js';
import type { RevisionReader } from '../store/types.js';
import { isCatalogChange, type AccessRecord, type CatalogChange, type CatalogUpdate, type DeltaUpdate, type DirectoryUpdate, type FeedMessage, type FeedReply } from './protocol.js';
import type { EnvChange, EventStreams } from '../delivery/events.js';
import { NO_CONTENTS } from './routed.js';

const EMPTY = { seq: 0, environments: [], keys: [], contents: NO_CONTENTS };

/** The mapping texts of the update being built, as the MappingLibrary's reader. */
class UpdateTexts implements RevisionReader {
  texts = new Map<number, string>();

  readRevision(): undefined {
    return undefined;
  }

  readMapping(mappingId: number): string | undefined {
    return this.texts.get(mappingId);
  }

  close(): void {
    this.texts.clear();
  }
}

/**
 * What the feed keeps current in a delivery loop's state (the loop's FrontEndState has these): the
 * directory it swaps in, whether the store is available, and the change streams it tells.
 */
export interface FeedTarget {
  directory: Directory;
  storeAvailable: boolean;
  readonly events: EventStreams;
}

export class DeliveryFeed {
  /** The newest directory; also swapped into the attached front-end state. */
  directory: Directory;
  storeAvailable = true;
  private readonly port: MessagePort;
  private readonly texts = new UpdateTexts();
  private readonly mappings: MappingLibrary;
  private state: FeedTarget | null = null;
  /**
   * Content ids changed per environment by the delta being applied (null: everything), until its
   * last slice. A list, not a Set: a delta names each content once, and a Set of an import's 33,000
   * ids grew by whole-table copies on the delivery loop.
   */
  private readonly pending = new Map<string, string[] | null>();
  /** The change events of the update just applied, written once it is acknowledged. */
  private notice: { readonly changes: readonly EnvChange[]; readonly snapshot: boolean } | null = null;

  constructor(port: MessagePort) {
    this.port = port;
    this.mappings = new MappingLibrary(this.texts, (id, err) =>
      logError(`mapping ${id} cannot be compiled; wrapped requests for its content answer 500: ${(err as Error).message}`),
    );
    this.directory = new Directory(EMPTY, this.mappings, new Map());
    port.on('message', (m: FeedMessage) => this.onMessage(m));
  }

  /** From now on updates are swapped into `state` (and the current one is, at once). */
  attach(state: FeedTarget): void {
    this.state = state;
    state.directory = this.directory;
    state.storeAvailable = this.storeAvailable;
  }

  /** Sends the key ids used since the last report (and forgets them here). */
  reportKeyUse(used: Set<string>): void {
    if (used.size === 0) return;
    const reply: FeedReply = { type: 'key-use', keyIds: [...used], at: new Date().toISOString() };
    used.clear();
    this.port.postMessage(reply);
  }

  /** Sends the access-log records sampled since the last report (the caller starts a new array). */
  reportAccess(records: readonly AccessRecord[]): void {
    const reply: FeedReply = { type: 'access', records };
    this.port.postMessage(reply);
  }

  close(): void {
    this.port.close();
  }

  private onMessage(m: FeedMessage): void {
    if (m.type === 'store-status') {
      this.storeAvailable = m.status === 'ok';
      if (this.state !== null) this.state.storeAvailable = this.storeAvailable;
      return;
    }
    let error: string | null = null;
    const started = performance.now();
    try {
      this.apply(m.update);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      logError(`directory update ${m.seq} not applied: ${error}`);
    }
    recordApply(performance.now() - started);
    const reply: FeedReply = { type: 'directory-applied', seq: m.seq, error };
    this.port.postMessage(reply);
    this.flushNotice();
  }

  private apply(update: DirectoryUpdate): void {
    for (const t of update.mappings) this.texts.texts.set(t.id, t.json);
    try {
      if (update.kind === 'snapshot') {
        const before = this.directory.environments;
        this.directory = new Directory(update.snapshot, this.mappings, catalogBodies(update.catalogs, null));
        if (this.state !== null) this.state.directory = this.directory;
        this.pending.clear();
        this.notify(everyEnvironment(before, this.directory.environments), true);
      } else {
        this.collectChanges(update);
        this.directory.applyDelta(update.delta, catalogBodies(update.catalogs, this.directory), update.last, this.pending);
        if (update.last) {
          const changes: EnvChange[] = [];
          for (const [envId, ids] of this.pending) changes.push({ envId, changed: ids });
          this.pending.clear();
          this.notify(changes, false);
        }
      }
    } finally {
      this.texts.texts.clear();
    }
  }

  /**
   * Notes the environments a delta slice changes whole (the Directory notes each content it
   * changes while applying the slice) and ends the event streams of keys it revokes.
   */
  private collectChanges(update: DeltaUpdate): void {
    const delta = update.delta;
    for (const e of delta.environments) this.pending.set(e.envId, null);
    if (this.state === null) return;
    for (const k of delta.keys) if (k.key === null) this.state.events.closeKey(k.keyId);
  }

  /** Notes the change events of an applied update (requests already see it). */
  private notify(changes: readonly EnvChange[], snapshot: boolean): void {
    this.notice = { changes, snapshot };
  }

  /**
   * Writes the noted events to this loop's streams, after the acknowledgement went out: writing to
   * 10,000 streams took the loop ~1 s on the loaded development machine (a corked write per socket),
   * which the admin write would otherwise wait for.
   */
  private flushNotice(): void {
    const notice = this.notice;
    this.notice = null;
    if (notice === null || this.state === null) return;
    this.state.events.notify(this.directory.seq, notice.changes, this.directory.environments, notice.snapshot);
  }
}

/** After a whole snapshot: every environment, before or after, may have changed. */
function everyEnvironment(before: ReadonlyMap<string, unknown>, after: ReadonlyMap<string, unknown>): EnvChange[] {
  const out: EnvChange[] = [];
  for (const envId of after.keys()) out.push({ envId, changed: null });
  for (const envId of before.keys()) if (!after.has(envId)) out.push({ envId, changed: null });
  return out;
}

/**
 * The bodies by environment (their pieces are the received views: no copy); a change is applied to
 * the body `held` holds for its environment.
 */
function catalogBodies(list: readonly CatalogUpdate[], held: Directory | null): CatalogBodies {
  const out = new Map<string, CatalogView>();
  for (const c of list) {
    if (!isCatalogChange(c)) {
      out.set(c.envId, c);
      continue;
    }
    const view = held?.environments.get(c.envId)?.catalog;
    if (view === undefined) throw new Error(`a catalog change for environment ${JSON.stringify(c.envId)}, which this loop holds no catalog of`);
    out.set(c.envId, changedCatalog(view, c));
  }
  return out;
}

/** `view` with the pieces `change` replaces: new piece lists, the held ones left as they are. */
function changedCatalog(view: CatalogView, change: CatalogChange): CatalogView {
  if (view.gzip === null || view.body.length !== change.bodyPieces || view.gzip.length !== change.gzipPieces) {
    throw new Error(`the catalog change for environment ${JSON.stringify(change.envId)} does not fit the catalog held`);
  }
  return {
    body: replacedPieces(view.body, change.bodyAt, change.body),
    bodyBytes: change.bodyBytes,
    gzip: replacedPieces(view.gzip, change.gzipAt, change.gzip),
    gzipBytes: change.gzipBytes,
    tag: change.tag,
  };
}

function replacedPieces(held: readonly Uint8Array[], at: readonly number[], pieces: readonly Uint8Array[]): Uint8Array[] {
  const out = held.slice();
  for (let i = 0; i < at.length; i++) {
    const index = at[i]!;
    if (!(index >= 0 && index < out.length) || pieces[i] === undefined) throw new Error('a catalog change names a piece the catalog does not have');
    out[index] = pieces[i]!;
  }
  return out;
}
