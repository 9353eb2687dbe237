/**
 * A small client for the admin API, used by the CLI (and usable by scripts written in TypeScript).
 * Every failure becomes an AdminClientError carrying the server's code and message, so the CLI can
 * print exactly what the server said.
 */
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
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body });
    } catch (err) {
      const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
      throw new AdminClientError(0, 'unreachable', `cannot reach the admin API at ${this.base}: ${cause}`, undefined, undefined);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (res.ok) return parsed as T;
    const error = (parsed as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
    if (error !== undefined && typeof error.code === 'string' && typeof error.message === 'string') {
      throw new AdminClientError(res.status, error.code, error.message, error.details, parsed);
    }
    throw new AdminClientError(res.status, 'http_error', `the admin API answered HTTP ${res.status}: ${text.slice(0, 200)}`, undefined, undefined);
  }
}

/** Encodes one path segment (environment, content, key or webhook id). */
export function seg(value: string): string {
  return encodeURIComponent(value);
}
