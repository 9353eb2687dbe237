/**
 * The admin event stream (`GET /admin/v1/events`, server-sent events, docs/admin.md "Live events"):
 * every change of the admin state as it happens, for the console's screens to re-read what it
 * concerns. An event is the change's audit entry (`event: change`, `id:` the entry's id): content
 * and mapping revisions, scheduled changes created, moved, cancelled, applied or failed, rollouts,
 * the kill switch, tokens, webhooks, imports.
 *
 * The audit log is the one source: a write of this process (an admin call or the scheduler, through
 * the one write path of server.ts) kicks a read of the newest entries as soon as its entries are
 * appended, and while any stream is open the log is read every POLL_MS, which brings in what the
 * other nodes of the store wrote (their entries are in the same log). Entries already sent are
 * remembered by id within the newest page, so an entry that commits late (ids are assigned before
 * commit on PostgreSQL) is still sent once; more new entries than one page holds between two reads
 * are announced as one `reset` (re-read everything) instead.
 *
 * Bounded: at most `maxStreams` open streams (then 503 too_many_streams), one read of one page per
 * wake for all of them, and a reader whose socket holds more than MAX_BUFFERED unsent bytes is
 * disconnected (it reconnects and re-reads) instead of growing this process's memory.
 */
import type { ServerResponse } from 'node:http';
import { RcdError } from '../../runtime/errors.js';
import { envIdProblem } from '../../store/ids.js';
import { authorise, inScope, type Principal } from './access.js';
import type { AdminStateStore, AuditEntry } from './state.js';

export interface AdminStreamLimits {
  /** Open streams on this listener; one more answers 503 too_many_streams. */
  readonly maxStreams: number;
  /** A comment line on every open stream this often. */
  readonly heartbeatMs: number;
}

/** How often the audit log is read while a stream is open (the other nodes' changes). */
const POLL_MS = 1000;
/** Entries one read takes: the newest, newest first. */
const PAGE = 200;
/** Unsent bytes a stream's socket may hold before the stream is ended. */
const MAX_BUFFERED = 256 * 1024;

const HEARTBEAT = ': heartbeat\n\n';
const RESET = 'event: reset\ndata: {}\n\n';
const CLOSING = 'event: closing\ndata: {"reason":"shutdown"}\n\n';

interface Stream {
  readonly res: ServerResponse;
  readonly principal: Principal;
  /** Only these environments (`?env=a,b`), or every one in the token's scope. */
  readonly envs: ReadonlySet<string> | null;
  /** The named token's digest, checked again when a token is revoked; null for the bootstrap token. */
  readonly digest: string | null;
  /** Its headers and `ready` event are written: frames may follow. */
  open: boolean;
}

export class AdminEvents {
  private readonly state: AdminStateStore;
  private readonly limits: AdminStreamLimits;
  private readonly log: (line: string) => void;
  private readonly streams = new Set<Stream>();
  /** Entry ids at or below this were in the log before the first stream opened; null until read. */
  private floor: number | null = null;
  /** Ids sent, within the newest page. */
  private readonly sent = new Set<number>();
  private primed: Promise<void> | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private beatTimer: NodeJS.Timeout | null = null;
  private reading = false;
  private again = false;
  private closed = false;
  private lastProblem = '';

  constructor(state: AdminStateStore, limits: AdminStreamLimits, log: (line: string) => void) {
    this.state = state;
    this.limits = limits;
    this.log = log;
  }

  get count(): number {
    return this.streams.size;
  }

