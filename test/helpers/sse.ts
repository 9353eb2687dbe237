/**
 * An open server-sent-events stream read with node:http(s) (no EventSource in Node 20): events parsed
 * as they arrive, comments (heartbeats) counted, and a wait for a condition on what arrived.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface SseEvent {
  id: string | null;
  event: string;
  data: string;
}

/** An open event stream read with node:http; events parsed as they arrive. */
export class NodeStream {
  readonly events: SseEvent[] = [];
  comments = 0;
  status = 0;
  headers: Record<string, string | string[] | undefined> = {};
  ended = false;
  private buffer = '';
  private readonly req: ClientRequest;
  private waiters: (() => void)[] = [];

  /** `ca`: the stream is HTTPS and trusts that root. */
  constructor(url: string, headers: Record<string, string>, ca?: string) {
    const open = url.startsWith('https:') ? httpsRequest : httpRequest;
    this.req = open(url, { headers, agent: false, ...(ca === undefined ? {} : { ca }) }, (res) => {
      this.status = res.statusCode ?? 0;
      this.headers = res.headers;
      res.setEncoding('utf8');
      res.on('data', (d: string) => this.feed(d));
      res.on('end', () => {
        this.ended = true;
        this.wake();
      });
    });
    this.req.on('error', () => {
      this.ended = true;
      this.wake();
    });
    this.req.end();
  }

  private feed(text: string): void {
    this.buffer += text;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) !== -1) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const e: SseEvent = { id: null, event: 'message', data: '' };
      let fields = 0;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          this.comments++;
          continue;
        }
        const colon = line.indexOf(':');
        const name = line.slice(0, colon);
        const value = line.slice(colon + 1).trimStart();
        if (name === 'id') e.id = value;
        else if (name === 'event') e.event = value;
        else if (name === 'data') e.data = value;
        else continue;
        fields++;
      }
      if (fields > 0) this.events.push(e);
    }
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Waits until `done` holds (checked on every arrival), at most `ms`. */
  async until(done: () => boolean, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`timed out; events: ${JSON.stringify(this.events)} ended ${this.ended}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 100);
      });
    }
  }

  close(): void {
    this.req.destroy();
  }
}
