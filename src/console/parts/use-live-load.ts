/** Data a screen keeps up to date while it is open: read when it opens, then again every few seconds. */
import { useEffect, useState } from 'preact/hooks';

export interface LiveLoaded<T> {
  /** The newest answer; kept while the next read is under way or after it failed, so nothing flickers. */
  data: T | null;
  /** The last read's error, cleared by the next read that succeeds. */
  error: unknown;
  /** When the newest answer arrived (ms since the epoch, this browser's clock), null before the first. */
  readAt: number | null;
}

/**
 * Runs `load` when the screen opens (and when `deps` change) and every `everyMs` after, one read at
 * a time: a read still under way when the next is due is not doubled. An answer that arrives after
 * the screen closed or its deps changed is dropped.
 */
export function useLiveLoad<T>(load: () => Promise<T>, deps: unknown[], everyMs: number): LiveLoaded<T> {
  const [state, setState] = useState<LiveLoaded<T>>({ data: null, error: null, readAt: null });
  useEffect(() => {
    let live = true;
    let busy = false;
    function read(): void {
      if (busy) return;
      busy = true;
      load().then(
        (data) => {
          busy = false;
          if (live) setState({ data, error: null, readAt: Date.now() });
        },
        (error: unknown) => {
          busy = false;
          if (live) setState((s) => ({ ...s, error }));
        },
      );
    }
    read();
    const timer = setInterval(read, everyMs);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [...deps, everyMs]);
  return state;
}
