/**
 * HTTP/1.1 answers read off a raw socket, byte for byte: the status line, the header lines in the
 * order received, the framing (Content-Length or chunked) and the body as sent (still encoded).
 * Shared by the tests that hold what the wire writes (test/unit/delivery/reply.test.ts,
 * wire-differential.test.ts).
 */
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import uWS from 'uWebSockets.js';

export interface Answer {
  readonly statusLine: string;
  /** Header names lower-cased, in the order received. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Buffer;
  readonly chunked: boolean;
  /** The status line and header lines as received (latin1), without the blank line that ends them. */
  readonly head: string;
}

/** The values of header `name` (lower case), in order. */
export function header(a: Answer, name: string): string[] {
  return a.headers.filter(([n]) => n === name).map(([, v]) => v);
}

/**
 * Parses the complete answers at the start of `buf` (Content-Length or chunked framing); returns
 * them and how many bytes they took. An incomplete answer at the end is left unparsed. An answer with
 * neither framing header has no body (a 304, a 204).
 */
export function parseAnswers(buf: Buffer): { answers: Answer[]; used: number } {
  const answers: Answer[] = [];
  let at = 0;
  for (;;) {
    const headEnd = buf.indexOf('\r\n\r\n', at, 'latin1');
    if (headEnd < 0) break;
    const head = buf.toString('latin1', at, headEnd);
    const lines = head.split('\r\n');
    const statusLine = lines[0] ?? '';
    const headers = lines.slice(1).map((line): [string, string] => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    });
    let pos = headEnd + 4;
    const length = headers.find(([n]) => n === 'content-length');
    const chunked = headers.some(([n, v]) => n === 'transfer-encoding' && v.toLowerCase() === 'chunked');
    let body: Buffer;
    if (chunked) {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', pos, 'latin1');
        if (lineEnd < 0) return { answers, used: at };
        const size = parseInt(buf.toString('latin1', pos, lineEnd), 16);
        if (buf.length < lineEnd + 2 + size + 2) return { answers, used: at };
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        pos = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const size = length === undefined ? 0 : Number(length[1]);
      if (buf.length < pos + size) break;
      body = buf.subarray(pos, pos + size);
      pos += size;
    }
    answers.push({ statusLine, headers, body, chunked, head });
    at = pos;
  }
  return { answers, used: at };
}

/** Listens `app` on an ephemeral loopback port: its listen socket (to close) and the port. */
export function listenOnLoopback(app: TemplatedApp): Promise<{ socket: us_listen_socket; port: number }> {
  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', 0, (socket) => {
      if (socket === false) {
        reject(new Error('uWS could not listen'));
        return;
      }
      resolve({ socket, port: uWS.us_socket_local_port(socket) });
    });
  });
}
