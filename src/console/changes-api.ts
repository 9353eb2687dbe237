/**
 * The admin API's answers about what scheduled changes write (docs/schedule.md, "What a change
 * writes", "Conflicts"), and the calls the console makes for them: a change's writes item by item,
 * the edit of its ops, and the conflict check run before a write.
 */
import { api, seg, type Preview, type Schedule } from './api.js';

/** An item's newest revision and mapping; null when it does not exist. */
export interface ItemState {
  revision: number;
  hash: string;
  text: string;
  minAppVersion: string | null;
  mapping: unknown;
}

/** A pending change named in an answer, and what it is (or would be) refused with. */
export interface ChangeRef {
  id: string;
  at: string;
  note: string;
  ops: string[];
  rollout: string | null;
  error: { code: string; message: string } | null;
}

export interface ItemWrites {
  env: string;
  id: string;
  now: ItemState | null;
  before: ItemState | null;
  after: ItemState | null;
}

export interface ChangeWrites {
  schedule: Schedule;
  items: ItemWrites[];
  /** The pending changes due before it, folded into `before`. */
  earlier: ChangeRef[];
  /** What it would be refused with at its time as things stand. */
  error: { code: string; message: string } | null;
}

export interface ConflictCheck {
  refused: { code: string; message: string } | null;
  conflicts: ChangeRef[];
  checked: number;
}

/** A write to check: made now, scheduled `at`, or the new ops of the pending change `schedule`. */
export interface ProposedWrite {
  ops: Record<string, unknown>[];
  at?: string;
  schedule?: string;
}

export function changeWrites(env: string, id: string): Promise<ChangeWrites> {
  return api<ChangeWrites>('GET', `environments/${seg(env)}/schedules/${seg(id)}/writes`);
}

export function editChangeOps(env: string, id: string, ops: Record<string, unknown>[]): Promise<Schedule> {
  return api<Schedule>('PUT', `environments/${seg(env)}/schedules/${seg(id)}/ops`, { ops });
}

export function checkConflicts(env: string, write: ProposedWrite): Promise<ConflictCheck> {
  return api<ConflictCheck>('POST', `environments/${seg(env)}/schedules/check`, write);
}

/** A preview at a time (`preview?at=`): the answer then, the pending changes folded in, and the answer now. */
export interface PreviewAt extends Preview {
  changes?: ChangeRef[];
  now?: { answer: unknown; revision: number; hash: string } | null;
}
