import { describe, expect, it } from 'vitest';
import { RcdError } from '../../../src/runtime/errors.js';
import { checkPlainQuery, compiledCombineQuery, parseCombineQuery, wrappedKind } from '../../../src/delivery/query.js';
import { JobKind } from '../../../src/pool/protocol.js';

/** The query string of a combine: c as the JSON text of `ids`, URL-encoded, then `rest`. */
function combine(ids: unknown, rest = ''): string {
  return 'c=' + encodeURIComponent(JSON.stringify(ids)) + rest;
}

/** Runs `fn`, expecting an RcdError invalid_query (status 400). */
function refused(fn: () => unknown): void {
  let caught: unknown = null;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(RcdError);
  expect((caught as RcdError).code).toBe('invalid_query');
  expect((caught as RcdError).status).toBe(400);
}

describe('wrappedKind (endpoint 1)', () => {
  it.each([
    ['', JobKind.Wrapped],
    ['responseType=serialized', JobKind.Serialized],
    ['other=1&responseType=serialized&more', JobKind.Serialized],
    ['responseType%3Dserialized', JobKind.Wrapped],
    // Unknown parameters are ignored on every endpoint.
    ['foo=bar', JobKind.Wrapped],
    ['dynamic=true', JobKind.Wrapped],
    ['c=%5B%22a%22%5D', JobKind.Wrapped],
  ])('%j gives kind %i', (query, kind) => {
    expect(wrappedKind(query)).toBe(kind);
  });

  it.each(['responseType=Serialized', 'responseType=SERIALIZED', 'responseType=', 'responseType', 'responseType=json', 'responseType=serialized%20', 'x=1&responseType=plain'])(
    '%j is invalid_query (case sensitive, empty refused)',
    (query) => refused(() => wrappedKind(query)),
  );

  it('percent-encoding of the value is decoded before comparing', () => {
    expect(wrappedKind('responseType=%73erialized')).toBe(JobKind.Serialized);
    expect(wrappedKind('response%54ype=serialized')).toBe(JobKind.Serialized);
  });
});

describe('checkPlainQuery (endpoint 2)', () => {
  it.each(['', 'foo=1', 'dynamic=true', 'c=[]', 'responsetype=serialized'])('%j is accepted', (query) => {
    expect(() => checkPlainQuery(query)).not.toThrow();
  });

  it.each(['responseType=serialized', 'responseType=', 'responseType', 'a=1&responseType=x'])('%j is invalid_query: responseType applies to /dynamic only', (query) =>
    refused(() => checkPlainQuery(query)),
  );
});

