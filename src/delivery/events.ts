/**
 * The change stream (`GET /api/v1/env/events`, server-sent events): each open stream belongs to one
 * environment and hears which content ids changed there and the catalog's new ETag, never content.
 * Clients re-fetch with their ETags (a 304 for whatever did not change for them).
 *
 * Each delivery loop holds its own streams and is told by its feed when it applied an update
 * (src/control/feed.ts), so on a fleet every node notifies its own clients once it serves the change.
 * Event ids are the store's change-log sequence numbers, the same on every node, so a client resumes
 * with Last-Event-ID on any node: events after it are replayed from a bounded in-memory log; a client
 * further behind than that log gets one `"all":true` event (re-fetch everything, with ETags).
 *
 * Frames are built once per environment and change and written (wire/event-frames.ts) to every stream of it, a slice of
 * streams per event-loop turn. Heartbeats come from one timer per loop, not one per stream.
 *
 * A stream opened with `format=ofrep` (the URL an OFREP bulk evaluation advertises in `eventStreams`,
 * docs/openfeature.md) hears the same changes in OFREP's event format (ADR-0008 of the OpenFeature
 * protocol): `event: message` with `data: {"type":"refetchEvaluation"}`, the same ids; no `ready`
 * event, and a client resuming from further back gets one refetch (an OFREP provider re-evaluates all
 * its flags on any of them, so a replay of each would only repeat it).
 */
import type { HttpResponse } from 'uWebSockets.js';
import type { EnvView } from './directory.js';
import { etagValue, Coding } from './etag.js';
import { endStream, writeStreamFrame, writeStreamOpening } from './wire/event-frames.js';

/** What changed in one environment: content ids (as created), or null for "everything" (re-fetch all). */
export interface EnvChange {
  readonly envId: string;
  readonly changed: readonly string[] | null;
}

export interface StreamLimits {
  readonly maxStreams: number;
  readonly heartbeatMs: number;
  readonly jitterMs: number;
}

/** More ids than this in one event are sent as `"all":true`: a bulk import would make a frame of megabytes. */
export const MAX_IDS_PER_EVENT = 1000;
/** The replay log keeps at most this many events and bytes (oldest dropped first). */
const REPLAY_EVENTS = 4096;
const REPLAY_BYTES = 4 * 1024 * 1024;
/**
 * Streams written per event-loop turn: a corked write to one stream is costly (a loopback send also
 * runs the receiver's TCP work), and writing every stream in one turn would hold the loop, every
 * request waiting behind it; a bounded batch keeps each turn short.
 */
const STREAMS_PER_TURN = 256;

const HEARTBEAT = Buffer.from(': heartbeat\n\n', 'latin1');

/** How a stream's events are written: rcd's own (`ready`, `change`) or OFREP's (`refetchEvaluation`). */
export const enum StreamFormat {
  Native = 0,
  Ofrep = 1,
}

class Stream {
  readonly res: HttpResponse;
  readonly envId: string;
  readonly keyId: string;
  readonly format: StreamFormat;
  /** A write was refused (backpressure) and the socket has not drained since. */
  congested = false;
  closed = false;

  constructor(res: HttpResponse, envId: string, keyId: string, format: StreamFormat) {
    this.res = res;
    this.envId = envId;
    this.keyId = keyId;
    this.format = format;
  }
}

/** A frame on its way to a set of streams, a slice per event-loop turn. */
interface Delivery {
  readonly frame: Uint8Array;
  readonly streams: readonly Stream[];
  next: number;
}

interface Logged {
  readonly envId: string;
  readonly seq: number;
  readonly frame: Buffer;
}

export class EventStreams {
  private readonly limits: StreamLimits;
  private readonly byEnv = new Map<string, Set<Stream>>();
  private open = 0;
  private readonly log: Logged[] = [];
  private logBytes = 0;
  /** Every event after this sequence number is in the log. */
  private logFromSeq: number;
  private timer: NodeJS.Timeout | null = null;
  /** Frames still being written, oldest first (each stream gets them in this order). */
  private readonly deliveries: Delivery[] = [];
  private delivering = false;
  private readonly deliverSlice = (): void => this.writeSlice();

