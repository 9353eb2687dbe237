import { describe, expect, it } from 'vitest';
import {
  MAPPING_FRAME_DEPTH,
  WriteBudget,
  checkMappingDepth,
  compileContent,
  indentation,
  jsonContentText,
  setContentLimits,
  stripComments,
} from '../../../src/store/jsonc.js';
import { lineColumn, locateJsonError } from '../../../src/store/json-errors.js';
import { DEFAULT_CONTENT_LIMITS, type ContentLimits } from '../../../src/shared/json-limits.js';
import { RcdError } from '../../../src/runtime/errors.js';
import { contentHash } from '../../../src/shared/identity.js';

function problemOf(text: string): { line: number; column: number; reason: string; message: string } {
  try {
    compileContent(text);
  } catch (err) {
    expect(err).toBeInstanceOf(RcdError);
    const e = err as RcdError;
    expect(e.code).toBe('invalid_content');
    const d = e.details as { line: number; column: number; reason: string };
    return { ...d, message: e.message };
  }
  throw new Error(`expected ${JSON.stringify(text)} to be refused`);
}

describe('stripComments', () => {
  it.each([
    ['line comment', '{"a":1} // done', '{"a":1}        '],
    ['block comment', '{/* x */"a":1}', '{       "a":1}'],
    ['block comment keeps line breaks', '{/* a\nb */"a":1}', '{    \n    "a":1}'],
    ['CRLF after a line comment', '{"a":1// x\r\n}', '{"a":1    \r\n}'],
    ['marker inside a string stays', '{"url":"http://x/*y*/"}', '{"url":"http://x/*y*/"}'],
    ['escaped quote inside a string', '{"a":"\\"//"}//c', '{"a":"\\"//"}   '],
    ['lone slash is left for the validator', '{"a":1/2}', '{"a":1/2}'],
    ['no slash at all: same string', '{"a":[1,2]}', '{"a":[1,2]}'],
    ['leading BOM becomes a space', '\ufeff{"a":1}', ' {"a":1}'],
    ['comment containing a quote', '{"a":1 /* " */, "b":2}', '{"a":1        , "b":2}'],
  ])('%s', (_name, input, expected) => {
    const out = stripComments(input);
    expect(out).toBe(expected);
    expect(out.length).toBe(input.length);
  });

  it('refuses an unterminated block comment with its position', () => {
    const p = problemOf('{\n  "a": 1 /* never closed\n}');
    expect(p).toMatchObject({ line: 2, column: 10, reason: 'unterminated block comment' });
  });
});