describe('parseCombineQuery', () => {
  it('keeps the ids as written, in order', () => {
    expect(parseCombineQuery(combine(['b', 'A', 'Straße', '日本', '😀']), 100)).toEqual({
      ids: ['b', 'A', 'Straße', '日本', '😀'],
      kind: JobKind.Plain,
    });
  });

  it('drops exact duplicates, the first occurrence keeping its place; other spellings stay separate', () => {
    expect(parseCombineQuery(combine(['x', 'y', 'x', 'X', 'y', 'z', 'x']), 100).ids).toEqual(['x', 'y', 'X', 'z']);
    // Counted before duplicates are removed: the limit is on what the caller sent.
    refused(() => parseCombineQuery(combine(['a', 'a', 'a']), 2));
  });

  it.each([
    ['', JobKind.Plain],
    ['&dynamic=false', JobKind.Plain],
    ['&dynamic=true', JobKind.Wrapped],
    ['&dynamic=true&responseType=serialized', JobKind.Serialized],
    ['&responseType=serialized&dynamic=true', JobKind.Serialized],
    ['&dynamic=true&other=1', JobKind.Wrapped],
  ])('options %j give kind %i', (rest, kind) => {
    expect(parseCombineQuery(combine(['a']) + rest, 100).kind).toBe(kind);
  });

  it('c may come after the options and may be written without percent-encoding of JSON punctuation', () => {
    expect(parseCombineQuery('dynamic=true&c=["a","b"]', 100)).toEqual({ ids: ['a', 'b'], kind: JobKind.Wrapped });
  });

  it('at most maxIds ids', () => {
    const ids = Array.from({ length: 100 }, (_v, i) => `id-${i}`);
    expect(parseCombineQuery(combine(ids), 100).ids).toEqual(ids);
    refused(() => parseCombineQuery(combine([...ids, 'one-more']), 100));
    expect(parseCombineQuery(combine(['a', 'b', 'c']), 3).ids).toHaveLength(3);
    refused(() => parseCombineQuery(combine(['a', 'b', 'c', 'd']), 3));
    expect(parseCombineQuery(combine(['a']), 1).ids).toEqual(['a']);
    refused(() => parseCombineQuery(combine(['a', 'b']), 1));
  });

  it('ids with lone surrogates are refused, well-formed astral characters are not', () => {
    refused(() => parseCombineQuery('c=' + encodeURIComponent('["StoreLayout","\\ud800"]'), 100));
    refused(() => parseCombineQuery('c=' + encodeURIComponent('["\\udc00"]'), 100));
    refused(() => parseCombineQuery('c=' + encodeURIComponent('["a\\ud83d"]'), 100));
    refused(() => parseCombineQuery('c=' + encodeURIComponent('["\\ude00\\ud83d"]'), 100));
    // The pair in the right order is one character, U+1F600.
    expect(parseCombineQuery('c=' + encodeURIComponent('["\\ud83d\\ude00"]'), 100).ids).toEqual(['😀']);
  });

  it.each([
    ['c missing', ''],
    ['c missing, other parameters present', 'dynamic=true&ids=["a"]'],
    ['c empty', 'c='],
    ['c not JSON', 'c=a,b'],
    ['c truncated JSON', 'c=' + encodeURIComponent('["a"')],
    ['c a string', combine('a')],
    ['c an object', combine({ 0: 'a' })],
    ['c null', combine(null)],
    ['c a number', combine(1)],
    ['c an empty array', combine([])],
    ['an empty id', combine(['a', ''])],
    ['a number id', combine(['a', 1])],
    ['a null id', combine([null])],
    ['a nested array id', combine([['a']])],
    ['an object id', combine([{ id: 'a' }])],
    ['dynamic=TRUE', combine(['a'], '&dynamic=TRUE')],
    ['dynamic=1', combine(['a'], '&dynamic=1')],
    ['dynamic empty', combine(['a'], '&dynamic=')],
    ['dynamic without value', combine(['a'], '&dynamic')],
    ['responseType without dynamic', combine(['a'], '&responseType=serialized')],
    ['responseType with dynamic=false', combine(['a'], '&dynamic=false&responseType=serialized')],
    ['responseType=Serialized', combine(['a'], '&dynamic=true&responseType=Serialized')],
    ['responseType empty', combine(['a'], '&dynamic=true&responseType=')],
  ])('%s: invalid_query', (_name, query) => refused(() => parseCombineQuery(query, 100)));
});

describe('compiledCombineQuery', () => {
  it('prepares each id once: lookup key, tag part and both JSON keys as UTF-8', () => {
    const q = compiledCombineQuery(combine(['Straße', 'a"b', 'x'], '&dynamic=true'), 100);
    expect(q.ids).toEqual(['Straße', 'a"b', 'x']);
    expect(q.kind).toBe(JobKind.Wrapped);
    expect(q.entries.map((e) => e.lookup)).toEqual(['strasse', 'a"b', 'x']);
    expect(q.entries[0]!.tagPrefix).toBe('|6:Straße=');
    expect(q.entries[1]!.firstKey.toString('utf8')).toBe('{"a\\"b":');
    expect(q.entries[1]!.nextKey.toString('utf8')).toBe(',"a\\"b":');
    expect(JSON.parse(q.entries[0]!.firstKey.toString('utf8') + '1}')).toEqual({ Straße: 1 });
  });

  it('answers a repeated query from its memo, and parses again under another id limit', () => {
    const query = combine(['m1', 'm2', 'm1']);
    const first = compiledCombineQuery(query, 100);
    expect(compiledCombineQuery(query, 100)).toBe(first);
    // Three ids were sent: under a limit of 2 the same query is refused, memo or not.
    refused(() => compiledCombineQuery(query, 2));
  });

  it('keeps no invalid query: each use is refused again', () => {
    for (let i = 0; i < 2; i++) refused(() => compiledCombineQuery('c=not-json', 100));
  });
});
