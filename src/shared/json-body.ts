/**
 * A request body as UTF-8 text or as JSON, refused with the admin API's stable codes. Shared by the
 * admin handlers (control thread) and the import thread (src/control/import-worker.ts), so a body
 * is refused the same way whichever thread reads it.
 */
import { RcdError } from '../runtime/errors.js';

export function decodeUtf8(body: Uint8Array, code: 'invalid_json' | 'invalid_content'): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new RcdError(code, 'the request body is not valid UTF-8');
  }
}

export function parseJsonBytes(body: Uint8Array): unknown {
  const text = decodeUtf8(body, 'invalid_json');
  if (text.trim() === '') throw new RcdError('invalid_json', 'the request body must be JSON and must not be empty');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new RcdError('invalid_json', `the request body is not valid JSON: ${(err as Error).message}`);
  }
}
