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
 * simdjson: bench/micro/json.ts measured `simdjson.isValid` faster than `JSON.parse` on a large
 * document, but a valid text must be parsed anyway (minify, hash, mapping validation need the value)
 * so a pre-check would only add its cost to every accepted write, and on an invalid text we need the
 * position, which isValid does not give. `simdjson.parse` is slower than `JSON.parse` at every size.
 * So neither is used here; the numbers are in the report of that benchmark.
 */
import { RcdError } from '../runtime/errors.js';
import { contentHash } from '../shared/identity.js';
import { DEFAULT_CONTENT_LIMITS, exceedsDepth, type ContentLimits } from '../shared/json-limits.js';
import { skipWsText as skipWs } from '../mapping/render/json-scan.js';

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

/** 1-based line and column of a UTF-16 index. Columns count characters (code points). */
export function lineColumn(text: string, index: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  const end = Math.min(index, text.length);
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === LF) {
      line++;
      lineStart = i + 1;
    } else if (c === CR && text.charCodeAt(i + 1) !== LF) {
      line++;
      lineStart = i + 1;
    }
  }
  let column = 1;
  for (let i = lineStart; i < end; i++) {
    const c = text.charCodeAt(i);
    // A surrogate pair is one character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < end) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    column++;
  }
  return { line, column };
}

const EXPECT_VALUE = 0;
const EXPECT_KEY = 1;
const AFTER_VALUE = 2;
const IN_ARRAY = 0;
const IN_OBJECT = 1;

/**
 * A strict RFC 8259 scanner that finds the first error of a text JSON.parse refused. Iterative (an
 * explicit stack) so that a deeply nested invalid document cannot overflow the call stack.
 * Returns null when the text is valid.
 */
export function locateJsonError(s: string): { index: number; reason: string } | null {
  const n = s.length;
  const stack: number[] = [];
  let expect = EXPECT_VALUE;
  let afterComma = false;
  let i = skipWs(s, 0);
  while (true) {
    if (expect === EXPECT_VALUE) {
      if (i >= n) return { index: i, reason: 'unexpected end of input, expected a value' };
      const c = s.charCodeAt(i);
      if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
        const close = c === 0x7b ? 0x7d : 0x5d;
        stack.push(c === 0x7b ? IN_OBJECT : IN_ARRAY);
        i = skipWs(s, i + 1);
        if (s.charCodeAt(i) === close) {
          stack.pop();
          i = skipWs(s, i + 1);
          expect = AFTER_VALUE;
        } else {
          expect = c === 0x7b ? EXPECT_KEY : EXPECT_VALUE;
        }
        afterComma = false;
        continue;
      }
      if (c === QUOTE) {
        const r = scanString(s, i);
        if (r.reason !== '') return { index: r.index, reason: r.reason };
        i = skipWs(s, r.index);
        expect = AFTER_VALUE;
        continue;
      }
      if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
        const r = scanNumber(s, i);
        if (r.reason !== '') return { index: r.index, reason: r.reason };
        i = skipWs(s, r.index);
        expect = AFTER_VALUE;
        continue;
      }
      const lit = s.startsWith('true', i) ? 4 : s.startsWith('false', i) ? 5 : s.startsWith('null', i) ? 4 : 0;
      if (lit > 0) {
        i = skipWs(s, i + lit);
        expect = AFTER_VALUE;
        continue;
      }
      const top = stack.length > 0 ? stack[stack.length - 1] : -1;
      if (afterComma && ((top === IN_ARRAY && c === 0x5d) || (top === IN_OBJECT && c === 0x7d))) {
        return { index: i, reason: 'trailing comma before ' + describe(s, i) };
      }
      return { index: i, reason: `unexpected ${describe(s, i)}, expected a value` };
    }
    if (expect === EXPECT_KEY) {
      if (i >= n) return { index: i, reason: 'unexpected end of input, expected a property name' };
      const c = s.charCodeAt(i);
      if (c !== QUOTE) {
        if (afterComma && c === 0x7d) return { index: i, reason: "trailing comma before '}'" };
        return { index: i, reason: `unexpected ${describe(s, i)}, expected a double-quoted property name` };
      }
      const r = scanString(s, i);
      if (r.reason !== '') return { index: r.index, reason: r.reason };
      i = skipWs(s, r.index);
      if (s.charCodeAt(i) !== 0x3a /* : */) {
        return { index: i, reason: i >= n ? "unexpected end of input, expected ':'" : `unexpected ${describe(s, i)}, expected ':'` };
      }
      i = skipWs(s, i + 1);
      expect = EXPECT_VALUE;
      afterComma = false;
      continue;
    }
    // AFTER_VALUE
    if (stack.length === 0) {
      return i >= n ? null : { index: i, reason: `unexpected ${describe(s, i)} after the end of the JSON value` };
    }
    const top = stack[stack.length - 1];
    const close = top === IN_OBJECT ? 0x7d : 0x5d;
    const expected = top === IN_OBJECT ? "',' or '}'" : "',' or ']'";
    if (i >= n) return { index: i, reason: `unexpected end of input, expected ${expected}` };
    const c = s.charCodeAt(i);
    if (c === 0x2c /* , */) {
      i = skipWs(s, i + 1);
      expect = top === IN_OBJECT ? EXPECT_KEY : EXPECT_VALUE;
      afterComma = true;
      continue;
    }
    if (c === close) {
      stack.pop();
      i = skipWs(s, i + 1);
      continue;
    }
    return { index: i, reason: `unexpected ${describe(s, i)}, expected ${expected}` };
  }
}

