/**
 * A fetch over a node:http(s) Agent, for clients that take a fetch implementation (the OpenFeature
 * OFREP providers' `fetchImplementation`): a keep-alive agent with one socket pins every request to
 * one connection, hence to one delivery loop of a --http-threads server, and an `https` agent given
 * the test PKI's root verifies the server's chain. Node's own fetch takes neither.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export type FetchLike = (input: Request | string | URL, init?: RequestInit) => Promise<Response>;

/** One keep-alive connection (maxSockets 1); `ca` makes it HTTPS with that trust. */
export function singleConnectionAgent(ca?: string): HttpAgent | HttpsAgent {
  return ca === undefined ? new HttpAgent({ keepAlive: true, maxSockets: 1 }) : new HttpsAgent({ keepAlive: true, maxSockets: 1, ca });
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

export function agentFetch(agent: HttpAgent | HttpsAgent): FetchLike {
  return async function fetchOverAgent(input, init) {
    const req = new Request(input, init);
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.from(await req.arrayBuffer());
    const headers: Record<string, string> = {};
    req.headers.forEach((value, name) => (headers[name] = value));
    if (body !== undefined) headers['content-length'] = String(body.byteLength);
    const url = new URL(req.url);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Response>((resolve, reject) => {
      const outgoing = send(url, { method: req.method, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const out = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (value === undefined) continue;
            for (const v of Array.isArray(value) ? value : [value]) out.append(name, v);
          }
          resolve(new Response(NULL_BODY_STATUSES.has(status) ? null : Buffer.concat(chunks), { status, headers: out }));
        });
        res.on('error', reject);
      });
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  };
}
