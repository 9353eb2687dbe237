/**
 * Where a JSON text goes wrong: a strict scanner that finds the first error of a text JSON.parse
 * refused (the native parser gives no reliable position), and the line and column of an index, as
 * a person counts them in the text they wrote.
 */
import { skipWsText as skipWs } from '../mapping/render/json-scan.js';

const SLASH = 0x2f;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LF = 0x0a;
const CR = 0x0d;

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
