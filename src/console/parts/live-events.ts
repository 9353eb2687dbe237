/**
 * The console's one connection to the admin event stream (`GET /admin/v1/events`, docs/admin.md
 * "Live events"), shared by every screen. It is read with fetch, not EventSource, so the admin
 * token goes in the Authorization header as on every other call. Each event is an audit entry as
 * it is written; screens subscribe (use-follow.ts) and re-read what an event concerns. On every
 * (re)connection (`ready`) every screen re-reads: what happened while the stream was down is not
 * replayed. A dropped or silent connection is opened again with a growing delay.
 */
import { onWrite, storedToken } from '../api.js';

/** An audit entry as the stream sends it; null: anything may have changed (re-read everything). */
export interface LiveEvent {
  id: number;
  at: string;
  actor: string;
  action: string;
  env: string | null;
  target: string | null;
  detail: unknown;
}

export type LiveState = 'connecting' | 'live' | 'down';

type EventListener = (e: LiveEvent | null) => void;
type StateListener = (s: LiveState) => void;

const events = new Set<EventListener>();
const states = new Set<StateListener>();
let state: LiveState = 'down';
let abort: AbortController | null = null;
let retryTimer: ReturnType<typeof setTimeout> | null = null;
let delayMs = 1000;
const MAX_DELAY_MS = 15_000;
/** Silence this many heartbeats long means the connection is dead: it is opened again. */
const SILENT_BEATS = 2.5;

function setState(next: LiveState): void {
  if (next === state) return;
  state = next;
  for (const l of states) l(next);
}

function tell(e: LiveEvent | null): void {
  for (const l of [...events]) l(e);
}

// The console's own writes re-read the screens at once, whether the stream is up or not.
onWrite(() => tell(null));

/** Screens that show admin state subscribe while open; returns the unsubscribe. */
export function subscribe(listener: EventListener): () => void {
  events.add(listener);
  return () => events.delete(listener);
}

/** The header's indicator follows the connection while the console is signed in; the connection runs while one follows. */
export function followState(listener: StateListener): () => void {
  states.add(listener);
  if (states.size === 1) connect();
  listener(state);
  return () => {
    states.delete(listener);
    if (states.size === 0) disconnect();
  };
}

export function currentState(): LiveState {
  return state;
}

function disconnect(): void {
  abort?.abort();
  abort = null;
  if (retryTimer !== null) clearTimeout(retryTimer);
  retryTimer = null;
  setState('down');
}

function retry(): void {
  abort = null;
  setState('down');
  if (states.size === 0 || retryTimer !== null) return;
  retryTimer = setTimeout(() => {
    retryTimer = null;
    connect();
  }, delayMs);
  delayMs = Math.min(delayMs * 2, MAX_DELAY_MS);
}

function connect(): void {
  const token = storedToken();
  if (token === null || abort !== null) return;
  const ctl = new AbortController();
  abort = ctl;
  setState('connecting');
  void read(ctl, token).finally(() => {
    if (abort === ctl) retry();
  });
}

async function read(ctl: AbortController, token: string): Promise<void> {
  let res: Response;
  try {
    res = await fetch('/admin/v1/events', { headers: { authorization: `Bearer ${token}` }, signal: ctl.signal });
  } catch {
    return;
  }
  if (!res.ok || res.body === null) return;
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let silentMs = 45_000;
  let watchdog = setTimeout(() => ctl.abort(), silentMs);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      clearTimeout(watchdog);
      watchdog = setTimeout(() => ctl.abort(), silentMs);
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const frame = parseFrame(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (frame === null) continue;
        if (frame.event === 'ready') {
          const beat = (frame.data as { heartbeatMs?: number }).heartbeatMs;
          if (typeof beat === 'number') silentMs = beat * SILENT_BEATS;
          delayMs = 1000;
          setState('live');
          tell(null);
        } else if (frame.event === 'reset') {
          tell(null);
        } else if (frame.event === 'change') {
          tell(frame.data as LiveEvent);
        }
      }
    }
  } catch {
    // Aborted, or the connection broke: retried by the caller.
  } finally {
    clearTimeout(watchdog);
  }
}

function parseFrame(block: string): { event: string; data: unknown } | null {
  let event = 'message';
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('event: ')) event = line.slice(7);
    else if (line.startsWith('data: ')) data += line.slice(6);
  }
  if (data === '') return null;
  try {
    return { event, data: JSON.parse(data) as unknown };
  } catch {
    return null;
  }
}

/**
 * Whether an event concerns what a screen shows: an environment's (and, with `id`, one item's)
 * state. Anything of no environment (an import, a token revoked with its scheduled changes) and
 * every scheduled change, rollout or sync of the environment may touch any item: they concern all.
 */
export function concerns(e: LiveEvent | null, env?: string, id?: string): boolean {
  if (e === null || e.env === null || env === undefined) return true;
  const sameEnv = e.env === env || (e.action === 'environment.sync' && e.target === env);
  if (!sameEnv) return false;
  if (id === undefined) return true;
  const itemAction = e.action.startsWith('content.') || e.action.startsWith('mapping.');
  return !itemAction || (e.target ?? '').toLowerCase() === id.toLowerCase();
}
