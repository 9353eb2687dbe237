/**
 * The life of one delivery request after its headers passed, whatever it asks for (content and
 * combine in request.ts, single.ts and combine.ts; OFREP in ofrep/request.ts): read the body under
 * --max-body, start the work, take results back from the render pool, answer once, and count the
 * request when it ends.
 *
 *   onChunk ... onChunk(last) -> start(body)      -> answered from the front cache, or
 *                                                 -> pool jobs (holdConnection) -> onResult -> answered
 *   onAborted at any point: nothing more is written; finish counts it.
 *   a failure before writing: 500; after writing started: the connection closes.
 *
 * uWS contract (see the uWebSockets.js body-reading examples): onAborted is registered before
 * anything else (routes.ts); chunks that are not the last are copied (uWS reuses their memory once
 * the callback returns); every write after the handler returned is corked (wire/reply.ts); nothing
 * is written once `done`.
 *
 * A subclass says what its body means (start), how its answers are made (answerOne, keepItem,
 * answerFound) and how its errors look on the wire (writeError); everything else is here once,
 * including what a pool result does (onRendered).
 *
 * HOT PATH: every field is set in the constructors, in one order (one hidden class per subclass).
 */
import type { HttpResponse } from 'uWebSockets.js';
import type { Combination, CompiledMapping } from '../mapping/index.js';
import * as clock from '../metrics/clock.js';
import * as metrics from '../metrics/layout.js';
import { Outcome, Phase, S_PHASE, type MetricRoute } from '../metrics/layout.js';
import type { JobSink } from '../pool/batcher.js';
import type { Job, JobResult } from '../pool/protocol.js';
import { ERROR_STATUS, RcdError, type ErrorCode } from '../runtime/errors.js';
import { recordAccess } from './access-log.js';
import * as body from './body.js';
import type { EnvView } from './directory.js';
import { keepEntry, renderedOf, type FrontKey, type Rendered } from './front-cache.js';
import type { FrontEndState } from './state.js';
import * as reply from './wire/reply.js';
import * as recorder from '../exposures/recorder.js';
import type { HeldExposures } from '../exposures/recorder.js';

// The functions a request calls, as this module's own consts (wire/README.md, "Module consts").
const { nowMs } = clock;
const { L_FRONT_HITS, L_FRONT_MISSES, recordTimedRequest } = metrics;
const { bodyText, keptChunk } = body;
const { enterUwsCall, holdConnection, leaveUwsCall } = reply;
const { commitHeld, settleStaged } = recorder;

const STARTING_MESSAGE = 'the server is starting: its keys and content may not all be loaded yet; retry shortly';
const STORE_UNAVAILABLE_MESSAGE = 'the store is unreachable and this content is not loaded on this node yet';

export abstract class DeliveryRequest implements JobSink {
  declare readonly state: FrontEndState;
  declare readonly res: HttpResponse;
  declare readonly metricRoute: MetricRoute;
  declare readonly env: EnvView;
  /** The id of the API key that made the request (the access log's; never the key). */
  declare readonly keyId: string;
  /** Lower-cased content id (single item routes) or "" (combine, bulk). */
  declare readonly idLower: string;
  /** True for a many-item request (a combine, an OFREP bulk evaluation): its pool results fill slots. */
  declare readonly many: boolean;
  /** If-None-Match as sent ("" when absent). */
  declare readonly ifNoneMatch: string;
  /** Access-Control-Allow-Origin for this request, or null (no CORS headers). */
  declare readonly origin: Uint8Array | null;
  /** The answer's entity tag without quotes or coding suffix (etag.ts), set once it is known. */
  declare tag: string;
  declare chunks: Buffer[] | null;
  /**
   * Bytes of the body so far, counted against --max-body unless the head declares the body's length
   * alone (request-head.ts declaresBodyLength: -1 then): routes.ts checked the declared length before
   * a byte came, and uWS reads no more than it declares.
   */
  declare received: number;
  /** True once answered or aborted: nothing more may touch res. */
  declare done: boolean;
  /** True once a success answer started writing: a failure after that cannot answer 500 any more. */
  declare writing: boolean;
  /** meta.uid and meta.mod of the user (personalised kinds). */
  declare uid: number;
  declare mod: number;
  /** Front-cache key per pool job slot: results coming back are cached under it. */
  declare keys: FrontKey[] | null;
  /**
   * The last mapping evaluated for this request and its result: items behind one mapping get the same
   * combination (the same p, app version and mod), so it is evaluated once per mapping, not per item.
   */
  declare evaluatedMapping: CompiledMapping | null;
  declare evaluated: Combination | null;
  /** Pool jobs not back yet. */
  declare remaining: number;
  /** The answer's HTTP status for the metrics (0: ended without one) and what it came to. */
  declare status: number;
  declare outcome: Outcome;
  /** Body bytes of the answer written (the access log's). */
  declare answeredBytes: number;
  /** The clock (metrics/clock.ts) when the handler took the request: the latency histogram's start. */
  declare readonly t0: number;
  /** Experiment exposures noted for this answer while the render pool works for it (committed if it succeeds), or null. */
  declare heldExposures: HeldExposures | null;

