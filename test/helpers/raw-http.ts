/**
 * Raw HTTP/1.1 over a TCP socket: for inputs fetch and node:http will not send (pipelined requests
 * in one write, duplicate framing headers, malformed heads) and for reading answers byte for byte.
 */
import { connect } from 'node:net';

export interface RawExchange {
  /** Everything the server sent, as latin1 text. */
  readonly text: string;
  /** True when the server closed the connection before the deadline. */
  readonly closed: boolean;
  /** Milliseconds from the first write until the close (or the deadline). */
  readonly ms: number;
}

/**
 * Connects to `url`'s host and port, writes each of `writes` (a small pause between them, so they
 * arrive in separate reads), and collects the answer until the server closes, `until` says the
 * answer is complete, or `deadlineMs` passes.
 */
export function rawExchange(
  url: string,
  writes: readonly (string | Buffer)[],
  opts: { deadlineMs?: number; until?: (text: string) => boolean; pauseMs?: number } = {},
): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  const deadlineMs = opts.deadlineMs ?? 2000;
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let text = '';
    let settled = false;
    const socket = connect(Number(port), hostname);
    const finish = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed, ms: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), deadlineMs);
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (opts.until?.(text) === true) finish(false);
    });
    socket.on('close', () => finish(true));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNRESET' || err.code === 'EPIPE') finish(true);
      else if (!settled) {
        settled = true;
        clearTimeout(timer);
        reject(err);
      }
    });
    socket.on('connect', () => {
      void (async () => {
        for (let i = 0; i < writes.length; i++) {
          if (i > 0) await new Promise((r) => setTimeout(r, opts.pauseMs ?? 30));
          if (socket.destroyed) return;
          socket.write(writes[i]!);
        }
      })();
    });
  });
}

/** The status codes of every response in `text`, in order. */
export function statusCodes(text: string): number[] {
  return [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
}

/** A complete request head + body with Content-Length. */
export function rawPost(path: string, headers: Record<string, string>, body: string): string {
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return `POST ${path} HTTP/1.1\r\nHost: rcd\r\n${lines}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
