/**
 * Where the client keeps its cache between launches. An adapter stores one text (the client's
 * serialized state) under one name; the client reads it once, at its first refresh, and writes it
 * after every refresh that changed something. One text rather than an entry per content id: the
 * state is written whole after a refresh anyway, and one value keeps every adapter atomic (a crash
 * mid-write leaves the previous state, never half of each).
 */
export interface ClientStorage {
  /** The stored text, or null when nothing was stored yet. */
  read(): Promise<string | null>;
  write(text: string): Promise<void>;
}

/** Keeps the state in memory only: a new process starts cold. */
export function memoryStorage(): ClientStorage {
  let text: string | null = null;
  return {
    read: () => Promise.resolve(text),
    write: (next) => {
      text = next;
      return Promise.resolve();
    },
  };
}