  constructor(
    state: FrontEndState,
    res: HttpResponse,
    metricRoute: MetricRoute,
    env: EnvView,
    keyId: string,
    idLower: string,
    many: boolean,
    ifNoneMatch: string,
    origin: Uint8Array | null,
    declaredLength: boolean,
  ) {
    // Declared fields, not class fields, which V8 defines in a separate initializer function first.
    this.state = state;
    this.res = res;
    this.metricRoute = metricRoute;
    this.env = env;
    this.keyId = keyId;
    this.idLower = idLower;
    this.many = many;
    this.ifNoneMatch = ifNoneMatch;
    this.origin = origin;
    this.tag = '';
    this.chunks = null;
    this.received = declaredLength ? -1 : 0;
    this.done = false;
    this.writing = false;
    this.uid = 0;
    this.mod = 0;
    this.keys = null;
    this.evaluatedMapping = null;
    this.evaluated = null;
    this.remaining = 0;
    this.status = 200;
    this.outcome = Outcome.Hit;
    this.answeredBytes = 0;
    this.t0 = nowMs();
    this.heldExposures = null;
    state.inFlight++;
  }

  /** What the body asks for: answer it, or hand its jobs to the pool. Throws RcdError for a refusal. */
  protected abstract start(text: string): void;

  /** Answers a single-item request with its rendered item. */
  protected abstract answerOne(rendered: Rendered): void;

  /** Keeps a many-item request's result for `slot`: null when its content was deleted meanwhile. */
  protected abstract keepItem(slot: number, rendered: Rendered | null): void;

  /** The request's own wording of content_not_found, for an item deleted between routing and rendering. */
  protected abstract notFoundMessage(): string;

  /** Writes an error answer (the request's own error body and headers); returns the body's bytes. */
  protected abstract writeError(code: ErrorCode, message: string, details: unknown, closeConnection: boolean): number;

  /** Answers that the render pool has no room for this request's jobs (its own overload error). */
  protected abstract answerPoolFull(): void;

  /**
   * Hands front-cache misses to the render pool: job i renders into slot slots[i], whose result is
   * cached under keys[slots[i]] (set by the caller). The connection is held until the answer is
   * written (holdConnection). With no room for them all, the request answers overload instead.
   */
  renderMisses(jobs: readonly Job[], slots: readonly number[]): void {
    const batcher = this.state.batcher;
    if (!batcher.hasRoom(jobs.length)) {
      this.answerPoolFull();
      return;
    }
    this.outcome = Outcome.Miss;
    holdConnection(this.res);
    for (let i = 0; i < jobs.length; i++) batcher.enqueue(jobs[i]!, this, slots[i]!);
  }

  /** Answers a many-item request whose items are all at hand (a combine, an OFREP bulk evaluation). */
  protected abstract answerFound(): void;

  /**
   * The end of a many-item start: counts its `items` lookups, then answers at once when nothing
   * missed, or hands the misses to the pool (renderMisses); their results come back to onRendered.
   */
  settleLookups(items: number, jobs: readonly Job[], slots: readonly number[]): void {
    this.countLookups(items, jobs.length);
    if (jobs.length === 0) this.answerFound();
    else this.renderMisses(jobs, slots);
  }

  /** Counts `items` front-cache lookups of this request, `misses` of them missed (the metrics). */
  countLookups(items: number, misses: number): void {
    const counters = this.state.counters;
    counters[L_FRONT_MISSES]! += misses;
    counters[L_FRONT_HITS]! += items - misses;
  }

  /** renderMisses of one job, into slot 0, cached under `key`. */
  renderMiss(job: Job, key: FrontKey): void {
    const batcher = this.state.batcher;
    if (!batcher.hasRoom(1)) {
      this.answerPoolFull();
      return;
    }
    this.outcome = Outcome.Miss;
    this.keys = [key];
    holdConnection(this.res);
    batcher.enqueue(job, this, 0);
  }

  onAborted(): void {
    if (!this.done) {
      this.status = 0;
      this.outcome = Outcome.Aborted;
    }
    this.finish();
  }

  onChunk(chunk: ArrayBuffer, isLast: boolean): void {
    // An exception escaping a uWS callback ends the process: contain it to this request. uWS corked
    // the socket around this call: answers from here are written straight (wire/reply.ts).
    enterUwsCall();
    try {
      this.readChunk(chunk, isLast);
    } catch (err) {
      this.onFailure(0, err);
    } finally {
      leaveUwsCall();
    }
  }

