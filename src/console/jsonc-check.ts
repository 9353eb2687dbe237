/**
 * The editor's check of a JSONC text, with the server's own rules (src/store/jsonc.ts, bundled):
 * the line, column and reason shown before saving are the ones the server would answer with
 * `invalid_content`. Only the hash is left to the server (it needs a native addon).
 */
import { RcdError } from '../runtime/errors.js';
import { stripComments, type ContentProblem } from '../store/jsonc.js';
import { lineColumn, locateJsonError } from '../store/json-errors.js';

export interface JsoncProblem extends ContentProblem {
  /** UTF-16 offset of the problem in the text, for the editor's marker. */
  readonly offset: number;
}

export function jsoncProblem(text: string): JsoncProblem | null {
  let stripped: string;
  try {
    stripped = stripComments(text);
  } catch (err) {
    if (err instanceof RcdError) {
      const at = err.details as ContentProblem;
      return { ...at, offset: offsetOf(text, at.line, at.column) };
    }
    throw err;
  }
  try {
    JSON.parse(stripped);
    return null;
  } catch {
    const at = locateJsonError(stripped) ?? { index: 0, reason: 'invalid JSON' };
    return { ...lineColumn(text, at.index), reason: at.reason, offset: at.index };
  }
}

/** The UTF-16 offset of a 1-based line and column (columns count code points). */
function offsetOf(text: string, line: number, column: number): number {
  let i = 0;
  for (let l = 1; l < line && i < text.length; i++) {
    if (text[i] === '\n' || (text[i] === '\r' && text[i + 1] !== '\n')) l++;
  }
  for (let c = 1; c < column && i < text.length; c++) i += (text.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
  return i;
}
