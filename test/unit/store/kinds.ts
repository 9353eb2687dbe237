/** The stores every contract suite runs against, opened fresh for each test. */
import { join } from 'node:path';
import { openStore, type Store } from '../../../src/store/index.js';
import { createDatabase } from '../../helpers/postgres.js';
import { tempDir } from './helpers.js';

export const STORE_KINDS = ['sqlite', 'memory', 'postgres'] as const;
export type StoreKind = (typeof STORE_KINDS)[number];

/**
 * A fresh, empty store of `kind`: a SQLite file at `fileName` under a temporary directory, an
 * in-memory SQLite database, or a real PostgreSQL database of its own; `cleanup` removes the file
 * or drops the database (after the store is closed).
 */
export async function openStoreOfKind(kind: StoreKind, fileName = 'rcd.db'): Promise<{ store: Store; cleanup: () => Promise<void> | void }> {
  if (kind === 'memory') return { store: await openStore('memory:'), cleanup: () => undefined };
  const place: Place = kind === 'sqlite' ? sqlitePlace(fileName) : await createDatabase();
  try {
    return { store: await openStore(place.url), cleanup: place.drop };
  } catch (err) {
    // A store that did not open is not closed by the test: remove what was made for it here.
    await place.drop();
    throw err;
  }
}

/** Where a store of one kind lives, and how to remove it. */
interface Place {
  readonly url: string;
  readonly drop: () => Promise<void> | void;
}

function sqlitePlace(fileName: string): Place {
  const t = tempDir();
  return { url: `sqlite:${join(t.dir, fileName)}`, drop: t.cleanup };
}
