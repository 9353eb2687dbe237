/**
 * The probe: before a scenario is loaded, a sample of its requests goes to the real server and every
 * answer is validated in depth (the scenario's own check); the answer of median size becomes what the
 * ceiling or the floor sends, so both sides put the same bytes on the wire. Shared by the suite
 * (run.ts) and bench:cost (cost.ts).
 */
import type { CeilingAnswer, CeilingConfig, PoolAnswers } from './ceiling-protocol.js';
import { BENCH_KEY } from '../fixtures/generate.js';
import type { Target } from './processes.js';
import { BASE_SEED, syntheticResponse, type RequestEntry, type Scenario } from './scenarios.js';

const PROBE_SAMPLES = 48;
const MAX_PROBLEMS = 8;

export interface ProbeResult {
  readonly problems: string[];
  readonly config: CeilingConfig;
  readonly bodyBytes: number;
}

/** One request of a pool sent to the server at `url`: its response, body unread. */
function fetchEntry(url: string, e: RequestEntry): Promise<Response> {
  const init: RequestInit = { method: e.method, headers: e.headers };
  if (e.body !== undefined) init.body = e.body;
  return fetch(url + e.path, init);
}

/** One request of a pool, answered by the server at `url`. */
export async function send(url: string, e: RequestEntry): Promise<{ status: number; body: string }> {
  const res = await fetchEntry(url, e);
  return { status: res.status, body: await res.text() };
}

/** The response of median size among the samples, so that the ceiling sends the bytes of a typical answer. */
function median(answers: CeilingAnswer[]): CeilingAnswer | null {
  if (answers.length === 0) return null;
  const sorted = [...answers].sort((a, b) => a.body.length - b.body.length);
  return sorted[Math.floor(sorted.length / 2)] as CeilingAnswer;
}

function ceilingConfig(s: Scenario, answers: CeilingAnswer[]): CeilingConfig {
  if (s.name === 'bad-requests') {
    const unauthorized = median(answers.filter((a) => a.status === 401));
    return { ok: median(answers.filter((a) => a.status !== 401)) ?? { status: 400, body: '{}' }, validKey: BENCH_KEY, unauthorized };
  }
  return { ok: median(answers) ?? { status: 200, body: '{}' }, validKey: null, unauthorized: null };
}

/** Validates a sample of the scenario against `server` (synthetic answers when null) and returns the ceiling's configuration. */
export async function probe(s: Scenario, server: Target | null): Promise<ProbeResult> {
  // The first entries: pools are random already, and a stride could alias with scenario 8's rotation.
  const samples = s.pool(BASE_SEED).slice(0, PROBE_SAMPLES);
  const problems: string[] = [];
  const answers: CeilingAnswer[] = [];
  for (const e of samples) {
    let answer: CeilingAnswer;
    if (server === null) {
      answer = syntheticResponse(s, e);
    } else {
      try {
        answer = await send(server.url, e);
      } catch (err) {
        problems.push(`probe request failed: ${(err as Error).message}`);
        break;
      }
      const problem = s.validate(e, answer.status, answer.body);
      if (problem !== null && problems.length < MAX_PROBLEMS) problems.push(`probe ${e.method} ${e.path}: ${problem}`);
    }
    if (!s.verifyBody(answer.body) && problems.length < MAX_PROBLEMS) problems.push(`the per-response body check rejects a real answer: ${answer.body.slice(0, 160)}`);
    answers.push(answer);
  }
  const config = ceilingConfig(s, answers);
  return { problems, config, bodyBytes: Buffer.byteLength(config.ok.body) };
}

/** Headers uWS writes itself (or the floor's header block starts with): not copied into a pool answer. */
const WRITTEN_BY_UWS = new Set(['content-type', 'content-length', 'date', 'uwebsockets', 'connection', 'keep-alive', 'transfer-encoding']);

/** A user's uid at the end of an entity tag (src/delivery/etag.ts withUid), before any coding suffix. */
const UID_OF_TAG = /\.\d+(?=(\.gz|\.br)?"$)/;

/**
 * The answer `url` gives each of `entries`, in order, as the floor keeps them (PoolAnswers): answers
 * whose status and ETag agree once the uid is taken out of the tag are one answer, sent with the first
 * such answer's bytes (other users' answers differ from it in their uid's and mod's digits alone). An
 * answer without an ETag is one of its own bytes.
 */
export async function poolAnswers(url: string, entries: readonly RequestEntry[]): Promise<PoolAnswers> {
  const answers: CeilingAnswer[] = [];
  const order: number[] = [];
  const byKey = new Map<string, number>();
  for (const e of entries) {
    const res = await fetchEntry(url, e);
    const body = await res.text();
    const tag = res.headers.get('etag');
    const key = `${res.status} ${tag === null ? body : tag.replace(UID_OF_TAG, '')}`;
    let index = byKey.get(key);
    if (index === undefined) {
      const headers: Record<string, string> = {};
      res.headers.forEach((value, name) => {
        if (!WRITTEN_BY_UWS.has(name)) headers[name] = value;
      });
      index = answers.length;
      answers.push({ status: res.status, body, headers });
      byKey.set(key, index);
    }
    order.push(index);
  }
  return { answers, order };
}