describe('compileContent', () => {
  it('minifies, keeps comment markers inside strings, and hashes the minified text', () => {
    const text = '// settings\n{\n  "url": "https://example.com/a//b", /* inline */ "n": [1, 2.5e3, -0]\n}\n';
    const c = compileContent(text);
    expect(c.minified).toBe('{"url":"https://example.com/a//b","n":[1,2500,0]}');
    expect(c.value).toEqual({ url: 'https://example.com/a//b', n: [1, 2500, -0] });
    expect(c.hash).toBe(contentHash(c.minified));
    expect(c.hash).toMatch(/^[0-9a-f]{32}$/);
  });

  it('a comment-only or whitespace-only edit keeps the hash; a value edit changes it', () => {
    const a = compileContent('{"level": 3, "name": "x"}');
    const b = compileContent('{\n  // the level\n  "level": 3, /* name */ "name": "x"\n}');
    const c = compileContent('{"level": 4, "name": "x"}');
    expect(b.hash).toBe(a.hash);
    expect(c.hash).not.toBe(a.hash);
  });

  it('accepts every JSON value at the root', () => {
    for (const t of ['null', '0', '"s"', '[]', '{}', 'true', ' [1] ']) expect(compileContent(t).minified).toBe(JSON.stringify(JSON.parse(t)));
  });

  it('keeps __proto__ as a plain member', () => {
    const c = compileContent('{"__proto__": {"polluted": true}}');
    expect(c.minified).toBe('{"__proto__":{"polluted":true}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['trailing comma in an object', '{\n  "a": 1,\n}', 3, 1, "trailing comma before '}'"],
    ['trailing comma in an array', '[1,\n 2,\n]', 3, 1, "trailing comma before ']'"],
    ['missing comma', '{\n  "a": 1\n  "b": 2\n}', 3, 3, "unexpected '\"', expected ',' or '}'"],
    ['single quotes', "{'a': 1}", 1, 2, 'expected a double-quoted property name'],
    ['unquoted key', '{\n  a: 1}', 2, 3, 'expected a double-quoted property name'],
    ['missing colon', '{"a" 1}', 1, 6, "expected ':'"],
    ['unterminated string', '{"a": "abc', 1, 7, 'unterminated string'],
    ['line break in a string', '{"a": "ab\ncd"}', 1, 10, 'unescaped line break'],
    ['bad escape', '["\\x"]', 1, 3, "invalid escape '\\x'"],
    ['bad unicode escape', '["\\u12G4"]', 1, 3, 'invalid \\u escape'],
    ['leading zero', '[01]', 1, 3, "unexpected '1'"],
    ['bare minus', '[-]', 1, 3, "expected a digit after '-'"],
    ['dot without digits', '[1.]', 1, 4, "expected a digit after '.'"],
    ['bad exponent', '[1e+]', 1, 5, 'expected a digit in the exponent'],
    ['NaN', '{"a": NaN}', 1, 7, "unexpected 'N', expected a value"],
    ['two roots', '{} {}', 1, 4, 'after the end of the JSON value'],
    ['empty text', '', 1, 1, 'unexpected end of input, expected a value'],
    ['comments only', '// nothing\n/* here */', 2, 11, 'unexpected end of input'],
    ['unclosed object', '{"a": [1, 2]', 1, 13, "expected ',' or '}'"],
    ['lone slash', '{"a": 1/2}', 1, 8, "unexpected '/'"],
    ['error after a comment spanning lines', '/* a\n b\n c */ {"a": tru}', 3, 13, "unexpected 't', expected a value"],
    ['column counts characters, not UTF-16 units', '{"😀😀": 1,,}', 1, 10, "unexpected ',', expected a double-quoted property name"],
    ['CRLF line endings', '{\r\n"a": 1,\r\n}', 3, 1, 'trailing comma'],
    ['control character outside strings', '{"a":\u00011}', 1, 6, 'U+0001'],
  ])('%s: names line and column of the original text', (_name, text, line, column, reason) => {
    const p = problemOf(text);
    expect({ line: p.line, column: p.column }).toEqual({ line, column });
    expect(p.reason).toContain(reason);
    expect(p.message).toContain(`line ${line}, column ${column}`);
  });

  it('a deeply nested invalid document is located without overflowing the stack', () => {
    const text = '['.repeat(200_000) + '}';
    const p = problemOf(text);
    expect(p).toMatchObject({ line: 1, column: 200_001 });
  });
});

describe('locateJsonError agrees with JSON.parse', () => {
  // A fixed-seed fuzz: random mutations of valid documents; the scanner must call a text valid
  // exactly when JSON.parse accepts it (so every refusal gets a position).
  it('on 5000 mutated documents', () => {
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const bases = [
      '{"a":[1,2,{"b":"x\\"y"}],"c":null,"d":-1.5e-3,"e":true,"f":"\\u00e9"}',
      '[[],{},"",0,1e5,false,{"k":[{"z":"//"}]}]',
      '{"nested":{"deep":{"deeper":[1,[2,[3]]]}}}',
    ];
    const alphabet = ['{', '}', '[', ']', ',', ':', '"', '\\', '1', '0', '-', '.', 'e', ' ', 'n', 't', '\n', 'u', '+', 'x'];
    for (let i = 0; i < 5000; i++) {
      let s = bases[rand(bases.length)]!;
      const edits = 1 + rand(3);
      for (let k = 0; k < edits; k++) {
        const at = rand(s.length + 1);
        const op = rand(3);
        const ch = alphabet[rand(alphabet.length)]!;
        if (op === 0) s = s.slice(0, at) + ch + s.slice(at);
        else if (op === 1) s = s.slice(0, at) + s.slice(at + 1);
        else s = s.slice(0, at) + ch + s.slice(at + 1);
      }
      let valid = true;
      try {
        JSON.parse(s);
      } catch {
        valid = false;
      }
      const found = locateJsonError(s);
      if (valid !== (found === null)) throw new Error(`disagreement on ${JSON.stringify(s)}: ${JSON.stringify(found)}`);
    }
  });
});