  constructor(limits: StreamLimits, seq: number) {
    this.limits = limits;
    this.logFromSeq = seq;
  }

  get count(): number {
    return this.open;
  }

  /** True when another stream may open (--max-streams). */
  hasRoom(): boolean {
    return this.open < this.limits.maxStreams;
  }

  /**
   * Starts a stream for `env` (the caller checked the key and hasRoom). `lastEventId` is the sequence
   * the client saw last, or -1: what it missed is replayed first; then a `ready` event with the
   * current sequence and catalog tag (OFREP: one refetch if it missed anything, and the current id).
   */
  start(res: HttpResponse, env: EnvView, keyId: string, lastEventId: number, seq: number, origin: Uint8Array | null, format: StreamFormat): void {
    const stream = new Stream(res, env.id, keyId, format);
    res.onAborted(() => this.drop(stream));
    res.onWritable(() => {
      stream.congested = false;
      return true;
    });
    let set = this.byEnv.get(env.id);
    if (set === undefined) this.byEnv.set(env.id, (set = new Set()));
    set.add(stream);
    this.open++;
    if (this.timer === null) {
      this.timer = setInterval(() => this.heartbeat(), this.limits.heartbeatMs);
      this.timer.unref();
    }
    writeStreamOpening(res, origin, format === StreamFormat.Ofrep ? ofrepOpeningFrame(lastEventId, seq) : this.missedFrames(env, lastEventId, seq));
  }

  /**
   * An update was applied: one `change` event per environment in `changes`, to its streams, and into
   * the replay log. `resetLog` (a whole snapshot): nothing before `seq` can be replayed any more.
   */
  notify(seq: number, changes: readonly EnvChange[], envs: ReadonlyMap<string, EnvView>, resetLog: boolean): void {
    if (resetLog) {
      this.log.length = 0;
      this.logBytes = 0;
      this.logFromSeq = seq;
    }
    for (const change of changes) {
      const env = envs.get(change.envId);
      const frame = changeFrame(seq, change.changed, env === undefined ? '' : etagValue(env.catalog.tag, Coding.Identity), this.limits.jitterMs);
      this.remember({ envId: change.envId, seq, frame });
      const set = this.byEnv.get(change.envId);
      if (set === undefined) continue;
      const ofrep = ofrepRefetchFrame(seq);
      if (env === undefined) {
        // The environment is gone: its (rare) streams hear it at once and end.
        for (const stream of set) this.write(stream, stream.format === StreamFormat.Ofrep ? ofrep : frame);
        this.closeEnv(change.envId);
        continue;
      }
      const native: Stream[] = [];
      const others: Stream[] = [];
      for (const stream of set) (stream.format === StreamFormat.Ofrep ? others : native).push(stream);
      if (native.length > 0) this.deliver(frame, native);
      if (others.length > 0) this.deliver(ofrep, others);
    }
  }

  /** Ends the streams opened with a key that was revoked. */
  closeKey(keyId: string): void {
    for (const set of this.byEnv.values()) for (const s of set) if (s.keyId === keyId) this.end(s);
  }