  /**
   * Opens a stream for an authenticated caller: 503 too_many_streams when the listener holds
   * maxStreams already. The stream starts with a `ready` event: what changed before it is not
   * replayed, so a client re-reads what it shows on `ready`.
   */
  async open(res: ServerResponse, principal: Principal, envs: ReadonlySet<string> | null, digest: string | null): Promise<void> {
    if (this.closed || this.streams.size >= this.limits.maxStreams) {
      throw new RcdError('too_many_streams', `this admin listener holds ${this.limits.maxStreams} open event streams (--admin-max-streams); retry later`);
    }
    const stream: Stream = { res, principal, envs, digest, open: false };
    this.streams.add(stream);
    res.on('close', () => this.drop(stream));
    if (this.streams.size === 1) this.start();
    await this.primed;
    if (!this.streams.has(stream)) return;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      // A buffering reverse proxy (nginx) would hold the events back.
      'x-accel-buffering': 'no',
    });
    stream.open = true;
    this.write(stream, `event: ready\ndata: ${JSON.stringify({ at: new Date().toISOString(), heartbeatMs: this.limits.heartbeatMs })}\n\n`);
  }

  /** Audit entries were appended by this process: read and send them now. */
  kick(): void {
    if (this.streams.size > 0) void this.read();
  }

  /** Ends every stream with a `closing` event (shutdown); later opens are refused. */
  close(): void {
    this.closed = true;
    for (const s of this.streams) {
      if (s.open) s.res.end(CLOSING);
      else s.res.destroy();
    }
    this.streams.clear();
    this.stop();
  }

  private start(): void {
    this.sent.clear();
    this.floor = null;
    // Unread (the store is down), the floor is set by the first read that succeeds.
    this.primed = this.state.listAudit(1).then(
      (newest) => {
        this.floor = newest[0]?.id ?? 0;
      },
      (err: unknown) => this.problem(err),
    );
    this.pollTimer = setInterval(() => void this.read(), POLL_MS);
    this.pollTimer.unref();
    this.beatTimer = setInterval(() => this.heartbeat(), this.limits.heartbeatMs);
    this.beatTimer.unref();
  }

  private stop(): void {
    if (this.pollTimer !== null) clearInterval(this.pollTimer);
    if (this.beatTimer !== null) clearInterval(this.beatTimer);
    this.pollTimer = null;
    this.beatTimer = null;
    this.primed = null;
  }

  private drop(stream: Stream): void {
    if (!this.streams.delete(stream)) return;
    if (this.streams.size === 0) this.stop();
  }

  /** One read at a time; a wake while one runs reads once more after it. */
  private async read(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    try {
      do {
        this.again = false;
        await this.readOnce();
      } while (this.again && this.streams.size > 0);
      this.lastProblem = '';
    } catch (err) {
      this.problem(err);
    } finally {
      this.reading = false;
    }
  }

  private async readOnce(): Promise<void> {
    if (this.primed === null) return;
    await this.primed;
    const page = await this.state.listAudit(PAGE);
    if (this.floor === null) {
      this.floor = page[0]?.id ?? 0;
      return;
    }
    const floor = this.floor;
    const fresh = page.filter((e) => e.id > floor && !this.sent.has(e.id)).reverse();
    if (fresh.length === 0) return;
    const oldest = page[page.length - 1]!.id;
    // A full page of entries never sent: more may have come than one page holds.
    if (page.length === PAGE && fresh.length === PAGE) {
      for (const s of this.streams) this.write(s, RESET);
    }
    let revoked = false;
    for (const e of fresh) {
      this.sent.add(e.id);
      if (e.action === 'token.revoke') revoked = true;
      const frame = `id: ${e.id}\nevent: change\ndata: ${JSON.stringify(e)}\n\n`;
      for (const s of this.streams) if (visible(s, e)) this.write(s, frame);
    }
    // Ids below the page's oldest never come back in a page: forget them, and never send them.
    for (const id of this.sent) if (id < oldest) this.sent.delete(id);
    if (page.length === PAGE) this.floor = Math.max(floor, oldest - 1);
    if (revoked) await this.endRevoked();
  }

  /** A token was revoked: the streams opened with a token that is no longer live end now. */
  private async endRevoked(): Promise<void> {
    for (const s of [...this.streams]) {
      if (s.digest === null) continue;
      if ((await this.state.findToken(s.digest)) === undefined) {
        this.drop(s);
        s.res.end();
      }
    }
  }

  /** Once per kind of trouble (a store outage fails every read): the reads go on quietly. */
  private problem(err: unknown): void {
    const problem = err instanceof RcdError ? `${err.code}: ${err.message}` : (err as Error).message;
    if (problem !== this.lastProblem) this.log(`admin events: reading the audit log failed (${problem}); retrying`);
    this.lastProblem = problem;
  }

  private heartbeat(): void {
    for (const s of this.streams) this.write(s, HEARTBEAT);
  }

  /** Writes a frame, or ends a stream whose reader has fallen MAX_BUFFERED behind. */
  private write(s: Stream, frame: string): void {
    if (!s.open) return;
    if (s.res.writableLength > MAX_BUFFERED) {
      this.drop(s);
      s.res.destroy();
      return;
    }
    s.res.write(frame);
  }
}

/**
 * Whether a stream hears an entry: one of an environment (a sync: of either of its two) when the
 * token's scope and the stream's filter hold it; one of no environment (imports, tokens, webhooks)
 * when the token spans every environment, whatever the filter, since it may concern any of them.
 */
function visible(s: Stream, e: AuditEntry): boolean {
  if (e.env === null) return s.principal.scope === '*';
  return hears(s, e.env) || (e.action === 'environment.sync' && e.target !== null && hears(s, e.target));
}

function hears(s: Stream, env: string): boolean {
  return inScope(s.principal, env) && (s.envs === null || s.envs.has(env));
}

/** The path of the stream on the admin listener. */
export const EVENTS_PATH = '/admin/v1/events';

export function isEventsPath(pathname: string): boolean {
  return pathname === EVENTS_PATH || pathname === EVENTS_PATH + '/';
}

/**
 * `GET /admin/v1/events[?env=a,b]` for an authenticated caller: any role may listen (role read, the
 * events filtered to its scope); `env` narrows the stream to those environments.
 */
export async function openEventStream(events: AdminEvents, method: string, query: URLSearchParams, res: ServerResponse, principal: Principal, digest: string | null): Promise<void> {
  if (method !== 'GET') throw new RcdError('method_not_allowed', `${method} is not allowed on ${EVENTS_PATH}`, { allow: ['GET'] });
  authorise(principal, 'read', 'own', undefined);
  const named = query.get('env');
  let envs: Set<string> | null = null;
  if (named !== null) {
    envs = new Set(named.split(',').filter((e) => e !== ''));
    for (const e of envs) {
      const problem = envIdProblem(e);
      if (problem !== '') throw new RcdError('invalid_query', `env: ${problem}`);
    }
    if (envs.size === 0) throw new RcdError('invalid_query', 'env must name at least one environment');
  }
  await events.open(res, principal, envs, digest);
}
