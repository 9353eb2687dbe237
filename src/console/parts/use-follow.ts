/**
 * Keeps what a screen shows current: `reload` runs when an event of the admin event stream concerns
 * the screen's environment (and item), coalesced over a moment so a batch of changes applied
 * together is one re-read; while the stream is down it runs every FALLBACK_MS instead.
 */
import { useEffect, useRef } from 'preact/hooks';
import { concerns, currentState, followState, subscribe } from './live-events.js';

/** How often a screen re-reads while the event stream is down. */
export const FALLBACK_MS = 5000;
const COALESCE_MS = 50;

export function useFollow(reload: () => void, env?: string, id?: string): void {
  // The newest reload, without re-subscribing when the caller passes a new function each render.
  const latest = useRef(reload);
  latest.current = reload;
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    const soon = (): void => {
      if (timer === null) {
        timer = setTimeout(() => {
          timer = null;
          latest.current();
        }, COALESCE_MS);
      }
    };
    const off = subscribe((e) => {
      if (concerns(e, env, id)) soon();
    });
    const poll = setInterval(() => {
      if (currentState() !== 'live') latest.current();
    }, FALLBACK_MS);
    // Counted as a follower, so the connection runs while this screen is open.
    const stopFollowing = followState(() => undefined);
    return () => {
      off();
      stopFollowing();
      clearInterval(poll);
      if (timer !== null) clearTimeout(timer);
    };
  }, [env, id]);
}
