/**
 * The HTTP exchange of an admin call: its body read under a limit, its JSON answer (with how far a
 * write reached) or its error answer in the stable error format.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Propagation } from '../../control/nodes.js';
import { errorResponse, RcdError, responseForError, type ErrorResponse } from '../../runtime/errors.js';
import { isPlainObject } from '../../shared/json.js';

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };
/** A lock is normally held for one transaction (milliseconds); a second is a polite retry. */
const STORE_BUSY_RETRY_AFTER_S = '1';

function isSqliteBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/**
 * Reads the body under a limit. Past the limit the rest is drained without being kept, so the
 * client reads a clean 413 instead of a reset connection; only authenticated callers get this far.
 */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? '0');
    let tooLarge = declared > max;
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (tooLarge) return;
      size += chunk.length;
      if (size > max) {
        tooLarge = true;
        chunks.length = 0;
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (tooLarge) reject(new RcdError('payload_too_large', `the request body exceeds ${max} bytes`));
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    });
    req.on('error', reject);
  });
}

/**
 * A write that changed routing data says how far it reached: `rcd-propagation: applied/nodes` on
 * every such answer, and a `propagation` member when the answer is a JSON object.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown, propagation: Propagation | null): void {
  const headers: Record<string, string | number> = { ...JSON_HEADERS };
  let answer = body;
  if (propagation !== null) {
    headers['rcd-propagation'] = `${propagation.applied}/${propagation.nodes}`;
    if (isPlainObject(body)) answer = { ...body, propagation };
  }
  const text = JSON.stringify(answer);
  headers['content-length'] = Buffer.byteLength(text);
  res.writeHead(status, headers);
  res.end(text);
}

export function sendError(log: (line: string) => void, res: ServerResponse, failure: unknown): void {
  let err = failure;
  let answer: ErrorResponse;
  const headers: Record<string, string | number> = { ...JSON_HEADERS };
  // The admin state (audit log, webhooks) has its own connection to the store file: a lock held
  // elsewhere reaches here as better-sqlite3's own error.
  if (isSqliteBusy(err)) err = new RcdError('store_busy', 'the store is locked by another connection; retry shortly');
  if (err instanceof RcdError) {
    answer = responseForError(err);
    if (err.code === 'unauthorized') headers['www-authenticate'] = 'Bearer realm="rcd-admin"';
    if (err.code === 'store_busy' || err.code === 'overloaded' || err.code === 'too_many_streams') headers['retry-after'] = STORE_BUSY_RETRY_AFTER_S;
    if (err.code === 'method_not_allowed') {
      const allow = (err.details as { allow?: string[] } | undefined)?.allow;
      if (allow !== undefined) headers.allow = allow.join(', ');
    }
  } else {
    log(`admin: internal error: ${(err as Error)?.stack ?? String(err)}`);
    answer = errorResponse('internal', 'internal error');
  }
  if (res.headersSent) {
    res.destroy();
    return;
  }
  headers['content-length'] = Buffer.byteLength(answer.body);
  res.writeHead(Number(answer.statusLine.slice(0, 3)), headers);
  res.end(answer.body);
}
