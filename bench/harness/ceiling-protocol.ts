/**
 * The messages between a benchmark and the ceiling or floor process it forks (bench/harness/ceiling.ts):
 * the answers it is configured with, and what it reports back.
 */
export interface CeilingAnswer {
  readonly status: number;
  readonly body: string;
  /** Extra headers sent as the server sends them (a 304 is all headers); none when absent. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * A request pool's own answers, for the floor of bench:cost: `answers` holds one answer per distinct
 * answer of the pool (answers that differ only in the user's uid, as rcd's wrapped answers do in their
 * ETag's last part and meta, count as one: rcd keeps one entry for them and writes the uid into it),
 * `order` the index of each request's answer in the pool's order. They are sent in that order, from
 * the first again after the last: wrk (one thread) and the sequential client send a pool in order, so
 * each answer goes out as often as the server under test sends it.
 */
export interface PoolAnswers {
  readonly answers: readonly CeilingAnswer[];
  readonly order: readonly number[];
}

export interface CeilingConfig {
  /** The answer to every request on a known route, unless the key check or `pool` below say otherwise. */
  readonly ok: CeilingAnswer;
  /** When set, a request the key check lets through gets the next of these instead of `ok`. */
  readonly pool?: PoolAnswers;
  /** When set, a request whose X-Api-Key differs gets `unauthorized` (scenario 8's 401s). */
  readonly validKey: string | null;
  readonly unauthorized: CeilingAnswer | null;
}

export type CeilingMessage = { type: 'set'; config: CeilingConfig };
export type CeilingReply = { type: 'listening'; port: number } | { type: 'ok' } | { type: 'error'; message: string };
