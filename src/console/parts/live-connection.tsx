/** The header's word on the event stream: live, connecting, or down (and what the screens do meanwhile). */
import { useEffect, useState } from 'preact/hooks';
import { followState, type LiveState } from './live-events.js';
import { FALLBACK_MS } from './use-follow.js';

const SHORT: Record<LiveState, string> = {
  live: '● Live',
  connecting: '○ Connecting…',
  down: `○ Offline: re-reading every ${FALLBACK_MS / 1000} s`,
};

const LONG: Record<LiveState, string> = {
  live: 'Live updates on: screens show changes as they happen',
  connecting: 'Connecting to live updates',
  down: `Live updates down: screens re-read every ${FALLBACK_MS / 1000} s while the console reconnects`,
};

export function LiveConnection(): preact.JSX.Element {
  const [state, setState] = useState<LiveState>('connecting');
  useEffect(() => followState(setState), []);
  return (
    <span role="status" class={`live-connection live-${state}`} title={LONG[state]} aria-label={LONG[state]}>
      {SHORT[state]}
    </span>
  );
}
