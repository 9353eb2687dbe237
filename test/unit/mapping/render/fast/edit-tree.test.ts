/**
 * The edit tree (edit-tree.ts) on its own: what composing patches builds, when it declines (null: the
 * copy-on-write renderer takes over), which patches it reports as applied, and that composing never
 * modifies a compiled patch. Whole-render agreement over random documents is byte-splice.test.ts's;
 * here the tree is checked directly, and rendered only for targeted sequences against a reference
 * that applies the patches to a JSON.parse'd object (docs/api.md "Member order" is JavaScript's).
 */
import { describe, expect, it } from 'vitest';
import { createByteBase, type ByteBase } from '../../../../../src/mapping/render/fast/byte-index.js';
import { renderEditsText } from '../../../../../src/mapping/render/fast/byte-splice.js';
import { EditKind, UNCHANGED, composeEdits, materialize, mergeValue, type Edit } from '../../../../../src/mapping/render/fast/edit-tree.js';
import { compilePatch, type CompiledPatch } from '../../../../../src/mapping/patch/patch.js';
import type { MappingProblem } from '../../../../../src/mapping/problems.js';

function patch(raw: unknown): CompiledPatch {
  const problems: MappingProblem[] = [];
  const compiled = compilePatch(raw, 'p', 0, problems);
  expect(problems).toEqual([]);
  return compiled!;
}

/** The tree as plain data: members in the tree's order, `moved` replaces marked. */
function show(edit: Edit): unknown {
  if (edit.kind === EditKind.Delete) return 'delete';
  if (edit.kind === EditKind.Replace) return edit.moved ? { movedTo: edit.value } : { set: edit.value };
  return [...edit.children!].map(([key, child]) => [key, show(child)]);
}

function compose(base: ByteBase, raws: unknown[], applied: Uint8Array | null = null): { root: Edit | null; appliedOut: number[] } {
  const out = new Uint8Array(raws.length);
  const root = composeEdits(base, raws.map(patch), applied, out);
  return { root, appliedOut: [...out] };
}

// ---------------------------------------------------------------- reference

type Obj = Record<string, unknown>;
const FAILED = Symbol('failed');

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function refMerge(target: unknown, p: unknown): unknown {
  if (!isObj(p)) return p;
  const out: Obj = isObj(target) ? target : {};
  for (const key of Object.keys(p)) {
    if (p[key] === null) delete out[key];
    else out[key] = refMerge(out[key], p[key]);
  }
  return out;
}

/** add/replace/remove/test on object members only (what the edit tree expresses). */
function refJsonPatch(doc: unknown, ops: { op: string; path: string; value?: unknown }[]): unknown {
  let root: unknown = JSON.parse(JSON.stringify(doc));
  for (const op of ops) {
    const tokens = op.path === '' ? [] : op.path.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (tokens.length === 0) {
      if (op.op === 'test') {
        if (JSON.stringify(root) !== JSON.stringify(op.value)) return FAILED;
        continue;
      }
      root = JSON.parse(JSON.stringify(op.value));
      continue;
    }
    let parent: unknown = root;
    for (const t of tokens.slice(0, -1)) {
      if (!isObj(parent) || !Object.hasOwn(parent, t)) return FAILED;
      parent = parent[t];
    }
    const last = tokens[tokens.length - 1]!;
    if (!isObj(parent)) return FAILED;
    const has = Object.hasOwn(parent, last);
    if (op.op === 'test') {
      // Values compared here have their members in the same order.
      if (!has || JSON.stringify(parent[last]) !== JSON.stringify(op.value)) return FAILED;
    } else if (op.op === 'remove') {
      if (!has) return FAILED;
      delete parent[last];
    } else {
      if (op.op === 'replace' && !has) return FAILED;
      parent[last] = JSON.parse(JSON.stringify(op.value));
    }
  }
  return root;
}

function reference(text: string, raws: unknown[]): { json: string; applied: number[] } {
  let value: unknown = JSON.parse(text);
  const applied: number[] = [];
  for (const raw of raws) {
    if (!Array.isArray(raw)) {
      value = refMerge(value, JSON.parse(JSON.stringify(raw)));
      applied.push(1);
      continue;
    }
    const next = refJsonPatch(value, raw as { op: string; path: string; value?: unknown }[]);
    applied.push(next === FAILED ? 0 : 1);
    if (next !== FAILED) value = next;
  }
  return { json: JSON.stringify(value), applied };
}

// ---------------------------------------------------------------- tests

