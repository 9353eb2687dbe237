/**
 * The comment a person gives with a write (the console asks for one with every confirmation): the
 * `X-Rcd-Comment` header, percent-encoded UTF-8 (what encodeURIComponent gives, so any language
 * fits in a header), at most MAX_COMMENT characters, no control characters. It is stored in the
 * write's audit entries as `detail.comment` (docs/admin.md "Audit log").
 */
import { RcdError } from '../../runtime/errors.js';
import { isPlainObject } from '../../shared/json.js';
import type { NewAuditEntry } from './state.js';

export const COMMENT_HEADER = 'x-rcd-comment';
export const MAX_COMMENT = 500;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** The comment of a request (trimmed), or null when it has none; invalid_request when it is malformed. */
export function commentOf(header: string | string[] | undefined): string | null {
  if (header === undefined) return null;
  if (Array.isArray(header)) throw new RcdError('invalid_request', `${COMMENT_HEADER} must be given once`);
  let text: string;
  // Raw bytes beyond ASCII arrive as Latin-1 characters: refused, not stored garbled.
  if (!PRINTABLE_ASCII.test(header)) throw new RcdError('invalid_request', `${COMMENT_HEADER} must be percent-encoded UTF-8 (encodeURIComponent)`);
  try {
    text = decodeURIComponent(header).trim();
  } catch {
    throw new RcdError('invalid_request', `${COMMENT_HEADER} must be percent-encoded UTF-8 (encodeURIComponent)`);
  }
  if (text === '') return null;
  if (text.length > MAX_COMMENT) throw new RcdError('invalid_request', `${COMMENT_HEADER} must be at most ${MAX_COMMENT} characters, got ${text.length}`);
  if (CONTROL.test(text)) throw new RcdError('invalid_request', `${COMMENT_HEADER} must not hold control characters (line breaks included)`);
  return text;
}

/**
 * The entries with the comment in the detail of those written in the caller's own name (a rollout's
 * advance also audits the step it applied in the name of the step's creator: that one is not theirs).
 */
export function withComment(entries: readonly NewAuditEntry[], comment: string | null, actor: string, tokenId: string): readonly NewAuditEntry[] {
  if (comment === null) return entries;
  return entries.map((e) => {
    if (e.actor !== actor || e.tokenId !== tokenId) return e;
    const detail = e.detail === null || e.detail === undefined ? {} : isPlainObject(e.detail) ? e.detail : { value: e.detail };
    return { ...e, detail: { ...detail, comment } };
  });
}
