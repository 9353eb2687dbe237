/**
 * `$regex` (with `$options`) in rule conditions: the one place a pattern is compiled, used both by
 * validation at mapping put/import (validate.ts, through the operator table in operators.ts) and by
 * compilation for the evaluator (compile.ts), so the two cannot disagree on what is accepted or how
 * it matches.
 *
 * Engine: re2js, a pure JavaScript port of RE2. Matching takes time linear in the input (no
 * backtracking: `^(a+)+$` on "aaaa…!" is one pass), where JavaScript's RegExp takes exponential time
 * on such patterns and blocks the delivery thread that evaluates conditions. What RE2 cannot run in
 * linear time (backreferences, lookahead, lookbehind, atomic groups, possessive quantifiers) is a
 * syntax error, refused when the mapping is stored. re2js's optional lookbehind support is not
 * enabled: the language stays plain RE2.
 *
 * Cost per test: re2js is several times slower than V8's RegExp and allocates per call (it wraps the
 * input and builds its search state; the evaluator around it allocates nothing). Accepted: it is a
 * small part of a request, and only mappings using `$regex` pay it (bench/micro/mapping.ts,
 * runRegexMicro, compares the two). No fast path on V8's RegExp for "simple" patterns: it would be a second
 * engine whose answers differ from RE2's (`\s`, `.` on astral characters and \r, case folding).
 *
 * Bounds. Linear is not free: a pattern built to defeat re2js's lazy DFA (so that it falls back to
 * its NFA) costs in proportion to program size x input length. Hence, all fixed:
 * - MAX_REGEX_SOURCE: pattern text, in UTF-16 code units (bounds parse and compile at put);
 * - MAX_REGEX_PROGRAM: compiled instructions (re2js programSize(): about one per literal character
 *   or class; a bounded repeat counts every copy, `[a-z0-9]{1,64}` is 131), so that such a pattern's
 *   worst case on the longest input stays a bounded pause;
 * - MAX_REGEX_INPUT: a longer string is not read and never matches (so `$not` of it matches);
 * - MAX_REGEX_SCAN: what one `$regex` op reads per evaluation in total (value-tests.ts, regexTest),
 *   so that an array of long strings in p cannot multiply the above by the body size.
 * Typical patterns stay far below these bounds.
 * They are constants, not flags: a mapping must mean the same on every server and after every
 * restart (it is validated once, when stored), and moving a store to a server configured lower
 * must not make mappings it already accepted fail to compile. Documented in docs/api.md.
 */
import { RE2JS } from 're2js';

export const MAX_REGEX_SOURCE = 512;
export const MAX_REGEX_PROGRAM = 256;
export const MAX_REGEX_INPUT = 1024;
export const MAX_REGEX_SCAN = 4 * MAX_REGEX_INPUT;

/** A compiled `$regex`; test it with regexMatches. */
export type CompiledRegex = RE2JS;

/** The compiled pattern, or the reason it is refused (a mapping problem). */
export type RegexResult = { readonly regex: CompiledRegex; readonly error: null } | { readonly regex: null; readonly error: string };

const FLAG_BITS: Readonly<Record<string, number>> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
  // RE2 always matches by code point and always knows \p{..}: what `u` turns on in JavaScript is
  // the only mode there is. Accepted so that `$options: "iu"` keeps meaning what it says.
  u: 0,
};

/**
 * Compiles `$regex` with the `$options` beside it (undefined when there is none). Never throws:
 * every refusal is a reason string, reported as an `invalid_mapping` problem on the rule.
 */
