/**
 * The identity of a SQLite store's files, taken when the store is opened.
 *
 * SQLite keeps writing to a file descriptor whose file was deleted (or renamed over): the commit
 * succeeds, and is gone once the process ends. Comparing each file's device and inode numbers with
 * the ones opened is what tells a write that would be durable from one that would not. It costs one
 * stat per file, a few microseconds, before and after each write.
 */
import { statSync, type BigIntStats } from 'node:fs';

interface FileIdentity {
  readonly path: string;
  readonly dev: bigint;
  readonly ino: bigint;
}

export class StoreFiles {
  private readonly opened: readonly FileIdentity[];

  /**
   * Records the identity of each path that exists now. The database file must; its `-wal` and
   * `-shm` companions exist while a WAL connection is open and are checked when they do.
   */
  constructor(paths: readonly string[]) {
    const opened: FileIdentity[] = [];
    for (const path of paths) {
      const st = statOrUndefined(path);
      if (st !== undefined) opened.push({ path, dev: st.dev, ino: st.ino });
    }
    this.opened = opened;
  }

  /** Null while every file is the one opened; otherwise what happened, for the log and the answer. */
  problem(): string | null {
    for (const f of this.opened) {
      let st: BigIntStats | undefined;
      try {
        st = statOrUndefined(f.path);
      } catch (err) {
        return `${f.path} cannot be checked: ${(err as Error).message}`;
      }
      if (st === undefined) return `${f.path} was deleted`;
      if (st.dev !== f.dev || st.ino !== f.ino) return `${f.path} was replaced by another file`;
    }
    return null;
  }
}

function statOrUndefined(path: string): BigIntStats | undefined {
  try {
    return statSync(path, { bigint: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
