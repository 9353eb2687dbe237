/**
 * A small client for the admin API, used by the CLI (and usable by scripts written in TypeScript).
 * Every failure becomes an AdminClientError carrying the server's code and message, so the CLI can
 * print exactly what the server said.
 *
 * It speaks through node:http (node:https for an https URL), not the global fetch: fetch loads and
 * compiles its HTTP stack on first use, which costs every one-request CLI call more CPU than the rest
 * of the command. The reasons a request fails read as fetch's did (the socket's own error, `Invalid
 * URL`, `unknown scheme`, a URL with credentials or a header value a header cannot carry refused).
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';

export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8081';

export class AdminClientError extends Error {
  /** HTTP status, or 0 when the server could not be reached. */
  readonly status: number;
  /** The server's stable error code (`unauthorized`, `invalid_content`, ...), or `unreachable`. */
  readonly code: string;
  readonly details: unknown;
  /** The server's error envelope as received, when there was one. */
  readonly envelope: unknown;

  constructor(status: number, code: string, message: string, details: unknown, envelope: unknown) {
    super(message);
    this.name = 'AdminClientError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.envelope = envelope;
  }
}

export interface AdminClientOptions {
  readonly baseUrl: string;
  readonly token: string;
  /** Recorded as "who" in the audit log. */
  readonly actor?: string;
}

export class AdminClient {
  private readonly base: string;
  private readonly token: string;
  private readonly actor: string | undefined;

  constructor(opts: AdminClientOptions) {
    this.base = opts.baseUrl.replace(/\/+$/, '');
    this.token = opts.token;
    this.actor = opts.actor;
  }

  /** `path` is relative to /admin/v1 (e.g. `environments/dev`); segments must already be encoded. */
  async request<T = unknown>(method: string, path: string, body?: string | Uint8Array, contentType = 'application/json'): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
    if (this.actor !== undefined) headers['x-rcd-actor'] = this.actor;
    if (body !== undefined) headers['content-type'] = contentType;
    const url = `${this.base}/admin/v1/${path}`;
    let answer: Answer;
    try {
      answer = await send(url, method, headers, body);
    } catch (err) {
      throw new AdminClientError(0, 'unreachable', `cannot reach the admin API at ${this.base}: ${(err as Error).message}`, undefined, undefined);
    }
    const { status } = answer;
    const text = await answer.text;
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (status >= 200 && status <= 299) return parsed as T;
    const error = (parsed as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
    if (error !== undefined && typeof error.code === 'string' && typeof error.message === 'string') {
      throw new AdminClientError(status, error.code, error.message, error.details, parsed);
    }
    throw new AdminClientError(status, 'http_error', `the admin API answered HTTP ${status}: ${text.slice(0, 200)}`, undefined, undefined);
  }
}

/** How long a request waits without receiving anything (the head, a part of the body) before it fails. */
const IDLE_TIMEOUT_MS = 300_000;

/** A response whose head has arrived: its status, and its body as text once it has arrived whole. */
interface Answer {
  readonly status: number;
  readonly text: Promise<string>;
}

/**
 * One request. Rejects, before the response's head, with why the request could not be made; the
 * body's promise rejects with `terminated` when the connection ends before the body does.
 */
async function send(url: string, method: string, headers: Record<string, string>, body: string | Uint8Array | undefined): Promise<Answer> {
  const target = new URL(url);
  if (target.username !== '' || target.password !== '') throw new TypeError(`Request cannot be constructed from a URL that includes credentials: ${url}`);
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new TypeError('unknown scheme');
  for (const [name, value] of Object.entries(headers)) {
    const problem = headerValueProblem(name, value);
    if (problem !== '') throw new TypeError(problem);
  }
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  // node:https (and with it TLS) loads only for an https admin URL.
  const request = target.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
  return new Promise<Answer>((resolve, reject) => {
    const req: ClientRequest = request(target, { method, headers } satisfies RequestOptions, (res: IncomingMessage) => {
      resolve({ status: res.statusCode ?? 0, text: readBody(res) });
    });
    // A server that stops sending (a stalled process, a dropped network path) fails the request
    // instead of holding the command forever.
    req.setTimeout(IDLE_TIMEOUT_MS, () => req.destroy(new Error(`nothing received for ${IDLE_TIMEOUT_MS / 1000} s`)));
    // A connection closed before the answer's head reads as fetch words it.
    req.on('error', (err: Error & { code?: string }) => {
      reject(err.code === 'ECONNRESET' && err.message === 'socket hang up' ? new Error('other side closed') : err);
    });
    req.end(body);
  });
}

/** '' when a header can carry `value` as it is, else why not (in fetch's words). */
function headerValueProblem(name: string, value: string): string {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code > 255) return `Cannot convert argument to a ByteString because the character at index ${i} has a value of ${code} which is greater than 255.`;
  }
  return /[^\t\x20-\x7e\x80-\xff]/.test(value) ? `invalid ${name} header` : '';
}

/** The body as text, decoded as UTF-8 the way fetch's `text()` decodes it (a leading BOM dropped). */
function readBody(res: IncomingMessage): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.on('end', () => resolve(new TextDecoder().decode(Buffer.concat(chunks))));
    res.on('aborted', () => reject(new TypeError('terminated')));
    res.on('error', () => reject(new TypeError('terminated')));
  });
}

/** Encodes one path segment (environment, content, key or webhook id). */
export function seg(value: string): string {
  return encodeURIComponent(value);
}