describe('composeEdits: the tree', () => {
  it('no patch, or every patch skipped: the base unchanged (the shared UNCHANGED root)', () => {
    const base = createByteBase('{"a":1}');
    expect(composeEdits(base, [], null, null)).toBe(UNCHANGED);
    expect(compose(base, [{ a: 2 }, { b: 3 }], Uint8Array.of(0, 0)).root).toBe(UNCHANGED);
    expect(renderEditsText(base, UNCHANGED)).toBe('{"a":1}');
    expect(UNCHANGED.children!.size).toBe(0);
  });

  it('a merge patch becomes Replace, Delete and nested Merge nodes in the order its members come', () => {
    const { root } = compose(createByteBase('{"a":{"x":1},"b":2,"c":3}'), [{ c: 'new', b: null, a: { y: [1], x: null }, d: { e: {} } }]);
    expect(show(root!)).toEqual([
      ['c', { set: 'new' }],
      ['b', 'delete'],
      ['a', [['y', { set: [1] }], ['x', 'delete']]],
      ['d', [['e', []]]],
    ]);
  });

  it('later patches refine the same nodes: a merge into a replaced value becomes one new Replace', () => {
    const { root } = compose(createByteBase('{"a":{"x":1}}'), [{ a: { y: 1 } }, { a: { z: 2 } }, { b: 5 }, { b: { c: 1, d: null } }]);
    expect(show(root!)).toEqual([
      ['a', [['y', { set: 1 }], ['z', { set: 2 }]]],
      ['b', { set: { c: 1 } }],
    ]);
  });

  it('a member deleted and set again is marked moved, and stays moved through later edits', () => {
    const base = createByteBase('{"a":1,"b":2,"c":3}');
    const { root } = compose(base, [{ a: null }, [{ op: 'add', path: '/a', value: 5 }], { a: 6 }, [{ op: 'replace', path: '/a', value: 7 }]]);
    expect(show(root!)).toEqual([['a', { movedTo: 7 }]]);
    expect(renderEditsText(base, root!)).toBe('{"b":2,"c":3,"a":7}');
    // Never deleted: replaced in place.
    const inPlace = compose(base, [{ a: 6 }, [{ op: 'replace', path: '/a', value: 7 }]]).root!;
    expect(show(inPlace)).toEqual([['a', { set: 7 }]]);
    expect(renderEditsText(base, inPlace)).toBe('{"a":7,"b":2,"c":3}');
  });

  it('a JSON Patch applies whole or not at all: a failing operation leaves no trace of the earlier ones', () => {
    const base = createByteBase('{"a":1,"o":{"k":1}}');
    const { root, appliedOut } = compose(base, [
      { m: 1 },
      [
        { op: 'add', path: '/b', value: 2 },
        { op: 'remove', path: '/o/k' },
        { op: 'replace', path: '/m', value: 9 },
        { op: 'test', path: '/a', value: 'not 1' },
      ],
      [{ op: 'remove', path: '/missing' }],
      [{ op: 'replace', path: '/o/k', value: 2 }],
    ]);
    expect(appliedOut).toEqual([1, 0, 0, 1]);
    expect(show(root!)).toEqual([
      ['m', { set: 1 }],
      ['o', [['k', { set: 2 }]]],
    ]);
  });

  it('the applied flags given in skip patches exactly as if they were absent', () => {
    const base = createByteBase('{"a":1,"b":2}');
    const raws = [{ a: null }, { a: 3 }, [{ op: 'replace', path: '/b', value: 4 }]];
    const skipping = compose(base, raws, Uint8Array.of(0, 1, 1));
    expect(show(skipping.root!)).toEqual(show(compose(base, raws.slice(1)).root!));
    expect(skipping.appliedOut).toEqual([0, 1, 1]);
    expect(renderEditsText(base, skipping.root!)).toBe('{"a":3,"b":4}');
  });

  it('test sees the base with the edits so far: members deleted, merged over base objects, or added where the base has none', () => {
    const base = createByteBase('{"o":{"k":1,"d":2,"n":{"x":1}},"s":"x"}');
    const { appliedOut } = compose(base, [
      { o: { d: null, e: 3, n: { y: 2 } }, s: { t: { u: 1 } } },
      [{ op: 'test', path: '/o', value: { k: 1, n: { x: 1, y: 2 }, e: 3 } }],
      [{ op: 'test', path: '/o/d', value: 2 }],
      [{ op: 'test', path: '/s', value: { t: { u: 1 } } }],
      [{ op: 'test', path: '/s/t/u', value: 1 }],
      [{ op: 'test', path: '/o/n/x', value: 1 }],
      [{ op: 'test', path: '/o/n', value: { x: 1 } }],
    ]);
    expect(appliedOut).toEqual([1, 1, 0, 1, 1, 1, 0]);
  });

  it('operations inside a member that was deleted and set again do not see the old base members', () => {
    const base = createByteBase('{"a":{"x":1},"b":2}');
    const raws = [{ a: null }, { a: { y: 1 } }, [{ op: 'remove', path: '/a/x' }], [{ op: 'test', path: '/a', value: { y: 1 } }], [{ op: 'add', path: '/a/z', value: 0 }]];
    const { root, appliedOut } = compose(base, raws);
    expect(appliedOut).toEqual([1, 1, 0, 1, 1]);
    expect(renderEditsText(base, root!)).toBe(reference('{"a":{"x":1},"b":2}', raws).json);
    expect(renderEditsText(base, root!)).toBe('{"b":2,"a":{"y":1,"z":0}}');
  });

  it('a JSON Patch on a base that is not an object fails (skipped); a merge patch replaces it', () => {
    for (const text of ['1', '"s"', 'null', 'true']) {
      const base = createByteBase(text);
      const failed = compose(base, [[{ op: 'add', path: '/a', value: 1 }]]);
      expect(failed.appliedOut).toEqual([0]);
      expect(failed.root).toBe(UNCHANGED);
      const merged = compose(base, [{ a: { b: null, c: 1 } }]);
      expect(renderEditsText(base, merged.root!)).toBe('{"a":{"c":1}}');
    }
  });
});

