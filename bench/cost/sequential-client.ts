/**
 * One keep-alive HTTP/1.1 connection sending requests one at a time, each answer read whole before the
 * next is written: the fixed request sequence of the instruction count (callgrind.ts). Hand-written
 * on a socket rather than fetch so that the bytes sent are exactly the entry's (no headers added
 * between runs) and nothing else goes over the connection.
 */
import { connect, type Socket } from 'node:net';
import type { RequestEntry } from '../harness/scenarios.js';

const HEAD_END = Buffer.from('\r\n\r\n');

/** The bytes of one request as sent. */
export function requestBytes(e: RequestEntry, host: string): Buffer {
  const body = e.body === undefined ? null : Buffer.from(e.body, 'utf8');
  let head = `${e.method} ${e.path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const [k, v] of Object.entries(e.headers)) head += `${k}: ${v}\r\n`;
  if (body !== null) head += `content-length: ${body.byteLength}\r\n`;
  head += '\r\n';
  return body === null ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

/** Status and body length of a complete answer at the start of `buf`, or null while it is incomplete. */
function completeAnswer(buf: Buffer): { status: number; bytes: number } | null {
  const end = buf.indexOf(HEAD_END);
  if (end === -1) return null;
  const head = buf.subarray(0, end).toString('latin1');
  const status = Number(head.slice(9, 12));
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (m === null && /\r\ntransfer-encoding:/i.test(head)) throw new Error('a chunked answer: the sequential client reads Content-Length bodies only');
  const length = status === 304 || status === 204 || m === null ? 0 : Number(m[1]);
  const bytes = end + HEAD_END.byteLength + length;
  return buf.byteLength >= bytes ? { status, bytes } : null;
}

export class SequentialClient {
  private readonly socket: Socket;
  private readonly host: string;
  private pending: Buffer = Buffer.alloc(0);
  private waiter: { resolve: (status: number) => void; reject: (err: Error) => void } | null = null;
  private failure: Error | null = null;
  private readonly encoded = new Map<RequestEntry, Buffer>();

  private constructor(socket: Socket, host: string) {
    this.socket = socket;
    this.host = host;
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('the server closed the connection')));
  }

  static connect(url: string): Promise<SequentialClient> {
    const u = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(u.port), u.hostname, () => {
        socket.off('error', reject);
        resolve(new SequentialClient(socket, u.host));
      });
      socket.once('error', reject);
      socket.setNoDelay(true);
    });
  }

  /** Sends `e` and resolves with the answer's status once the whole answer is in. */
  request(e: RequestEntry): Promise<number> {
    if (this.failure !== null) return Promise.reject(this.failure);
    let bytes = this.encoded.get(e);
    if (bytes === undefined) {
      bytes = requestBytes(e, this.host);
      this.encoded.set(e, bytes);
    }
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.socket.write(bytes);
    });
  }

  close(): void {
    this.failure ??= new Error('closed');
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    this.pending = this.pending.byteLength === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    let answer: { status: number; bytes: number } | null;
    try {
      answer = completeAnswer(this.pending);
    } catch (err) {
      this.fail(err as Error);
      return;
    }
    if (answer === null) return;
    this.pending = this.pending.subarray(answer.bytes);
    const w = this.waiter;
    this.waiter = null;
    if (w === null) this.fail(new Error(`an answer (${answer.status}) nobody asked for`));
    else w.resolve(answer.status);
  }

  private fail(err: Error): void {
    if (this.failure === null) this.failure = err;
    const w = this.waiter;
    this.waiter = null;
    w?.reject(err);
  }
}