  private readChunk(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.done) return;
    if (this.received >= 0) {
      this.received += chunk.byteLength;
      const max = this.state.http.maxBodyBytes;
      if (this.received > max) {
        // The rest of the body would still arrive on this connection: close it after answering.
        this.answerError('payload_too_large', `the request body exceeds ${max} bytes`, true);
        return;
      }
    }
    if (!isLast) {
      (this.chunks ??= []).push(keptChunk(chunk));
      return;
    }
    const text = bodyText(this.chunks, chunk);
    this.chunks = null;
    try {
      this.start(text);
    } catch (err) {
      this.refused(err);
    }
    // Exposures count for answers that succeed: settled once the answer (or the pool's work) is decided.
    const exposures = this.state.exposures;
    if (exposures !== null && exposures.owner === this) this.heldExposures = settleStaged(exposures, this, this.done, answeredWell(this.status));
  }

  /** A refusal thrown by start: its error answer; anything else (or after writing began) is a failure. */
  private refused(err: unknown): void {
    if (!(err instanceof RcdError) || this.writing) {
      this.onFailure(0, err);
      return;
    }
    // Content the starting server may not have loaded yet: retryable, unlike "no such content".
    if (err.code === 'content_not_found' && this.state.server[S_PHASE] === Phase.Starting) this.answerError('starting', STARTING_MESSAGE, false);
    else this.answerError(err.code, err.message, false, err.details);
  }

  onResult(slot: number, result: JobResult): void {
    let rendered: Rendered | null = null;
    if (result.head !== null) {
      rendered = renderedOf(result, result.head);
      // Cached even when this request was aborted meanwhile: the next request for it is a hit.
      keepEntry(this.state.frontCache, this.keys![slot]!, rendered);
    }
    if (this.done) return;
    this.onRendered(slot, rendered, result.error);
  }

  /**
   * A pool result for `slot`, already cached: `rendered` is null when the worker reported `error`.
   * A single item is answered with it; a many-item request keeps it (a deleted item is one missing
   * item) and answers once its last result is back. Any other error answers the whole request.
   */
  private onRendered(slot: number, rendered: Rendered | null, error: string): void {
    // Each answer from here reads the connection again (holdConnection) before it is written.
    if (rendered === null && (!this.many || error !== 'content_not_found')) {
      this.res.resume();
      this.answerJobError(error);
      return;
    }
    if (!this.many) {
      this.res.resume();
      this.answerOne(rendered!);
      return;
    }
    this.keepItem(slot, rendered);
    if (--this.remaining === 0) {
      this.res.resume();
      this.answerFound();
    }
  }

  onFailure(_slot: number, err: unknown): void {
    this.state.onInternalError(err);
    if (this.done) return;
    if (this.writing) {
      // Part of the answer may be out already; a second status line would desync the connection.
      this.status = 0;
      this.outcome = Outcome.Aborted;
      this.finish();
      this.res.close();
      return;
    }
    // A failure of a pool job: the connection was held for it (holdConnection).
    if (this.outcome === Outcome.Miss) this.res.resume();
    this.answerError('internal', 'internal error', false);
  }

  /** An error answer; `overloaded` and `too_many_requests` count as overload in the metrics. */
  answerError(code: ErrorCode, message: string, closeConnection: boolean, details?: unknown): void {
    if (this.done) return;
    this.answeredBytes = this.writeError(code, message, details, closeConnection || this.state.shuttingDown);
    this.status = ERROR_STATUS[code];
    this.outcome = code === 'overloaded' || code === 'too_many_requests' ? Outcome.Overloaded : Outcome.None;
    this.finish();
  }

  /** The answer to a worker's error for this request's item. */
  private answerJobError(code: string): void {
    if (code === 'content_not_found') {
      // The content was deleted between routing and rendering: answer as if it had never been there.
      this.answerError('content_not_found', this.notFoundMessage(), false);
      return;
    }
    if (code === 'store_unavailable') {
      // A remote store is unreachable and this revision is in no cache yet: retryable, not a fault.
      this.answerError('store_unavailable', STORE_UNAVAILABLE_MESSAGE, false);
      return;
    }
    this.state.onInternalError(new Error(`worker reported ${code}`));
    this.answerError('internal', 'internal error', false);
  }

  /** Counts the request once it ends (answered or aborted): the latency histogram and the access log. */
  finish(): void {
    if (this.done) return;
    this.done = true;
    const state = this.state;
    state.inFlight--;
    const held = this.heldExposures;
    if (held !== null) {
      this.heldExposures = null;
      if (answeredWell(this.status)) commitHeld(state.exposures!, held);
    }
    const counters = state.counters;
    const route = this.metricRoute;
    const ms = nowMs() - this.t0;
    recordTimedRequest(counters, route, this.status, this.outcome, ms);
    const access = state.access;
    if (access !== null && --access.countdown === 0) {
      recordAccess(access, counters, state.loop, route, this.status, this.outcome, this.status === 0 ? 0 : this.answeredBytes, ms, this.keyId);
    }
  }
}

/** A status whose answer applied what the rules chose (an exposure): 200, or 304 (the client holds it). */
function answeredWell(status: number): boolean {
  return status === 200 || status === 304;
}
