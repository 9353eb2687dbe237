/**
 * One HTTP exchange through node:http, which (unlike fetch) hands back the body exactly as it came
 * over the wire: compressed bodies stay compressed, and the framing (Content-Length or chunked) is seen.
 */
import { request, type Agent } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as received (still encoded). */
  wire: Buffer;
}

export function rawCall(
  base: string,
  path: string,
  opts: { method?: string; key?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<RawReply> {
  const method = opts.method ?? 'POST';
  const headers: Record<string, string> = { 'content-type': 'application/json', ...opts.headers };
  if (opts.key !== undefined) headers['x-api-key'] = opts.key;
  return exchange(base + path, method, headers, method === 'POST' ? (opts.body ?? '{}') : undefined, false);
}

/**
 * Sends exactly `headers` and `body` (with its Content-Length), on a connection of `agent` (false: a
 * connection of its own), and collects the answer as received.
 */
export function exchange(url: string, method: string, headers: Record<string, string>, body: string | undefined, agent: Agent | false): Promise<RawReply> {
  const all = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: all, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, wire: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The body decoded by its Content-Encoding (gzip, br, or none). */
export function decoded(r: RawReply): Buffer {
  const coding = r.headers['content-encoding'];
  if (coding === 'gzip') return gunzipSync(r.wire);
  if (coding === 'br') return brotliDecompressSync(r.wire);
  if (coding === undefined) return r.wire;
  throw new Error(`unexpected content-encoding ${String(coding)}`);
}