export function compileRegex(pattern: unknown, options: unknown): RegexResult {
  if (typeof pattern !== 'string') return refuse('$regex needs a string');
  if (pattern.length > MAX_REGEX_SOURCE) return refuse(`$regex is longer than ${MAX_REGEX_SOURCE} characters`);
  let flags = 0;
  if (options !== undefined) {
    if (typeof options !== 'string') return refuse('$options may only hold the flags i, m, s, u');
    for (let i = 0; i < options.length; i++) {
      const c = options.charAt(i);
      // g and y would make a JavaScript RegExp stateful; anything else is no RE2 flag either.
      const bit = Object.hasOwn(FLAG_BITS, c) ? FLAG_BITS[c] : undefined;
      if (bit === undefined) return refuse('$options may only hold the flags i, m, s, u');
      if (options.indexOf(c) !== i) return refuse(`$options repeats the flag ${c}`);
      flags |= bit;
    }
  }
  // re2js expands counted repeats while compiling, and bounds only their nesting: a 500-character
  // `(?:abcdefghij…){1000}` would build 490,000 instructions (~300 ms and a large heap) only to be
  // refused below. The text gives an upper bound first, so what is compiled stays small.
  if (programBound(pattern) > MAX_REGEX_PROGRAM_BOUND) {
    return refuse(`$regex is too complex: its counted repeats may expand to far more than ${MAX_REGEX_PROGRAM} instructions, the limit (counted repeats such as {1,64} count every copy)`);
  }
  let regex: RE2JS;
  try {
    // Per test on typical short patterns (runRegexMicro): ~105-260 ns and ~155-290 B against 19-48 ns
    // for V8's RegExp; accepted for linear time (see above).
    regex = RE2JS.compile(pattern, flags);
  } catch (err) {
    return refuse(`bad regular expression (RE2 syntax; backreferences and lookaround are not supported): ${(err as Error).message}`);
  }
  const size = regex.programSize();
  if (size > MAX_REGEX_PROGRAM) {
    return refuse(`$regex is too complex: it compiles to ${size} instructions, the limit is ${MAX_REGEX_PROGRAM} (counted repeats such as {1,64} count every copy)`);
  }
  return { regex, error: null };
}

/**
 * Patterns whose textual bound exceeds this are refused without compiling. 16x the real limit,
 * because the bound overestimates: typical patterns within MAX_REGEX_PROGRAM read 1.5-3x their size
 * (`^[a-z0-9]{1,64}$`: 199 for 131); only repeats of what compiles to nearly nothing (`(…){0}`, a
 * repeated empty group) can be refused by it though RE2 would simplify them away. Compiling what
 * passes stays short, once, when the mapping is stored.
 */
const MAX_REGEX_PROGRAM_BOUND = 16 * MAX_REGEX_PROGRAM;

const REPEAT = /^\{(\d+)(?:(,)(\d*))?\}/;
const FLAGS_ONLY = /^\(\?[imsU-]*\)/;

/**
 * An upper bound on the instructions `pattern` compiles to, read from its text (RE2 syntax), not a
 * parser. Every character counts one instruction, at least what a literal, a class or an escape
 * compiles to; `|` two and `)` three (the alternation or capture, plus the no-op of an empty branch
 * or group); `*`, `+`, `?` two; `X{n,m}` adds (X + 2) per copy, max(n, m) copies (n + 1 for `{n,}`),
 * so repeats of repeated groups multiply. `(?i)` and `\Q\E` compile to nothing: a quantifier after
 * them repeats what came before, quantifier included. Checked against re2js's programSize() on
 * generated patterns in the tests (once on 500,000, 288,000 of them valid: none undercounted).
 */
