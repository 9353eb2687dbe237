/**
 * Browser storage adapters. The Web Storage and IndexedDB types are written here structurally (the
 * few members used) so that this module compiles without the DOM library and accepts the browser's
 * own objects, which are the defaults.
 */
import type { ClientStorage } from './storage.js';

/** The members of the Web Storage API used here (window.localStorage fits). */
export interface WebStorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/**
 * localStorage under one key (default `rcd-cache`). Simple and synchronous underneath; browsers cap
 * it at about 5 MB per origin, so prefer IndexedDB for large catalogs.
 */
export function localStorageStorage(options: { key?: string; storage?: WebStorageLike } = {}): ClientStorage {
  const key = options.key ?? 'rcd-cache';
  const store = (): WebStorageLike => options.storage ?? (globalThis as unknown as { localStorage: WebStorageLike }).localStorage;
  return {
    read: () => Promise.resolve().then(() => store().getItem(key)),
    write: (text) => Promise.resolve().then(() => store().setItem(key, text)),
  };
}

interface IdbRequest<T> {
  result: T;
  error: unknown;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}
interface IdbObjectStore {
  get(key: string): IdbRequest<unknown>;
  put(value: unknown, key: string): IdbRequest<unknown>;
}
interface IdbTransaction {
  objectStore(name: string): IdbObjectStore;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
  error: unknown;
}
interface IdbDatabase {
  readonly objectStoreNames: { contains(name: string): boolean };
  createObjectStore(name: string): unknown;
  transaction(name: string, mode: 'readonly' | 'readwrite'): IdbTransaction;
}
interface IdbOpenRequest extends IdbRequest<IdbDatabase> {
  onupgradeneeded: (() => void) | null;
}
/** The member of IDBFactory used here (window.indexedDB fits). */
export interface IdbFactoryLike {
  open(name: string, version: number): IdbOpenRequest;
}

const OBJECT_STORE = 'state';

/**
 * IndexedDB: database `rcd` (option `database`), one object store, the state under one key (default
 * `rcd-cache`). Larger quotas than localStorage and asynchronous writes.
 */
export function indexedDbStorage(options: { database?: string; key?: string; indexedDB?: IdbFactoryLike } = {}): ClientStorage {
  const key = options.key ?? 'rcd-cache';
  let opened: Promise<IdbDatabase> | null = null;
  const db = (): Promise<IdbDatabase> => {
    opened ??= new Promise<IdbDatabase>((resolve, reject) => {
      const factory = options.indexedDB ?? (globalThis as unknown as { indexedDB: IdbFactoryLike }).indexedDB;
      const req = factory.open(options.database ?? 'rcd', 1);
      req.onupgradeneeded = () => {
        if (!req.result.objectStoreNames.contains(OBJECT_STORE)) req.result.createObjectStore(OBJECT_STORE);
      };
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => {
        opened = null;
        reject(asError(req.error));
      };
    });
    return opened;
  };
  return {
    read: async () => {
      const tx = (await db()).transaction(OBJECT_STORE, 'readonly');
      const req = tx.objectStore(OBJECT_STORE).get(key);
      return new Promise<string | null>((resolve, reject) => {
        req.onsuccess = () => resolve(typeof req.result === 'string' ? req.result : null);
        req.onerror = () => reject(asError(req.error));
      });
    },
    write: async (text) => {
      const tx = (await db()).transaction(OBJECT_STORE, 'readwrite');
      tx.objectStore(OBJECT_STORE).put(text, key);
      // Resolved on the transaction's completion: the write is committed, not just queued.
      return new Promise<void>((resolve, reject) => {
        tx.oncomplete = () => resolve();
        tx.onerror = () => reject(asError(tx.error));
        tx.onabort = () => reject(asError(tx.error));
      });
    },
  };
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value));
}