  /** Ends every stream (shutdown). */
  closeAll(): void {
    for (const set of this.byEnv.values()) for (const s of set) this.end(s);
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private closeEnv(envId: string): void {
    const set = this.byEnv.get(envId);
    if (set !== undefined) for (const s of set) this.end(s);
  }

  /** What a client resuming after `lastEventId` missed, then the `ready` event. */
  private missedFrames(env: EnvView, lastEventId: number, seq: number): Buffer {
    const catalog = etagValue(env.catalog.tag, Coding.Identity);
    const parts: Buffer[] = [];
    if (lastEventId >= 0 && lastEventId < seq) {
      if (lastEventId < this.logFromSeq) {
        parts.push(changeFrame(seq, null, catalog, this.limits.jitterMs));
      } else {
        for (const e of this.log) if (e.envId === env.id && e.seq > lastEventId) parts.push(e.frame);
      }
    }
    parts.push(Buffer.from(`id: ${seq}\nevent: ready\ndata: {"seq":${seq},"catalog":${JSON.stringify(catalog)},"jitterMs":${this.limits.jitterMs}}\n\n`, 'utf8'));
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  private remember(e: Logged): void {
    this.log.push(e);
    this.logBytes += e.frame.byteLength;
    while (this.log.length > REPLAY_EVENTS || this.logBytes > REPLAY_BYTES) {
      const dropped = this.log.shift()!;
      this.logBytes -= dropped.frame.byteLength;
      this.logFromSeq = dropped.seq;
    }
  }

  private heartbeat(): void {
    for (const set of this.byEnv.values()) this.deliver(HEARTBEAT, [...set]);
  }

  /** Queues `frame` for `streams`; written STREAMS_PER_TURN a turn so requests run in between. */
  private deliver(frame: Uint8Array, streams: readonly Stream[]): void {
    this.deliveries.push({ frame, streams, next: 0 });
    if (this.delivering) return;
    this.delivering = true;
    setImmediate(this.deliverSlice);
  }

  private writeSlice(): void {
    let budget = STREAMS_PER_TURN;
    while (budget > 0 && this.deliveries.length > 0) {
      const d = this.deliveries[0]!;
      while (budget > 0 && d.next < d.streams.length) {
        this.write(d.streams[d.next++]!, d.frame);
        budget--;
      }
      if (d.next === d.streams.length) this.deliveries.shift();
    }
    if (this.deliveries.length > 0) setImmediate(this.deliverSlice);
    else this.delivering = false;
  }

  /**
   * One frame to one stream. A stream whose previous write is still waiting for the socket to drain
   * is ended instead: a client that does not read would otherwise grow its buffer without bound; it
   * reconnects and resumes from its Last-Event-ID.
   */
  private write(stream: Stream, frame: Uint8Array): void {
    if (stream.closed) return;
    if (stream.congested) {
      this.end(stream);
      return;
    }
    if (!writeStreamFrame(stream.res, frame)) stream.congested = true;
  }

  private end(stream: Stream): void {
    if (stream.closed) return;
    this.drop(stream);
    endStream(stream.res);
  }

  private drop(stream: Stream): void {
    if (stream.closed) return;
    stream.closed = true;
    const set = this.byEnv.get(stream.envId);
    if (set !== undefined) {
      set.delete(stream);
      if (set.size === 0) this.byEnv.delete(stream.envId);
    }
    this.open--;
    if (this.open === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}

/** OFREP's change event (ADR-0008): the flags may have changed, re-evaluate them. */
function ofrepRefetchFrame(seq: number): Buffer {
  return Buffer.from(`id: ${seq}\nevent: message\ndata: {"type":"refetchEvaluation"}\n\n`, 'latin1');
}

/**
 * An OFREP stream's first frame: a refetch when the client resumes from before `seq`, else an event
 * with no data, which EventSource does not dispatch but whose id it keeps, so a reconnection sends
 * Last-Event-ID and hears what it missed.
 */
function ofrepOpeningFrame(lastEventId: number, seq: number): Buffer {
  if (lastEventId >= 0 && lastEventId < seq) return ofrepRefetchFrame(seq);
  return Buffer.from(`id: ${seq}\n\n`, 'latin1');
}

/** `id: seq`, `event: change`, `data: {"seq","changed" or "all","catalog","jitterMs"}`. */
function changeFrame(seq: number, changed: readonly string[] | null, catalog: string, jitterMs: number): Buffer {
  const what = changed === null || changed.length > MAX_IDS_PER_EVENT ? '"all":true' : `"changed":${JSON.stringify(changed)}`;
  return Buffer.from(`id: ${seq}\nevent: change\ndata: {"seq":${seq},${what},"catalog":${JSON.stringify(catalog)},"jitterMs":${jitterMs}}\n\n`, 'utf8');
}
