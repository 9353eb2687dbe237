/**
 * Which API keys this delivery loop answered since its last report (sent to the control thread, which
 * records each key's last use in the store). A key is noted once per report round: the view carries
 * the round it was last noted in, so the hot path compares two numbers instead of adding the key's id
 * to a Set on every request (a hash of the id and a table probe).
 */
import type { KeyView } from './directory.js';

export interface KeyUse {
  /** Ids of the keys used since the last report. */
  readonly ids: Set<string>;
  /** Bumped by every report; a view whose useRound differs is noted again. */
  round: number;
}

export function newKeyUse(): KeyUse {
  return { ids: new Set(), round: 0 };
}

/** HOT PATH: every authorized request. */
export function noteKeyUse(use: KeyUse, view: KeyView): void {
  if (view.useRound === use.round) return;
  view.useRound = use.round;
  use.ids.add(view.keyId);
}

/** The ids used since the last call, and a new round (the set is emptied by the reader). */
export function takeKeyUse(use: KeyUse): Set<string> {
  use.round++;
  return use.ids;
}
