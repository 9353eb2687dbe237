/**
 * The change stream (`GET /api/v1/env/events`, docs/api.md "Change stream") read through fetch, not
 * EventSource: fetch can send `X-Api-Key` (EventSource sends no headers, so a page would first have
 * to mint a stream token) and runs the same in Node 20 and browsers. The stream is parsed as the
 * server-sent-events format says (fields id, event, data; comments and heartbeats ignored), and
 * reopened after it ends or fails with the client's backoff, sending `Last-Event-ID` so the server
 * replays what was missed.
 */
import { backoffDelay, parseRetryAfter, type BackoffOptions } from './backoff.js';
import type { Endpoint } from './http.js';

export interface StreamMessage {
  readonly event: string;
  readonly id: string | null;
  readonly data: string;
}

/** What the server's ready and change events carry (docs/api.md). */
export interface ChangeNotice {
  readonly seq?: number;
  readonly changed?: readonly string[];
  readonly all?: boolean;
  /** The catalog's ETag once the change is applied. */
  readonly catalog?: string;
  readonly jitterMs?: number;
}

export class ChangeStream {
  private abort: AbortController | null = null;
  private lastEventId: string | null = null;
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = true;

  constructor(
    private readonly endpoint: Endpoint,
    private readonly backoff: BackoffOptions,
    private readonly onMessage: (message: StreamMessage) => void,
  ) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    this.abort = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private async run(): Promise<void> {
    let retryAfterMs: number | null = null;
    try {
      retryAfterMs = await this.readOnce();
    } catch {
      // A dropped connection or an abort: reopened below unless stopped.
    }
    if (this.stopped) return;
    this.failures++;
    const delay = backoffDelay(this.failures, retryAfterMs, this.backoff, Math.random());
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.stopped) void this.run();
    }, delay);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** One connection, read to its end; resolves the server's Retry-After when it refused. */
  private async readOnce(): Promise<number | null> {
    const abort = new AbortController();
    this.abort = abort;
    const headers: Record<string, string> = { 'x-api-key': this.endpoint.apiKey, accept: 'text/event-stream' };
    if (this.lastEventId !== null) headers['last-event-id'] = this.lastEventId;
    const res = await this.endpoint.fetch(`${this.endpoint.baseUrl}/api/v1/env/events`, { method: 'GET', headers, signal: abort.signal });
    if (res.status !== 200 || res.body === null) {
      await res.arrayBuffer().catch(() => undefined);
      return parseRetryAfter(res.headers.get('retry-after'), Date.now());
    }
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    const parser = new EventParser((message) => {
      // A delivered event proves the connection works: the next failure starts the backoff afresh.
      this.failures = 0;
      if (message.id !== null) this.lastEventId = message.id;
      this.onMessage(message);
    });
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.push(decoder.decode(value, { stream: true }));
    }
    return null;
  }
}

/** The text/event-stream format (HTML Living Standard, "Server-sent events", parsing). */
export class EventParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private id: string | null = null;

  constructor(private readonly dispatch: (message: StreamMessage) => void) {}

  push(text: string): void {
    this.buffer += text;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const c = this.buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      // A CR at the very end may be the first half of CRLF: wait for the next chunk.
      if (c === 13 && i === this.buffer.length - 1) break;
      this.line(this.buffer.slice(start, i));
      if (c === 13 && this.buffer.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0) this.dispatch({ event: this.event === '' ? 'message' : this.event, id: this.id, data: this.data.join('\n') });
      this.event = '';
      this.data = [];
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ':' comment (heartbeats)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.id = value;
  }
}
