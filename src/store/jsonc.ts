/**
 * Stored content is JSONC: JSON plus `//` line comments and `/* *\/` block comments. This module turns
 * such a text into what is delivered (minified JSON) and its hash, or refuses it with the line and
 * column of the first problem in the text as the user wrote it.
 *
 * Runs on writes only (admin PUT, bundle import, sync), never on the request path.
 *
 * Positions: comments are replaced by spaces (line breaks inside block comments are kept), so every
 * index in the stripped text is the same index in the original text and errors point at the
 * original.
 *
 * The native JSON.parse parses: a valid text must be parsed anyway (minify, hash and mapping
 * validation need the value), so a separate validity check would only add its cost to every
 * accepted write; the position of a failure comes from json-errors.ts.
 */
import { RcdError } from '../runtime/errors.js';
import { contentHash } from '../shared/identity.js';
import { DEFAULT_CONTENT_LIMITS, exceedsDepth, type ContentLimits } from '../shared/json-limits.js';
import { lineColumn, locateJsonError } from './json-errors.js';

export interface CompiledContent {
  /** JSON.stringify(JSON.parse(stripped)): the delivered text, the input of the hash. */
  readonly minified: string;
  readonly value: unknown;
  /** XXH3-128 of `minified`, 32 lowercase hex digits. */
  readonly hash: string;
}

/** Where a text went wrong: 1-based line and column (in characters) of the original text. */
export interface ContentProblem {
  readonly line: number;
  readonly column: number;
  readonly reason: string;
}

// Set once per thread that writes (the control thread, the import thread) from the configuration;
// the defaults elsewhere (the CLI's offline commands).
let limits: ContentLimits = DEFAULT_CONTENT_LIMITS;

export function setContentLimits(next: ContentLimits): void {
  limits = next;
}

export function contentLimits(): ContentLimits {
  return limits;
}

const SLASH = 0x2f;
const STAR = 0x2a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LF = 0x0a;
const CR = 0x0d;
const BOM = 0xfeff;

/**
 * Validates and minifies a JSONC text. Throws RcdError('invalid_content') whose message names line
 * and column; `details` is `{ line, column, reason }`.
 */
export function compileContent(text: string): CompiledContent {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > limits.maxBytes) throw contentError(text, 0, tooLargeReason(bytes));
  const stripped = stripComments(text);
  let value: unknown;
  try {
    value = JSON.parse(stripped);
  } catch (err) {
    // The native parser is the fast path for valid texts; the position of a failure comes from our
    // own scanner, which runs only here (Node 20's messages do not reliably carry a position).
    const at = locateJsonError(stripped);
    if (at === null) throw contentError(text, 0, `invalid JSON (${(err as Error).message})`);
    throw contentError(text, at.index, at.reason);
  }
  if (exceedsDepth(value, limits.maxDepth)) throw contentError(text, deepIndex(stripped, limits.maxDepth), tooDeepReason());
  let minified: string;
  try {
    minified = JSON.stringify(value);
  } catch {
    // JSON.stringify recurses; a pathologically deep document overflows the stack.
    throw contentError(text, 0, 'the document is nested too deeply');
  }
  return { minified, value, hash: contentHash(minified) };
}

/**
 * The stored text of content given as a JSON value (schedule ops, bundles): its 2-space indented
 * text, readable in the admin API, the same value always the same text. Indentation grows with the
 * depth of every value, so a small deeply nested value makes a text many times its size: the depth
 * and the text's size are checked before the text is made. Throws invalid_content (also for a value
 * JSON cannot hold).
 */
export function jsonContentText(value: unknown): string {
  if (exceedsDepth(value, limits.maxDepth)) throw new RcdError('invalid_content', `invalid content: ${tooDeepReason()}`, { reason: tooDeepReason() });
  const minified = JSON.stringify(value) as string | undefined;
  if (minified === undefined) throw new RcdError('invalid_content', 'json must be a JSON value', { reason: 'json must be a JSON value' });
  const bytes = Buffer.byteLength(minified, 'utf8') + indentation(value, 0);
  if (bytes > limits.maxBytes) throw new RcdError('invalid_content', `invalid content: ${tooLargeReason(bytes)}`, { reason: tooLargeReason(bytes) });
  return JSON.stringify(value, null, 2);
}

/**
 * What JSON.stringify(value, null, 2) adds to JSON.stringify(value): in a non-empty container at
 * `level`, a line break and the indent of level + 1 before every member (and a space after an
 * object's colon), a line break and the indent of `level` before the closing bracket. Recursion is
 * bounded: the value's depth was checked.
 */