describe('composeEdits declines (null) what the tree does not express', () => {
  it.each([
    ['an array element', '{"l":[1,2]}', [[{ op: 'replace', path: '/l/0', value: 5 }]]],
    ['appending to an array', '{"l":[1,2]}', [[{ op: 'add', path: '/l/-', value: 3 }]]],
    ['a path through an array', '{"l":[{"a":1}]}', [[{ op: 'remove', path: '/l/0/a' }]]],
    ['a test on an array element', '{"l":[1]}', [[{ op: 'test', path: '/l/0', value: 1 }]]],
    ['move', '{"a":1}', [[{ op: 'move', from: '/a', path: '/b' }]]],
    ['copy', '{"a":1}', [[{ op: 'copy', from: '/a', path: '/b' }]]],
    ['a JSON Patch on an array root', '[1,2]', [[{ op: 'add', path: '/0', value: 0 }]]],
    ['inside an array a merge patch put there', '{"a":1}', [{ n: [{ x: 1 }] }, [{ op: 'replace', path: '/n/0/x', value: 2 }]]],
    ['inside an array a JSON Patch put there', '{"a":1}', [[{ op: 'add', path: '/n', value: [1] }], [{ op: 'test', path: '/n/0', value: 1 }]]],
    ['members of an object whose text repeats a key', '{"a":{"k":1,"k":2}}', [[{ op: 'replace', path: '/a/k', value: 3 }]]],
    ['members of an object whose index keys are not first (not JSON.stringify order)', '{"b":1,"5":5}', [[{ op: 'add', path: '/5', value: 3 }]]],
  ])('%s', (_name, text, raws) => {
    const base = createByteBase(text);
    expect(composeEdits(base, (raws as unknown[]).map(patch), null, null)).toBeNull();
  });

  it('a patch the tree cannot express does not matter when the applied flags skip it', () => {
    const base = createByteBase('{"l":[1],"a":1}');
    const { root } = compose(base, [[{ op: 'move', from: '/l', path: '/m' }], { a: 2 }], Uint8Array.of(0, 1));
    expect(renderEditsText(base, root!)).toBe('{"l":[1],"a":2}');
  });
});

describe('composing never modifies a compiled patch (its values are shared by every request)', () => {
  it('edits inside a value a patch put there copy it', () => {
    const replaceN = patch([{ op: 'replace', path: '/n', value: { x: 1, deep: { y: 1 } } }]);
    const add = patch([
      { op: 'add', path: '/n/deep/z', value: 2 },
      { op: 'remove', path: '/n/x' },
    ]);
    const mergeN = patch({ n: { deep: { y: null } } });
    const base = createByteBase('{"n":0}');
    for (let round = 0; round < 2; round++) {
      const root = composeEdits(base, [replaceN, add, mergeN], null, null)!;
      expect(JSON.parse(renderEditsText(base, root)!)).toEqual({ n: { deep: { z: 2 } } });
    }
    expect(replaceN.ops![0]!.value).toEqual({ x: 1, deep: { y: 1 } });
    expect(mergeN.merge).toEqual({ n: { deep: { y: null } } });
    expect(JSON.parse(renderEditsText(base, composeEdits(base, [replaceN], null, null)!)!)).toEqual({ n: { x: 1, deep: { y: 1 } } });
  });

  it('a merge patch\'s objects are not reused as tree nodes that later patches change', () => {
    const first = patch({ o: { a: 1 } });
    const second = patch({ o: { b: 2 } });
    const base = createByteBase('{}');
    const both = composeEdits(base, [first, second], null, null)!;
    expect(renderEditsText(base, both)).toBe('{"o":{"a":1,"b":2}}');
    expect(first.merge).toEqual({ o: { a: 1 } });
    expect(renderEditsText(base, composeEdits(base, [first], null, null)!)).toBe('{"o":{"a":1}}');
  });
});

