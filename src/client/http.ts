/**
 * The two requests of a refresh, as the delivery API defines them (docs/api.md): the catalog GET and
 * the dynamic combine POST, each with If-None-Match when the client holds a tag.
 */
import { parseRetryAfter } from './backoff.js';
import { RcdClientError } from './errors.js';
import type { CatalogEntry, Segment } from './state.js';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface Endpoint {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly fetch: FetchLike;
}

export type Fetched<T> = { readonly status: 304; readonly tag: string | null } | { readonly status: 200; readonly tag: string | null; readonly body: T };

export interface WrappedItem {
  /** Serialized: the minified JSON text. */
  readonly data: string;
  readonly hash: string;
  readonly meta: { readonly uid: number; readonly mod: number; readonly seg: readonly Segment[] };
}

export interface CombineAnswer {
  readonly items: Readonly<Record<string, WrappedItem>>;
  /** Ids the server reported in X-Missing-Content. */
  readonly missing: readonly string[];
}

export async function fetchCatalog(ep: Endpoint, tag: string | null): Promise<Fetched<Record<string, CatalogEntry>>> {
  const res = await send(ep, `${ep.baseUrl}/api/v1/env/catalog`, 'GET', tag, undefined);
  if (res.status === 304) return { status: 304, tag: res.headers.get('etag') ?? tag };
  const body = (await readJson(res)) as { catalog?: unknown };
  if (typeof body?.catalog !== 'object' || body.catalog === null) throw new RcdClientError('bad_response', 'the catalog answer has no catalog object', res.status);
  return { status: 200, tag: res.headers.get('etag'), body: body.catalog as Record<string, CatalogEntry> };
}

export async function fetchCombine(ep: Endpoint, ids: readonly string[], contextBody: string, tag: string | null): Promise<Fetched<CombineAnswer>> {
  const url = `${ep.baseUrl}/api/v1/combine?c=${encodeURIComponent(JSON.stringify(ids))}&dynamic=true&responseType=serialized`;
  const res = await send(ep, url, 'POST', tag, contextBody);
  if (res.status === 304) return { status: 304, tag: res.headers.get('etag') ?? tag };
  const body = await readJson(res);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new RcdClientError('bad_response', 'the combine answer is not an object', res.status);
  const header = res.headers.get('x-missing-content');
  const missing = header === null || header === '' ? [] : header.split(',').map((s) => decodeURIComponent(s));
  return { status: 200, tag: res.headers.get('etag'), body: { items: body as Record<string, WrappedItem>, missing } };
}

async function send(ep: Endpoint, url: string, method: 'GET' | 'POST', tag: string | null, body: string | undefined): Promise<Response> {
  const headers: Record<string, string> = { 'x-api-key': ep.apiKey, 'content-type': 'application/json' };
  if (tag !== null) headers['if-none-match'] = tag;
  let res: Response;
  try {
    res = await ep.fetch(url, { method, headers, body });
  } catch (err) {
    throw new RcdClientError('network', `no answer from ${ep.baseUrl}: ${(err as Error).message}`, 0, null, { cause: err });
  }
  if (res.status === 200 || res.status === 304) return res;
  throw await errorOf(res);
}

async function errorOf(res: Response): Promise<RcdClientError> {
  const retryAfter = parseRetryAfter(res.headers.get('retry-after'), Date.now());
  let code = `http_${res.status}`;
  let message = `the server answered ${res.status}`;
  try {
    const body = (await res.json()) as { error?: { code?: unknown; message?: unknown } };
    if (typeof body.error?.code === 'string') code = body.error.code;
    if (typeof body.error?.message === 'string') message = body.error.message;
  } catch {
    // Not the server's envelope (a proxy's page): the status says enough.
  }
  return new RcdClientError(code, message, res.status, retryAfter);
}

async function readJson(res: Response): Promise<unknown> {
  try {
    return await res.json();
  } catch (err) {
    throw new RcdClientError('bad_response', `the answer is not JSON: ${(err as Error).message}`, res.status, null, { cause: err });
  }
}
