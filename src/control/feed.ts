/**
 * A delivery loop's end of its feed from the control thread (src/control/protocol.ts): builds each
 * directory update into a Directory (CPU only: mapping texts come with the update, nothing is read
 * from the store here), swaps it in, and acknowledges it; sends the key ids its requests used.
 */
import type { MessagePort } from 'node:worker_threads';
import { Directory, MappingLibrary } from '../delivery/directory.js';
import type { FrontEndState } from '../delivery/state.js';
import { logError } from '../runtime/log.js';
import type { RevisionReader } from '../store/types.js';
import type { DirectoryUpdate, FeedMessage, FeedReply } from './protocol.js';

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
  appliedSeq = 0;
  private readonly port: MessagePort;
  private readonly texts = new UpdateTexts();
  private readonly mappings: MappingLibrary;
  private state: FrontEndState | null = null;

  constructor(port: MessagePort) {
    this.port = port;
    this.mappings = new MappingLibrary(this.texts, (id, err) =>
      logError(`mapping ${id} cannot be compiled; wrapped requests for its content answer 500: ${(err as Error).message}`),
    );
    this.directory = new Directory(EMPTY, this.mappings);
    port.on('message', (m: FeedMessage) => this.onMessage(m));
  }

  /** From now on updates are swapped into `state` (and the current one is, at once). */
  attach(state: FrontEndState): void {
    this.state = state;
    state.directory = this.directory;
    state.storeAvailable = this.storeAvailable;
    state.appliedSeq = this.appliedSeq;
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
      this.directory = new Directory(update.snapshot, this.mappings);
    } finally {
      this.texts.texts.clear();
    }
    this.appliedSeq = update.snapshot.seq;
    if (this.state !== null) {
      this.state.directory = this.directory;
      this.state.appliedSeq = this.appliedSeq;
    }
  }
}