interface ScanResult {
  /** Index after the token, or of the problem when reason is not ''. */
  index: number;
  reason: string;
}

function scanString(s: string, start: number): ScanResult {
  const n = s.length;
  let i = start + 1;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c === QUOTE) return { index: i + 1, reason: '' };
    if (c < 0x20) {
      const what = c === LF || c === CR ? 'line break' : 'control character';
      return { index: i, reason: `unescaped ${what} in a string (write it as an escape such as \\n)` };
    }
    if (c === BACKSLASH) {
      const e = s.charCodeAt(i + 1);
      if (e === 0x75 /* u */) {
        for (let k = 2; k < 6; k++) {
          if (!isHex(s.charCodeAt(i + k))) return { index: i, reason: 'invalid \\u escape: expected 4 hex digits' };
        }
        i += 6;
        continue;
      }
      if (e === QUOTE || e === BACKSLASH || e === SLASH || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        i += 2;
        continue;
      }
      return { index: i, reason: i + 1 >= n ? 'unterminated string' : `invalid escape '\\${s[i + 1]}' in a string` };
    }
    i++;
  }
  return { index: start, reason: 'unterminated string' };
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function scanNumber(s: string, start: number): ScanResult {
  let i = start;
  if (s.charCodeAt(i) === 0x2d) i++;
  if (!isDigit(s.charCodeAt(i))) return { index: i, reason: "invalid number: expected a digit after '-'" };
  if (s.charCodeAt(i) === 0x30) i++;
  else while (isDigit(s.charCodeAt(i))) i++;
  if (s.charCodeAt(i) === 0x2e /* . */) {
    i++;
    if (!isDigit(s.charCodeAt(i))) return { index: i, reason: "invalid number: expected a digit after '.'" };
    while (isDigit(s.charCodeAt(i))) i++;
  }
  const e = s.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = s.charCodeAt(i);
    if (sign === 0x2b || sign === 0x2d) i++;
    if (!isDigit(s.charCodeAt(i))) return { index: i, reason: 'invalid number: expected a digit in the exponent' };
    while (isDigit(s.charCodeAt(i))) i++;
  }
  return { index: i, reason: '' };
}

function describe(s: string, i: number): string {
  const cp = s.codePointAt(i) ?? 0;
  if (cp < 0x20 || cp === 0x7f) return `character U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  return `'${String.fromCodePoint(cp)}'`;
}
