import { describe, expect, it } from 'vitest';
import { applyPatchToValue, compilePatch, PATCH_FAILED, type CompiledPatch } from '../../../../src/mapping/patch/patch.js';
import type { MappingProblem } from '../../../../src/mapping/problems.js';

function patch(raw: unknown): CompiledPatch {
  const problems: MappingProblem[] = [];
  const compiled = compilePatch(raw, 'rules[0].patch', 0, problems);
  expect(problems).toEqual([]);
  return compiled as CompiledPatch;
}

/** Applies and normalizes to plain JSON (copies are null-prototype objects). */
function apply(doc: unknown, raw: unknown): unknown {
  const out = applyPatchToValue(doc, patch(raw), null);
  return out === PATCH_FAILED ? 'FAILED' : (JSON.parse(JSON.stringify(out)) as unknown);
}

describe('RFC 7396 merge patch', () => {
  const cases: [string, unknown, unknown, unknown][] = [
    ['replaces a member', { a: 'b' }, { a: 'c' }, { a: 'c' }],
    ['adds a member', { a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    ['null deletes', { a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    ['null on a missing member is a no-op', { a: 1 }, { z: null }, { a: 1 }],
    ['arrays replace, never merge', { a: [1, 2, 3] }, { a: [4] }, { a: [4] }],
    ['nested merge', { a: { b: 1, c: 2 } }, { a: { b: 3 } }, { a: { b: 3, c: 2 } }],
    ['nested delete', { a: { b: 1, c: 2 } }, { a: { c: null } }, { a: { b: 1 } }],
    ['object replaces a scalar', { a: 1 }, { a: { b: 2 } }, { a: { b: 2 } }],
    ['new subtree has its nulls stripped', {}, { a: { b: null, c: 1 } }, { a: { c: 1 } }],
    ['scalar replaces an object', { a: { b: 1 } }, { a: 5 }, { a: 5 }],
    ['root that is not an object becomes one', [1, 2], { a: 1 }, { a: 1 }],
    ['empty patch changes nothing', { a: 1 }, {}, { a: 1 }],
  ];
  it.each(cases)('%s', (_name, doc, raw, expected) => {
    expect(apply(doc, raw)).toEqual(expected);
  });
});

describe('RFC 6902 JSON Patch', () => {
  const cases: [string, unknown, unknown, unknown][] = [
    ['add member', { a: 1 }, [{ op: 'add', path: '/b', value: 2 }], { a: 1, b: 2 }],
    ['add replaces an existing member', { a: 1 }, [{ op: 'add', path: '/a', value: 2 }], { a: 2 }],
    ['add inserts into an array', { a: [1, 3] }, [{ op: 'add', path: '/a/1', value: 2 }], { a: [1, 2, 3] }],
    ['add appends with -', { a: [1] }, [{ op: 'add', path: '/a/-', value: 2 }], { a: [1, 2] }],
    ['add at array length', { a: [1] }, [{ op: 'add', path: '/a/1', value: 2 }], { a: [1, 2] }],
    ['add past the end fails', { a: [1] }, [{ op: 'add', path: '/a/3', value: 2 }], 'FAILED'],
    ['add with a missing parent fails', { a: 1 }, [{ op: 'add', path: '/x/y', value: 2 }], 'FAILED'],
    ['add at the root replaces the document', { a: 1 }, [{ op: 'add', path: '', value: [1] }], [1]],
    ['remove member', { a: 1, b: 2 }, [{ op: 'remove', path: '/a' }], { b: 2 }],
    ['remove array element', { a: [1, 2, 3] }, [{ op: 'remove', path: '/a/1' }], { a: [1, 3] }],
    ['remove missing fails', { a: 1 }, [{ op: 'remove', path: '/b' }], 'FAILED'],
    ['remove an inherited name fails', { a: 1 }, [{ op: 'remove', path: '/toString' }], 'FAILED'],
    ['replace member', { a: 1 }, [{ op: 'replace', path: '/a', value: { x: 1 } }], { a: { x: 1 } }],
    ['replace array element', { a: [1, 2] }, [{ op: 'replace', path: '/a/0', value: 9 }], { a: [9, 2] }],
    ['replace missing fails', { a: 1 }, [{ op: 'replace', path: '/b', value: 1 }], 'FAILED'],
    ['replace with - fails', { a: [1] }, [{ op: 'replace', path: '/a/-', value: 1 }], 'FAILED'],
    ['leading zero index fails', { a: [1, 2] }, [{ op: 'replace', path: '/a/01', value: 1 }], 'FAILED'],
    ['move member', { a: { b: 1 }, c: {} }, [{ op: 'move', from: '/a/b', path: '/c/d' }], { a: {}, c: { d: 1 } }],
    ['move array element', { a: [1, 2, 3] }, [{ op: 'move', from: '/a/0', path: '/a/2' }], { a: [2, 3, 1] }],
    ['move onto itself', { a: 1 }, [{ op: 'move', from: '/a', path: '/a' }], { a: 1 }],
    ['move from missing fails', { a: 1 }, [{ op: 'move', from: '/b', path: '/c' }], 'FAILED'],
    ['copy member', { a: { b: [1] } }, [{ op: 'copy', from: '/a/b', path: '/c' }], { a: { b: [1] }, c: [1] }],
    ['copy then change the copy only', { a: { b: 1 } }, [{ op: 'copy', from: '/a', path: '/c' }, { op: 'replace', path: '/c/b', value: 2 }], { a: { b: 1 }, c: { b: 2 } }],
    ['test success', { a: { b: [1, { c: 2 }] } }, [{ op: 'test', path: '/a', value: { b: [1, { c: 2 }] } }], { a: { b: [1, { c: 2 }] } }],
    ['test compares objects regardless of key order', { a: { x: 1, y: 2 } }, [{ op: 'test', path: '/a', value: { y: 2, x: 1 } }], { a: { x: 1, y: 2 } }],
    ['test failure drops the whole patch', { a: 1 }, [{ op: 'add', path: '/b', value: 1 }, { op: 'test', path: '/a', value: 2 }], 'FAILED'],
    ['test on missing fails', { a: 1 }, [{ op: 'test', path: '/b', value: null }], 'FAILED'],
    ['escaped pointer tokens', { 'a/b': 1, 'c~d': 2 }, [{ op: 'replace', path: '/a~1b', value: 3 }, { op: 'remove', path: '/c~0d' }], { 'a/b': 3 }],
    ['copy of a value built by the same patch stays independent', {}, [{ op: 'add', path: '/x', value: {} }, { op: 'copy', from: '/x', path: '/x/y' }, { op: 'copy', from: '/x', path: '/x/y/z' }], { x: { y: { z: { y: {} } } } }],
    ['operations apply in order', {}, [{ op: 'add', path: '/a', value: {} }, { op: 'add', path: '/a/b', value: 1 }], { a: { b: 1 } }],
  ];
  it.each(cases)('%s', (_name, doc, raw, expected) => {
    expect(apply(doc, raw)).toEqual(expected);
  });

  it('never mutates the document or the patch values', () => {
    const doc = { a: { b: [1, 2] }, c: 1 };
    const before = JSON.stringify(doc);
    const raw = [{ op: 'add', path: '/x', value: { y: [1] } }, { op: 'add', path: '/x/y/-', value: 2 }, { op: 'remove', path: '/a/b/0' }];
    const compiled = patch(raw);
    applyPatchToValue(doc, compiled, null);
    applyPatchToValue(doc, compiled, null);
    expect(JSON.stringify(doc)).toBe(before);
    expect(raw[0]?.value).toEqual({ y: [1] });
    expect(apply(doc, raw)).toEqual({ a: { b: [2] }, c: 1, x: { y: [1, 2] } });
  });

  it('reports why a patch does not apply', () => {
    const failure = [''];
    expect(applyPatchToValue({ a: 1 }, patch([{ op: 'remove', path: '/zz' }]), failure)).toBe(PATCH_FAILED);
    expect(failure[0]).toBe('operation 0 (remove /zz) path does not exist');
  });
});

describe('patch validation', () => {
  const cases: [string, unknown, string][] = [
    ['not an object or array', 'x', 'JSON Merge Patch object or a JSON Patch array'],
    ['unknown op', [{ op: 'merge', path: '/a' }], 'op must be one of'],
    ['bad pointer', [{ op: 'add', path: 'a', value: 1 }], 'must start with "/"'],
    ['bad escape', [{ op: 'add', path: '/a~2', value: 1 }], 'not followed by 0 or 1'],
    ['missing value', [{ op: 'add', path: '/a' }], 'add needs a value'],
    ['missing from', [{ op: 'copy', path: '/a' }], 'must be a JSON Pointer string'],
    ['remove the document', [{ op: 'remove', path: '' }], 'cannot remove the whole document'],
    ['move into own child', [{ op: 'move', from: '/a', path: '/a/b' }], 'into one of its own children'],
    ['__proto__ in a merge patch', JSON.parse('{"__proto__":{"polluted":1}}'), 'key "__proto__" is not allowed'],
    ['constructor in a merge patch', { constructor: { prototype: { polluted: 1 } } }, 'key "constructor" is not allowed'],
    ['__proto__ in a pointer', [{ op: 'add', path: '/__proto__/polluted', value: 1 }], 'key "__proto__" is not allowed'],
    ['prototype in a value', [{ op: 'add', path: '/a', value: { prototype: 1 } }], 'key "prototype" is not allowed'],
  ];
  it.each(cases)('%s', (_name, raw, reason) => {
    const problems: MappingProblem[] = [];
    expect(compilePatch(raw, 'rules[3].patch', 3, problems)).toBeNull();
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]?.rule).toBe(3);
    expect(problems.map((p) => p.reason).join('\n')).toContain(reason);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('a base document holding a __proto__ key is patched as plain data', () => {
    const doc = JSON.parse('{"__proto__":{"x":1},"a":1}') as unknown;
    const out = applyPatchToValue(doc, patch({ a: 2 }), null) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBeNull();
    expect(Object.keys(out)).toEqual(['__proto__', 'a']);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});