describe('rendered edit trees agree with patches applied to the parsed object', () => {
  it.each([
    ['delete then add through JSON Patch, then merge into it', '{"a":{"x":1},"b":2}', [[{ op: 'remove', path: '/a' }], [{ op: 'add', path: '/a', value: { y: 1 } }], { a: { z: 2 } }]],
    ['add then delete then add again: placed where the last add puts it', '{"a":1}', [{ b: 1, c: 2 }, { b: null }, [{ op: 'add', path: '/b', value: 3 }]]],
    ['members added in order over several patches', '{"z":0}', [{ c: 1 }, [{ op: 'add', path: '/a', value: 2 }], { b: 3 }, { c: 4 }]],
    ['array-index keys added and re-added go first, ascending', '{"5":5,"b":1}', [{ 7: 7, 2: 2 }, { 5: null }, [{ op: 'add', path: '/5', value: 'again' }]]],
    ['nested: a deleted member of a nested object re-added', '{"o":{"a":1,"b":2,"c":3}}', [{ o: { a: null } }, { o: { d: 4 } }, [{ op: 'add', path: '/o/a', value: 0 }]]],
    ['replace of a whole object, then a nested JSON Patch', '{"o":{"a":1},"p":1}', [{ o: 5 }, [{ op: 'replace', path: '/o', value: { q: { r: 1 } } }], [{ op: 'add', path: '/o/q/s', value: 2 }]]],
    ['root replaced by JSON Patch then edited', '{"a":1}', [[{ op: 'replace', path: '', value: { b: { c: 1 } } }], [{ op: 'remove', path: '/b/c' }], { d: 1 }]],
    ['a failed JSON Patch between merges', '{"a":1}', [{ b: 1 }, [{ op: 'replace', path: '/b', value: 2 }, { op: 'test', path: '/a', value: 2 }], { c: 1 }]],
    ['escaped pointer tokens', '{"a/b":1,"c~d":{"e":1}}', [[{ op: 'replace', path: '/a~1b', value: 2 }, { op: 'remove', path: '/c~0d/e' }, { op: 'add', path: '/c~0d/f', value: 'é' }]]],
    ['non-ASCII members deleted and re-added', '{"日本":1,"é":{"ü":2}}', [{ 日本: null }, { é: { ü: null, x: '😀' } }, [{ op: 'add', path: '/日本', value: 3 }]]],
  ])('%s', (_name, text, raws) => {
    const base = createByteBase(text);
    const expected = reference(text, raws);
    const { root, appliedOut } = compose(base, raws);
    expect(appliedOut).toEqual(expected.applied);
    expect(renderEditsText(base, root!)).toBe(expected.json);
  });
});

describe('mergeValue and materialize', () => {
  it('mergeValue is RFC 7396 on plain values and modifies neither argument', () => {
    const target = { a: 1, o: { x: 1, y: 2 }, l: [1] };
    const p = { a: null, o: { y: null, z: { w: null, v: 1 } }, l: { k: 1 }, n: 'new' };
    const targetCopy = JSON.stringify(target);
    const pCopy = JSON.stringify(p);
    expect(JSON.stringify(mergeValue(target, p))).toBe('{"o":{"x":1,"z":{"v":1}},"l":{"k":1},"n":"new"}');
    expect(JSON.stringify(target)).toBe(targetCopy);
    expect(JSON.stringify(p)).toBe(pCopy);
    expect(mergeValue({ a: 1 }, 5)).toBe(5);
    expect(mergeValue({ a: 1 }, [1])).toEqual([1]);
    expect(JSON.stringify(mergeValue(7, { a: { b: null } }))).toBe('{"a":{}}');
  });

  it('materialize: a Merge where the base has no object is the object of its set members, deletes dropped', () => {
    const { root } = compose(createByteBase('{}'), [{ n: { a: 1, b: { c: 2 }, d: 3 } }, { n: { d: null } }]);
    const n = root!.children!.get('n')!;
    expect(JSON.stringify(materialize(n))).toBe('{"a":1,"b":{"c":2}}');
  });
});
