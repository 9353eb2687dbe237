/**
 * The checks of a write that need no store, made by both stores before their transaction: the CPU
 * work (a text compiled) does not hold the write lock, and an invalid write is refused before
 * anything is touched.
 */
import { RcdError } from '../runtime/errors.js';
import { compileContent, type CompiledContent } from './jsonc.js';
import { appVersionProblem, contentIdProblem } from './ids.js';

/** A content PUT's id, app version and text; returns the compiled text. */
export function checkContentWrite(id: string, text: string, minAppVersion: string | null): CompiledContent {
  const idProblem = contentIdProblem(id);
  if (idProblem !== '') throw new RcdError('invalid_request', idProblem);
  if (minAppVersion !== null) {
    const vProblem = appVersionProblem(minAppVersion);
    if (vProblem !== '') throw new RcdError('invalid_request', vProblem);
  }
  if (typeof text !== 'string') throw new RcdError('invalid_request', 'content text must be a string');
  return compileContent(text);
}

export function checkRevisionNumber(to: number): void {
  if (!Number.isSafeInteger(to) || to < 1) throw new RcdError('invalid_request', 'the revision to roll back to must be a positive integer');
}

export function checkSyncIds(ids: readonly string[] | undefined): void {
  if (ids === undefined) return;
  if (!Array.isArray(ids)) throw new RcdError('invalid_request', 'ids must be an array of content ids');
  for (const id of ids) {
    if (typeof id !== 'string' || id.length === 0) throw new RcdError('invalid_request', 'ids must be non-empty strings');
  }
}