export function indentation(value: unknown, level: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  const inner = 1 + 2 * (level + 1);
  let added = 0;
  let members = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) added += inner + indentation(value[i], level + 1);
    members = value.length;
  } else {
    const record = value as Record<string, unknown>;
    for (const key in record) {
      added += inner + 1 + indentation(record[key], level + 1);
      members++;
    }
  }
  return members === 0 ? 0 : added + 1 + 2 * level;
}

/**
 * Containers a mapping may nest past --max-content-depth: the rules, variant and patch around a
 * patch's value, so that a patch may reach into content as deep as the limit allows.
 */
export const MAPPING_FRAME_DEPTH = 8;

/**
 * Refuses a mapping nested deeper than content may be, plus its frame, before anything walks it
 * (its validation, JSON.stringify and the renderers recurse). Throws invalid_mapping, whose details
 * are the problem list validateMapping's refusals have.
 */
export function checkMappingDepth(mapping: unknown): void {
  const limit = limits.maxDepth + MAPPING_FRAME_DEPTH;
  if (!exceedsDepth(mapping, limit)) return;
  const reason = `the mapping is nested deeper than ${limit} levels (--max-content-depth + ${MAPPING_FRAME_DEPTH})`;
  throw new RcdError('invalid_mapping', `mapping: ${reason}`, [{ rule: null, path: '', reason }]);
}

/**
 * What one write (a bundle, a change set) stores, counted as its texts are made: the sum may not pass
 * --max-write-bytes. Throws invalid_content.
 */
export class WriteBudget {
  private used = 0;

  take(text: string): void {
    this.used += Buffer.byteLength(text, 'utf8');
    if (this.used > limits.maxWriteBytes) {
      const reason = `the content this write stores is more than ${limits.maxWriteBytes} bytes in all (--max-write-bytes)`;
      throw new RcdError('invalid_content', `invalid content: ${reason}`, { reason });
    }
  }
}

function tooDeepReason(): string {
  return `the document is nested deeper than ${limits.maxDepth} levels (--max-content-depth)`;
}

function tooLargeReason(bytes: number): string {
  return `the content is ${bytes} bytes, more than ${limits.maxBytes} (--max-content-bytes)`;
}

/**
 * Index of the first bracket that opens a container past `maxDepth` in a valid JSON text (for the
 * error's line and column). Only called on a text whose value is known to be too deep.
 */
function deepIndex(s: string, maxDepth: number): number {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === QUOTE) i = skipStringForStrip(s, i + 1) - 1;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > maxDepth) return i;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return 0;
}

/**
 * Removes `//` and `/* *\/` comments, replacing every removed character by a space except line
 * breaks, so indices are preserved. A comment marker inside a string stays. A leading byte-order
 * mark becomes a space too (editors add it; JSON.parse refuses it).
 * Throws invalid_content for a block comment that is never closed.
 */
export function stripComments(text: string): string {
  const n = text.length;
  const bom = n > 0 && text.charCodeAt(0) === BOM;
  // Most stored content has no comment at all: one native scan instead of a char loop.
  if (text.indexOf('/') === -1) return bom ? ' ' + text.slice(1) : text;
  let out = '';
  let copied = 0;
  if (bom) {
    out = ' ';
    copied = 1;
  }
  let i = copied;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = skipStringForStrip(text, i + 1);
      continue;
    }
    if (c === SLASH && i + 1 < n) {
      const next = text.charCodeAt(i + 1);
      if (next === SLASH) {
        let end = i + 2;
        while (end < n) {
          const e = text.charCodeAt(end);
          if (e === LF || e === CR) break;
          end++;
        }
        out += text.slice(copied, i) + ' '.repeat(end - i);
        copied = end;
        i = end;
        continue;
      }
      if (next === STAR) {
        const close = text.indexOf('*/', i + 2);
        if (close === -1) throw contentError(text, i, 'unterminated block comment');
        const end = close + 2;
        out += text.slice(copied, i) + blank(text.slice(i, end));
        copied = end;
        i = end;
        continue;
      }
    }
    i++;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** Index just past the closing quote (or the end of the text when the string never closes). */
function skipStringForStrip(text: string, i: number): number {
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i += 2;
    else if (c === QUOTE) return i + 1;
    else if (c === LF || c === CR) return i; // invalid anyway; do not let it swallow the rest
    else i++;
  }
  return n;
}

function blank(comment: string): string {
  return comment.replace(/[^\r\n]/g, ' ');
}

function contentError(text: string, index: number, reason: string): RcdError {
  const { line, column } = lineColumn(text, index);
  const problem: ContentProblem = { line, column, reason };
  return new RcdError('invalid_content', `invalid JSONC at line ${line}, column ${column}: ${reason}`, problem);
}
