/**
 * A delivery loop's end of its feed from the control thread (src/control/protocol.ts): builds a
 * Directory from a snapshot and swaps it in, or applies a delta slice to the current one in place,
 * then acknowledges it; sends the key ids its requests used. CPU only: mapping texts and catalog
 * bodies come with the update, nothing is read from the store here.
 */
import type { MessagePort } from 'node:worker_threads';
import { Directory, MappingLibrary, type CatalogBodies, type CatalogView } from '../delivery/directory.js';
import type { FrontEndState } from '../delivery/state.js';
import { logError } from '../runtime/log.js';
import type { RevisionReader } from '../store/types.js';
import type { CatalogText, DirectoryUpdate, FeedMessage, FeedReply } from './protocol.js';

const EMPTY = { seq: 0, environments: [], keys: [], contents: [] };

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

export class DeliveryFeed {
  /** The newest directory; also swapped into the attached front-end state. */
  directory: Directory;
  storeAvailable = true;
  private readonly port: MessagePort;
  private readonly texts = new UpdateTexts();
  private readonly mappings: MappingLibrary;
  private state: FrontEndState | null = null;

  constructor(port: MessagePort) {
    this.port = port;
    this.mappings = new MappingLibrary(this.texts, (id, err) =>
      logError(`mapping ${id} cannot be compiled; wrapped requests for its content answer 500: ${(err as Error).message}`),
    );
    this.directory = new Directory(EMPTY, this.mappings, new Map());
    port.on('message', (m: FeedMessage) => this.onMessage(m));
  }

  /** From now on updates are swapped into `state` (and the current one is, at once). */
  attach(state: FrontEndState): void {
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
    try {
      this.apply(m.update);
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      logError(`directory update ${m.seq} not applied: ${error}`);
    }
    const reply: FeedReply = { type: 'directory-applied', seq: m.seq, error };
    this.port.postMessage(reply);
  }

  private apply(update: DirectoryUpdate): void {
    for (const t of update.mappings) this.texts.texts.set(t.id, t.json);
    try {
      if (update.kind === 'snapshot') {
        this.directory = new Directory(update.snapshot, this.mappings, catalogBodies(update.catalogs));
        if (this.state !== null) this.state.directory = this.directory;
      } else {
        this.directory.applyDelta(update.delta, catalogBodies(update.catalogs), update.last);
      }
    } finally {
      this.texts.texts.clear();
    }
  }
}

/** The bodies as Buffers over the received bytes (no copy). */
function catalogBodies(list: readonly CatalogText[]): CatalogBodies {
  const out = new Map<string, CatalogView>();
  for (const c of list) {
    out.set(c.envId, {
      body: Buffer.from(c.body.buffer, c.body.byteOffset, c.body.byteLength),
      gzip: Buffer.from(c.gzip.buffer, c.gzip.byteOffset, c.gzip.byteLength),
      tag: c.tag,
    });
  }
  return out;
}
