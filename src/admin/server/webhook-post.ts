/**
 * One webhook attempt on the wire: a POST through node:http or node:https whose connection goes to an
 * address webhook-target.ts checked (an address written in the URL is checked here, a name through
 * the lookup node:http calls). Redirects are not followed: a 3xx is the receiver's final answer.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { TargetRefusedError, hostOf, isInternalAddress } from './webhook-target.js';

export interface WebhookTarget {
  /** Receivers on the server's own network are allowed (--webhook-allow-private). */
  readonly allowPrivate: boolean;
  /** checkedLookup(allowPrivate). */
  readonly lookup: LookupFunction;
}

/**
 * Posts `body` to `url` and resolves with the answer's status once its body was read (and dropped);
 * rejects with TargetRefusedError for a refused target, with the socket's error otherwise, and when
 * `signal` aborts.
 */
export function postWebhook(url: string, headers: Readonly<Record<string, string>>, body: string, signal: AbortSignal, target: WebhookTarget): Promise<number> {
  const parsed = new URL(url);
  const host = hostOf(parsed);
  if (!target.allowPrivate && isIP(host) !== 0 && isInternalAddress(host)) return Promise.reject(new TargetRefusedError());
  const send = parsed.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<number>((resolve, reject) => {
    const req = send(parsed, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, signal, lookup: target.lookup }, (res: IncomingMessage) => {
      // Read to the end so the connection can be reused; the answer means nothing beyond its status.
      res.on('error', reject);
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.resume();
    });
    req.on('error', reject);
    req.end(body);
  });
}
