/**
 * Raw TCP exchanges with a server (node:net): for inputs no HTTP client library will send (broken
 * framings, bytes outside ASCII, heads split across writes) and for timing what the server does with
 * them: an answer, a close, or nothing at all.
 */
import { connect } from 'node:net';

export interface RawOutcome {
  /** Everything received, as bytes. */
  readonly bytes: Buffer;
  /** The status code of the first response, or 0 when no status line arrived. */
  readonly status: number;
  /** The server closed (or reset) the connection within the wait. */
  readonly closed: boolean;
  /** ms from the last write to the first byte received; -1 when nothing arrived. */
  readonly firstByteMs: number;
  /** ms from the last write to the close; -1 when it stayed open. */
  readonly closeMs: number;
}

export interface RawOptions {
  /** Pause between the parts, so each arrives in its own read (default 40 ms). */
  readonly gapMs?: number;
  /**
   * How long to wait after the last write (default 1000 ms). The exchange ends early once the server
   * closed, or once a complete response arrived when `untilResponses` says how many to expect.
   */
  readonly waitMs?: number;
  /** Stop as soon as this many complete responses (head + Content-Length body) arrived. */
  readonly untilResponses?: number;
  /** After `untilResponses` arrived, keep the connection this long before hanging up (default 0). */
  readonly graceMs?: number;
  /** Half-close (FIN) after the last write: the client has nothing more to send. */
  readonly endAfterWrite?: boolean;
}

export function statusOf(bytes: Buffer): number {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(bytes.subarray(0, 16).toString('latin1'));
  return m === null ? 0 : Number(m[1]);
}

/**
 * Complete responses in `bytes` (Content-Length or chunked framing; what rcd and nginx send).
 * `firstIsHead`: the first answers a HEAD request, so it has no body whatever its Content-Length says.
 */
export function responsesIn(bytes: Buffer, firstIsHead = false): { status: number; headers: string; body: Buffer }[] {
  const out: { status: number; headers: string; body: Buffer }[] = [];
  let pos = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', pos, 'latin1');
    if (end === -1) return out;
    const head = bytes.subarray(pos, end).toString('latin1');
    const status = statusOf(bytes.subarray(pos));
    const cl = /\r\ncontent-length: *(\d+)/i.exec(head);
    let bodyStart = end + 4;
    let body: Buffer;
    if (firstIsHead && out.length === 0) {
      body = bytes.subarray(bodyStart, bodyStart);
      pos = bodyStart;
    } else if (cl !== null) {
      const n = Number(cl[1]);
      if (bytes.length < bodyStart + n) return out;
      body = bytes.subarray(bodyStart, bodyStart + n);
      pos = bodyStart + n;
    } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = bytes.indexOf('\r\n', bodyStart, 'latin1');
        if (lineEnd === -1) return out;
        const size = parseInt(bytes.subarray(bodyStart, lineEnd).toString('latin1'), 16);
        if (bytes.length < lineEnd + 2 + size + 2) return out;
        parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
        bodyStart = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
      pos = bodyStart;
    } else {
      // No framing: the body runs to the close (only the last response of a closed connection).
      body = bytes.subarray(bodyStart);
      pos = bytes.length;
    }
    out.push({ status, headers: head, body });
    if (pos >= bytes.length) return out;
  }
}

/** Writes `parts` one by one (each in its own TCP write) and records what comes back. */
export function rawExchange(port: number, parts: readonly (string | Buffer)[], opts: RawOptions = {}): Promise<RawOutcome> {
  const gapMs = opts.gapMs ?? 40;
  const waitMs = opts.waitMs ?? 1000;
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', noDelay: true, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    let lastWrite = 0;
    let firstByte = -1;
    let closedAt = -1;
    let timer: NodeJS.Timeout | null = null;
    let settled = false;
    let reached = false;
    const settle = (): void => {
      if (settled) return;
      settled = true;
      if (timer !== null) clearTimeout(timer);
      socket.destroy();
      const bytes = Buffer.concat(chunks);
      resolve({
        bytes,
        status: statusOf(bytes),
        closed: closedAt !== -1,
        firstByteMs: firstByte === -1 ? -1 : firstByte - lastWrite,
        closeMs: closedAt === -1 ? -1 : closedAt - lastWrite,
      });
    };
    socket.on('data', (d: Buffer) => {
      if (firstByte === -1) firstByte = Date.now();
      chunks.push(d);
      if (opts.untilResponses !== undefined && !reached && responsesIn(Buffer.concat(chunks)).length >= opts.untilResponses) {
        reached = true;
        if ((opts.graceMs ?? 0) === 0) {
          settle();
        } else {
          if (timer !== null) clearTimeout(timer);
          timer = setTimeout(settle, opts.graceMs);
        }
      }
    });
    // A reset counts as a close: the server ended the connection.
    socket.on('error', () => undefined);
    // 'end': the server's FIN (with allowHalfOpen the socket would otherwise wait for ours).
    const onClosed = (): void => {
      if (closedAt === -1) closedAt = Date.now();
      settle();
    };
    socket.on('end', onClosed);
    socket.on('close', onClosed);
    socket.on('connect', () => {
      void (async () => {
        for (let i = 0; i < parts.length; i++) {
          if (socket.destroyed) return;
          socket.write(parts[i]!);
          lastWrite = Date.now();
          if (i < parts.length - 1 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        }
        if (opts.endAfterWrite === true && !socket.destroyed) socket.end();
        if (!reached) timer = setTimeout(settle, waitMs);
      })();
    });
  });
}
