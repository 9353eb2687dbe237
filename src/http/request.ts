/**
 * One content request after its headers passed: read the body under the limit, validate, turn it
 * into pool jobs, and answer when the results come back.
 *
 * uWS contract (see the uWebSockets.js body-reading examples): onAborted is registered before
 * anything else; chunks that are not the last are copied (uWS reuses their memory once the
 * callback returns); every write after the handler returned is corked (reply.ts); nothing is
 * written once aborted.
 *
 * HOT PATH: change with care. Fields are initialised in one order in the constructor.
 */
import type { HttpResponse } from 'uWebSockets.js';
import { chooseRevision, type EnvView } from '../directory.js';
import { RcdError, errorResponse, responseForError, type ErrorCode } from '../errors.js';
import type { JobSink } from '../pool/batcher.js';
import { JobKind, type Job, type JobResult } from '../pool/protocol.js';
import { parseUserContext, type UserContext } from './context.js';
import { checkPlainQuery, parseCombineQuery, wrappedKind } from './query.js';
import { STATUS_OK, send, sendError, sendOverloaded } from './reply.js';
import type { FrontEndState } from './state.js';

export const enum Route {
  Plain = 0,
  Wrapped = 1,
  Combine = 2,
}

const NO_P: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

export class ContentRequest implements JobSink {
  readonly state: FrontEndState;
  readonly res: HttpResponse;
  readonly route: Route;
  readonly env: EnvView;
  /** Lower-cased content id (single routes) or "" (combine). */
  readonly idLower: string;
  readonly query: string;
  chunks: Buffer[] | null = null;
  received = 0;
  /** True once answered or aborted: nothing more may touch res. */
  done = false;
  aborted = false;
  // Combine only:
  ids: string[] | null = null;
  results: (JobResult | null)[] | null = null;
  missing: string[] | null = null;
  remaining = 0;

  constructor(state: FrontEndState, res: HttpResponse, route: Route, env: EnvView, idLower: string, query: string) {
    this.state = state;
    this.res = res;
    this.route = route;
    this.env = env;
    this.idLower = idLower;
    this.query = query;
    state.inFlight++;
  }

  onAborted(): void {
    this.aborted = true;
    this.finish();
  }

  onChunk(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.done) return;
    this.received += chunk.byteLength;
    if (this.received > this.state.config.maxBodyBytes) {
      // The rest of the body would still arrive on this connection: close it after answering.
      this.answerError('payload_too_large', `the request body exceeds ${this.state.config.maxBodyBytes} bytes`, true);
      return;
    }
    if (!isLast) {
      (this.chunks ??= []).push(Buffer.from(chunk.slice(0)));
      return;
    }
    let text: string;
    if (this.chunks === null) {
      text = Buffer.from(chunk).toString('utf8');
    } else {
      this.chunks.push(Buffer.from(chunk));
      text = Buffer.concat(this.chunks).toString('utf8');
      this.chunks = null;
    }
    handleBody(this, text);
  }

  onResult(slot: number, result: JobResult): void {
    if (this.done) return;
    if (this.route !== Route.Combine) {
      if (result.head === null) {
        this.answerJobError(result.error);
        return;
      }
      send(this.res, STATUS_OK, new Uint8Array(result.head, 0, result.headLength), result.tail, '', '', this.state.shuttingDown);
      this.finish();
      return;
    }
    if (result.head === null && result.error !== 'content_not_found') {
      this.answerJobError(result.error);
      return;
    }
    if (result.head === null) this.missing!.push(this.ids![slot]!);
    this.results![slot] = result;
    if (--this.remaining === 0) answerCombine(this);
  }

  onFailure(_slot: number, err: unknown): void {
    if (this.done) return;
    if (isQueueFull(err)) {
      sendOverloaded(this.res, this.state.shuttingDown);
      this.finish();
      return;
    }
    this.state.onInternalError(err);
    this.answerError('internal', 'internal error', false);
  }

  answerError(code: ErrorCode, message: string, closeConnection: boolean): void {
    if (this.done) return;
    sendError(this.res, errorResponse(code, message), closeConnection || this.state.shuttingDown);
    this.finish();
  }

  private answerJobError(code: string): void {
    if (code === 'content_not_found') {
      // The content was deleted between routing and rendering: answer as if it had never been there.
      this.answerError('content_not_found', 'content not found in this environment', false);
      return;
    }
    this.state.onInternalError(new Error(`worker reported ${code}`));
    this.answerError('internal', 'internal error', false);
  }

  finish(): void {
    if (this.done) return;
    this.done = true;
    this.state.inFlight--;
  }
}