export function programBound(pattern: string): number {
  const groups: number[] = [0]; // never empty: a `)` pops only while more than one is open
  let last = 0; // bound of the atom a following quantifier repeats
  let repeat: RegExpExecArray | null = null;
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i];
    let atom = 1;
    if (c === '\\') {
      // \Q…\E is a run of literals, one instruction per character; an empty one is nothing at all,
      // and a quantifier after it repeats the atom before it.
      if (pattern.startsWith('\\Q\\E', i)) {
        i += 4;
        continue;
      }
      const end = escapeEnd(pattern, i);
      if (pattern[i + 1] === 'Q') atom = end - i;
      i = end;
    } else if (c === '[') {
      i = classEnd(pattern, i);
    } else if (c === '(' && FLAGS_ONLY.test(pattern.slice(i, i + 12))) {
      // `(?i)` sets flags and compiles to nothing: a quantifier after it repeats the atom before it.
      i = pattern.indexOf(')', i) + 1;
      continue;
    } else if (c === '(') {
      groups.push(0);
      last = 0;
      i++;
      continue;
    } else if (c === ')') {
      // Its capture, and the no-op an empty group compiles to.
      atom = (groups.length > 1 ? (groups.pop() as number) : 0) + 3;
      i++;
    } else if (c === '*' || c === '+' || c === '?') {
      // One or two instructions more; what follows a transparent `(?i)` repeats the quantified whole.
      groups[groups.length - 1]! += 2;
      last += 2;
      i++;
      continue;
    } else if (c === '|') {
      // The alternation, and the no-op an empty branch (`(a|)`) compiles to.
      atom = 2;
      i++;
    } else if (c === '{' && (repeat = REPEAT.exec(pattern.slice(i, i + 24))) !== null) {
      const m = repeat;
      const low = Number(m[1]);
      // Over 1,000 re2js refuses the repeat itself; the bound only has to stay finite.
      const copies = Math.min(1001, m[2] === undefined ? low : m[3] === '' ? low + 1 : Math.max(low, Number(m[3])));
      const added = (last + 2) * copies;
      groups[groups.length - 1]! += added;
      last += added;
      i += m[0].length;
      continue;
    } else {
      i++;
    }
    groups[groups.length - 1]! += atom;
    last = atom;
  }
  // Open groups (a syntax error re2js reports) still count; two more for the program's fail and match.
  let total = 2;
  for (const size of groups) total += size + 2;
  return total;
}

/** Past an escape at i: `\Q…\E`, `\p{…}`/`\P{…}`/`\x{…}`, or a backslash and one character. */
function escapeEnd(pattern: string, i: number): number {
  const next = pattern[i + 1];
  if (next === 'Q') {
    const end = pattern.indexOf('\\E', i + 2);
    return end < 0 ? pattern.length : end + 2;
  }
  if ((next === 'p' || next === 'P' || next === 'x') && pattern[i + 2] === '{') {
    const end = pattern.indexOf('}', i + 3);
    return end < 0 ? pattern.length : end + 1;
  }
  return i + 2;
}

/** Past a character class opening at i: `]` first (after an optional `^`) is literal; `[:alpha:]` nests. */
function classEnd(pattern: string, i: number): number {
  let j = i + 1;
  if (pattern[j] === '^') j++;
  if (pattern[j] === ']') j++;
  while (j < pattern.length) {
    const c = pattern[j];
    if (c === '\\') {
      j += 2;
    } else if (c === '[' && pattern[j + 1] === ':') {
      const end = pattern.indexOf(':]', j + 2);
      j = end < 0 ? j + 1 : end + 2;
    } else if (c === ']') {
      return j + 1;
    } else {
      j++;
    }
  }
  return j;
}

/** compileRegex on an operator object holding `$regex` (and its own `$options`, if any). */
export function compileRegexOperator(ops: Record<string, unknown>): RegexResult {
  return compileRegex(ops.$regex, Object.hasOwn(ops, '$options') ? ops.$options : undefined);
}

function refuse(error: string): RegexResult {
  return { regex: null, error };
}

/**
 * One test: unanchored search, as RegExp#test; strings over MAX_REGEX_INPUT never match. re2js's
 * test() runs on its lazy DFA (its state cache is bounded at an estimated 8 MiB per pattern; past
 * that it resets it or falls back to its NFA), linear in the input either way.
 */
export function regexMatches(regex: CompiledRegex, value: string): boolean {
  return value.length <= MAX_REGEX_INPUT && regex.test(value);
}