describe('lineColumn', () => {
  it('counts LF, CRLF and lone CR as one line break each', () => {
    expect(lineColumn('a\nb\r\nc\rd', 7)).toEqual({ line: 4, column: 1 });
    expect(lineColumn('ab', 1)).toEqual({ line: 1, column: 2 });
  });
});

describe('content limits', () => {
  /** `levels` arrays around 0, as text. */
  const nestedText = (levels: number): string => '['.repeat(levels) + '0' + ']'.repeat(levels);
  const limited = (l: Partial<ContentLimits>, fn: () => void): void => {
    setContentLimits({ ...DEFAULT_CONTENT_LIMITS, ...l });
    try {
      fn();
    } finally {
      setContentLimits(DEFAULT_CONTENT_LIMITS);
    }
  };
  const codeOf = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      return err instanceof RcdError ? err.code : String(err);
    }
    return 'none';
  };

  it('a text nested past the depth limit names the first bracket past it', () => {
    expect(() => compileContent(nestedText(DEFAULT_CONTENT_LIMITS.maxDepth))).not.toThrow();
    const p = problemOf('{\n  "s": "[[[[",\n  "a": ' + nestedText(200_000) + '}');
    expect(p).toMatchObject({ line: 3, column: 8 + DEFAULT_CONTENT_LIMITS.maxDepth - 1 });
    expect(p.reason).toContain('nested deeper than');
  });

  it('a text over --max-content-bytes (UTF-8 bytes) is refused', () => {
    limited({ maxBytes: 10 }, () => {
      expect(() => compileContent('"12345678"')).not.toThrow();
      expect(codeOf(() => compileContent('"1234567é"'))).toBe('invalid_content');
    });
  });

  it('indentation is what JSON.stringify(value, null, 2) adds to the minified text', () => {
    const values: unknown[] = [
      0,
      'x',
      [],
      {},
      [1, [2, [3, []]], {}],
      { a: { b: [1, { c: null }], d: {} }, 'é': 'ü', e: [[[]]] },
      JSON.parse('{"__proto__":[1,{"x":[2]}]}'),
    ];
    for (const value of values) {
      expect(JSON.stringify(value).length + indentation(value, 0)).toBe(JSON.stringify(value, null, 2).length);
    }
  });

  it('jsonContentText: the 2-space text, or a refusal before it is made (depth, bytes)', () => {
    expect(jsonContentText({ a: [1] })).toBe(JSON.stringify({ a: [1] }, null, 2));
    let deep: unknown = 0;
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(codeOf(() => jsonContentText(deep))).toBe('invalid_content');
    const wide = [new Array<number>(100).fill(0)];
    const size = JSON.stringify(wide, null, 2).length;
    limited({ maxBytes: size }, () => expect(jsonContentText(wide)).toHaveLength(size));
    limited({ maxBytes: size - 1 }, () => expect(codeOf(() => jsonContentText(wide))).toBe('invalid_content'));
  });

  it('a write budget refuses the text that takes the sum past --max-write-bytes', () => {
    limited({ maxWriteBytes: 10 }, () => {
      const budget = new WriteBudget();
      budget.take('12345');
      budget.take('67890');
      expect(codeOf(() => budget.take('x'))).toBe('invalid_content');
    });
  });

  it('a mapping may nest the content limit and its frame', () => {
    limited({ maxDepth: 4 }, () => {
      let value: unknown = 0;
      for (let i = 0; i < 4 + MAPPING_FRAME_DEPTH - 1; i++) value = [value];
      expect(() => checkMappingDepth({ v: value })).not.toThrow();
      expect(codeOf(() => checkMappingDepth({ v: [value] }))).toBe('invalid_mapping');
    });
  });
});