function isQueueFull(err: unknown): boolean {
  return err instanceof Error && /queue is at limit/i.test(err.message);
}

function handleBody(r: ContentRequest, text: string): void {
  let ctx: UserContext;
  try {
    ctx = parseUserContext(text);
    if (r.route === Route.Combine) {
      startCombine(r, ctx);
    } else {
      startSingle(r, ctx);
    }
  } catch (err) {
    if (err instanceof RcdError) {
      if (!r.done) {
        sendError(r.res, responseForError(err), r.state.shuttingDown);
        r.finish();
      }
      return;
    }
    r.state.onInternalError(err);
    r.answerError('internal', 'internal error', false);
  }
}

function startSingle(r: ContentRequest, ctx: UserContext): void {
  let kind: JobKind;
  if (r.route === Route.Plain) {
    checkPlainQuery(r.query);
    kind = JobKind.Plain;
  } else {
    kind = wrappedKind(r.query);
  }
  const content = r.env.contents.get(r.idLower);
  if (content === undefined) throw new RcdError('content_not_found', 'content not found in this environment');
  const rev = chooseRevision(content, ctx.vNum);
  if (rev === undefined) {
    throw new RcdError('content_not_found', `no revision of this content is available for app version ${ctx.v}`);
  }
  const batcher = r.state.batcher;
  if (!batcher.hasRoom(1)) {
    sendOverloaded(r.res, r.state.shuttingDown);
    r.finish();
    return;
  }
  batcher.enqueue(makeJob(kind, rev.revId, content.mappingId, ctx), r, 0);
}

function startCombine(r: ContentRequest, ctx: UserContext): void {
  const q = parseCombineQuery(r.query, r.state.config.maxCombineIds);
  const contents = r.env.contents;
  const ids: string[] = [];
  const jobs: Job[] = [];
  const missing: string[] = [];
  for (const id of q.ids) {
    const content = contents.get(id.toLowerCase());
    const rev = content === undefined ? undefined : chooseRevision(content, ctx.vNum);
    if (content === undefined || rev === undefined) {
      missing.push(id);
      continue;
    }
    ids.push(id);
    jobs.push(makeJob(q.kind, rev.revId, content.mappingId, ctx));
  }
  r.ids = ids;
  r.missing = missing;
  r.results = new Array<JobResult | null>(ids.length).fill(null);
  r.remaining = jobs.length;
  if (jobs.length === 0) {
    answerCombine(r);
    return;
  }
  const batcher = r.state.batcher;
  if (!batcher.hasRoom(jobs.length)) {
    sendOverloaded(r.res, r.state.shuttingDown);
    r.finish();
    return;
  }
  for (let i = 0; i < jobs.length; i++) batcher.enqueue(jobs[i]!, r, i);
}

function makeJob(kind: JobKind, revId: number, mappingId: number, ctx: UserContext): Job {
  // Plain jobs do not use u/p/v: sending empty values keeps the batch message small.
  if (kind === JobKind.Plain) return { kind, revId, mappingId, u: '', p: NO_P, v: '' };
  return { kind, revId, mappingId, u: ctx.u, p: ctx.p, v: ctx.v };
}

// Combine answers are written in several pieces; like reply.ts, the corked writer reads a module slot.
let combineSlot: ContentRequest | null = null;

function answerCombine(r: ContentRequest): void {
  combineSlot = r;
  r.res.cork(writeCombine);
  combineSlot = null;
  r.finish();
}

function writeCombine(): void {
  const r = combineSlot!;
  const res = r.res;
  res.writeStatus(STATUS_OK);
  res.writeHeader('content-type', 'application/json');
  const missing = r.missing!;
  if (missing.length > 0) res.writeHeader('x-missing-content', missing.map(encodeURIComponent).join(','));
  const ids = r.ids!;
  const results = r.results!;
  let first = true;
  res.write('{');
  for (let i = 0; i < ids.length; i++) {
    const result = results[i]!;
    if (result.head === null) continue;
    res.write((first ? '' : ',') + JSON.stringify(ids[i]) + ':');
    first = false;
    res.write(new Uint8Array(result.head, 0, result.headLength));
    if (result.tail !== '') res.write(result.tail);
  }
  res.end('}', r.state.shuttingDown);
}
