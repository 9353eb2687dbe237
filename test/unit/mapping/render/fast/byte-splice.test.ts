import { describe, expect, it } from 'vitest';
import { largeDoc, largeMapping } from '../../../../../bench/fixtures/generate.js';
import { objectIndex } from '../../../../../src/mapping/render/fast/byte-index.js';
import { composeEdits } from '../../../../../src/mapping/render/fast/edit-tree.js';
import {
  compileMapping,
  evaluateMapping,
  patchesThatApply,
  prepareDoc,
  renderSelection,
  renderSelectionInto,
  selectCombination,
  type CompiledMapping,
  type PreparedDoc,
  type Selection,
} from '../../../../../src/mapping/index.js';
import { compilePatch, type CompiledPatch } from '../../../../../src/mapping/patch/patch.js';
import type { MappingProblem } from '../../../../../src/mapping/problems.js';
import { createBaseDocument, patchesThatApply as patchesThatApplyCopying, renderPatched } from '../../../../../src/mapping/render/fallback/copy-on-write.js';
import { prng } from '../../../../../bench/fixtures/generate.js';
import { NO_VERSION } from '../../../../../src/shared/app-version.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function patch(raw: unknown): CompiledPatch {
  const problems: MappingProblem[] = [];
  const compiled = compilePatch(raw, 'p', 0, problems);
  expect(problems).toEqual([]);
  return compiled as CompiledPatch;
}

// ---------------------------------------------------------------- an independent reference

function clone(v: Json): Json {
  return JSON.parse(JSON.stringify(v)) as Json;
}

function isObj(v: unknown): v is { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 7396, written from the RFC's pseudo-code. */
function refMerge(target: Json | undefined, p: Json): Json {
  if (!isObj(p)) return clone(p);
  const out: { [key: string]: Json } = isObj(target) ? target : {};
  for (const key of Object.keys(p)) {
    if (p[key] === null) delete out[key];
    else out[key] = refMerge(Object.hasOwn(out, key) ? out[key] : undefined, p[key]!);
  }
  return out;
}

function refEqual(a: Json, b: Json): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => refEqual(x, b[i]!));
  }
  if (isObj(a) || isObj(b)) {
    if (!isObj(a) || !isObj(b)) return false;
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && refEqual(a[k]!, b[k]!));
  }
  return a === b;
}

/** RFC 6902 on a private copy; FAILED when the patch does not apply. */
const FAILED = Symbol('failed');
function refJsonPatch(doc: Json, ops: { op: string; path: string; from?: string; value?: Json }[]): Json | typeof FAILED {
  let root = clone(doc);
  const tokens = (p: string): string[] => (p === '' ? [] : p.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~')));
  const index = (arr: Json[], t: string, add: boolean): number => {
    if (add && t === '-') return arr.length;
    if (!/^(0|[1-9][0-9]*)$/.test(t)) return -1;
    const i = Number(t);
    return i < arr.length || (add && i === arr.length) ? i : -1;
  };
  const get = (path: string[]): { ok: boolean; v: Json } => {
    let v: Json = root;
    for (const t of path) {
      if (Array.isArray(v)) {
        const i = index(v, t, false);
        if (i < 0) return { ok: false, v: null };
        v = v[i]!;
      } else if (isObj(v) && Object.hasOwn(v, t)) v = v[t]!;
      else return { ok: false, v: null };
    }
    return { ok: true, v };
  };
  const put = (path: string[], value: Json | undefined, mode: 'add' | 'replace' | 'remove'): boolean => {
    if (path.length === 0) {
      root = value as Json;
      return true;
    }
    const parent = get(path.slice(0, -1));
    if (!parent.ok) return false;
    const t = path[path.length - 1]!;
    if (Array.isArray(parent.v)) {
      const i = index(parent.v, t, mode === 'add');
      if (i < 0) return false;
      if (mode === 'add') parent.v.splice(i, 0, value as Json);
      else if (mode === 'remove') parent.v.splice(i, 1);
      else parent.v[i] = value as Json;
      return true;
    }
    if (!isObj(parent.v)) return false;
    if (mode !== 'add' && !Object.hasOwn(parent.v, t)) return false;
    if (mode === 'remove') delete parent.v[t];
    else parent.v[t] = value as Json;
    return true;
  };
  for (const op of ops) {
    const path = tokens(op.path);
    if (op.op === 'add' || op.op === 'replace') {
      if (!put(path, clone(op.value as Json), op.op)) return FAILED;
    } else if (op.op === 'remove') {
      if (!put(path, undefined, 'remove')) return FAILED;
    } else if (op.op === 'test') {
      const cur = get(path);
      if (!cur.ok || !refEqual(cur.v, op.value as Json)) return FAILED;
    } else {
      const from = tokens(op.from as string);
      const cur = get(from);
      if (!cur.ok) return FAILED;
      const value = clone(cur.v);
      if (op.op === 'move') {
        if (from.join('/') === path.join('/') && from.length === path.length) continue;
        if (!put(from, undefined, 'remove')) return FAILED;
      }
      if (!put(path, value, 'add')) return FAILED;
    }
  }
  return root;
}

function refApply(text: string, raws: unknown[]): { value: Json; applied: number[] } {
  let value = JSON.parse(text) as Json;
  const applied: number[] = [];
  for (const raw of raws) {
    if (Array.isArray(raw)) {
      const next = refJsonPatch(value, raw as { op: string; path: string }[]);
      applied.push(next === FAILED ? 0 : 1);
      if (next !== FAILED) value = next;
    } else {
      value = refMerge(value, raw as Json);
      applied.push(1);
    }
  }
  return { value, applied };
}

// ---------------------------------------------------------------- generators

// Non-ASCII, escaped ("a\"b", backslash, control character, slash and tilde for pointers) and
// array-index keys, which JavaScript orders first.
const KEYS = ['a', 'b', 'c', 'déjà', '日本', 'a"b', 'x\\y', 'nl\n', 's/t', 't~u', '0', '1', '10', '7', '4294967295', '01', 'emoji😀'];
const STRINGS = ['', 'plain', 'ünïcödé', '"quoted"', 'back\\slash', 'tab\t', '😀 astral', '\u2028'];

function pickKey(rnd: () => number): string {
  return KEYS[Math.floor(rnd() * KEYS.length)]!;
}

function randomScalar(rnd: () => number): Json {
  const s = rnd();
  if (s < 0.3) return Math.floor(rnd() * 2000) - 1000;
  if (s < 0.6) return STRINGS[Math.floor(rnd() * STRINGS.length)]!;
  if (s < 0.7) return null;
  if (s < 0.85) return rnd() < 0.5;
  return Math.round(rnd() * 1e6) / 1e3;
}

function randomValue(rnd: () => number, depth: number): Json {
  const r = rnd();
  if (depth > 3 || r < 0.35) return randomScalar(rnd);
  if (r < 0.55) {
    const arr: Json[] = [];
    const n = Math.floor(rnd() * 4);
    for (let i = 0; i < n; i++) arr.push(randomValue(rnd, depth + 1));
    return arr;
  }
  const obj: { [key: string]: Json } = {};
  const n = Math.floor(rnd() * 6);
  for (let i = 0; i < n; i++) obj[pickKey(rnd)] = randomValue(rnd, depth + 1);
  return obj;
}

function pointer(path: string[]): string {
  return path.map((t) => '/' + t.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

/** A random existing path (objects and arrays), sometimes extended by a key that does not exist. */
function randomPath(rnd: () => number, doc: Json, objectsOnly: boolean): string[] {
  const path: string[] = [];
  let node: Json = doc;
  for (;;) {
    if (rnd() < 0.25) break;
    if (Array.isArray(node)) {
      if (objectsOnly || node.length === 0) break;
      const i = Math.floor(rnd() * node.length);
      path.push(String(i));
      node = node[i]!;
    } else if (isObj(node)) {
      const keys = Object.keys(node);
      if (keys.length === 0 || rnd() < 0.15) {
        path.push(pickKey(rnd));
        break;
      }
      const k = keys[Math.floor(rnd() * keys.length)]!;
      path.push(k);
      node = node[k]!;
    } else {
      break;
    }
  }
  return path;
}

function valueAt(doc: Json, path: string[]): Json | undefined {
  let node: Json | undefined = doc;
  for (const t of path) {
    if (Array.isArray(node)) node = node[Number(t)];
    else if (isObj(node) && Object.hasOwn(node, t)) node = node[t];
    else return undefined;
  }
  return node;
}

/** A merge patch shaped after the document: nested merges on existing objects, deletes, replaces. */
function randomMerge(rnd: () => number, doc: Json | undefined, depth: number): { [key: string]: Json } {
  const out: { [key: string]: Json } = {};
  const keys = isObj(doc) ? Object.keys(doc) : [];
  const n = 1 + Math.floor(rnd() * 3);
  for (let i = 0; i < n; i++) {
    const key = keys.length > 0 && rnd() < 0.7 ? keys[Math.floor(rnd() * keys.length)]! : pickKey(rnd);
    const existing = isObj(doc) && Object.hasOwn(doc, key) ? doc[key] : undefined;
    const r = rnd();
    if (r < 0.2) out[key] = null;
    else if (r < 0.55 && depth < 4) out[key] = randomMerge(rnd, existing, depth + 1);
    else out[key] = randomValue(rnd, depth + 1);
  }
  return out;
}

function randomOps(rnd: () => number, doc: Json, fallback: boolean): unknown[] {
  const ops: unknown[] = [];
  const n = 1 + Math.floor(rnd() * 3);
  for (let i = 0; i < n; i++) {
    const kinds = fallback ? ['add', 'remove', 'replace', 'test', 'move', 'copy'] : ['add', 'remove', 'replace', 'test'];
    const kind = kinds[Math.floor(rnd() * kinds.length)];
    const path = randomPath(rnd, doc, !fallback);
    if (fallback && rnd() < 0.2 && Array.isArray(valueAt(doc, path))) path.push('-');
    if (kind === 'remove') {
      if (path.length > 0) ops.push({ op: kind, path: pointer(path) });
    } else if (kind === 'move' || kind === 'copy') {
      const from = randomPath(rnd, doc, false);
      if (kind === 'move' && pointer(path).startsWith(pointer(from) + '/')) continue;
      ops.push({ op: kind, from: pointer(from), path: pointer(path) });
    } else if (kind === 'test') {
      const current = valueAt(doc, path);
      ops.push({ op: kind, path: pointer(path), value: current !== undefined && rnd() < 0.7 ? current : randomValue(rnd, 2) });
    } else {
      ops.push({ op: kind, path: pointer(path), value: randomValue(rnd, 2) });
    }
  }
  return ops;
}

function randomDoc(rnd: () => number): Json {
  const doc: { [key: string]: Json } = {};
  const n = 1 + Math.floor(rnd() * 6);
  for (let i = 0; i < n; i++) doc[pickKey(rnd)] = randomValue(rnd, 0);
  if (rnd() < 0.3) doc.empty = {};
  if (rnd() < 0.3) doc.none = [];
  if (rnd() < 0.1) return [doc, 1] as Json;
  return doc;
}

function selectionOf(patches: CompiledPatch[], applied: Uint8Array | null): Selection {
  return { key: 'k', seg: '[]', patches, applied };
}


function renderBoth(doc: PreparedDoc, patches: CompiledPatch[], applied: Uint8Array | null): { bytes: string; text: string } {
  const selection = selectionOf(patches, applied);
  const sab = renderSelectionInto(doc, selection, '{"data":', ',"hash":"h","meta":{"uid":');
  return { bytes: Buffer.from(sab).toString('utf8'), text: renderSelection(doc, selection) };
}

// ---------------------------------------------------------------- tests

describe('byte splice renderer', () => {
  it('matches RFC 7396/6902 and the copy-on-write renderer byte for byte (4,000 random documents and patch sequences)', () => {
    const rnd = prng(20260517);
    const seen = { byteRenderer: 0, copyOnWrite: 0, jsonPatchFailed: 0, jsonPatchApplied: 0 };
    for (let n = 0; n < 4000; n++) {
      const value = randomDoc(rnd);
      const text = JSON.stringify(value);
      const raws: unknown[] = [];
      let current: Json = clone(value);
      const count = 1 + Math.floor(rnd() * 4);
      // One case in five includes operations only the copy-on-write renderer handles.
      const fallback = rnd() < 0.2;
      for (let i = 0; i < count; i++) {
        const raw = rnd() < 0.55 ? randomMerge(rnd, current, 0) : randomOps(rnd, current, fallback);
        raws.push(raw);
        current = refApply(JSON.stringify(current), [raw]).value;
      }
      const patches = raws.map(patch);
      const expected = refApply(text, raws);
      const label = `case ${n}: ${text} ${JSON.stringify(raws)}`;

      const doc = prepareDoc(text);
      if (composeEdits(doc, patches, null, null) === null) seen.copyOnWrite++;
      else seen.byteRenderer++;
      raws.forEach((raw, i) => {
        if (Array.isArray(raw)) seen[expected.applied[i] === 1 ? 'jsonPatchApplied' : 'jsonPatchFailed']++;
      });
      const flags = patchesThatApply(doc, patches);
      expect([...flags], label).toEqual(expected.applied);
      expect([...flags], label).toEqual([...patchesThatApplyCopying(createBaseDocument(text), patches)]);

      const old = renderPatched(createBaseDocument(text), patches, null, null);
      const { bytes, text: rendered } = renderBoth(doc, patches, null);
      expect(bytes.startsWith('{"data":') && bytes.endsWith(',"hash":"h","meta":{"uid":'), label).toBe(true);
      const data = bytes.slice('{"data":'.length, bytes.length - ',"hash":"h","meta":{"uid":'.length);
      expect(JSON.parse(data), label).toEqual(expected.value);
      // Same bytes as the copy-on-write renderer: same values and the same member order.
      expect(data, label).toBe(old);
      expect(rendered, label).toBe(old);
      // Rendering with the applicability flags (as selectCombination hands them over) gives the same.
      expect(renderBoth(doc, patches, flags).text, label).toBe(old);
    }
    // The generator exercises both renderers and JSON Patches that apply and that do not.
    expect(seen.byteRenderer).toBeGreaterThan(2500);
    expect(seen.copyOnWrite).toBeGreaterThan(300);
    expect(seen.jsonPatchFailed).toBeGreaterThan(500);
    expect(seen.jsonPatchApplied).toBeGreaterThan(500);
  });

  it.each([
    ['replace with a scalar, then merge: the merge builds a new object', '{"a":{"x":1},"b":2}', [{ a: 5 }, { a: { y: 1, z: null } }], '{"a":{"y":1},"b":2}'],
    ['delete, then merge: a new object, placed last', '{"a":{"x":1},"b":2}', [{ a: null }, { a: { y: 1 } }], '{"b":2,"a":{"y":1}}'],
    ['delete, then add again: placed last', '{"a":1,"b":2,"c":3}', [{ a: null }, [{ op: 'add', path: '/a', value: 0 }]], '{"b":2,"c":3,"a":0}'],
    ['replace keeps the place', '{"a":1,"b":2,"c":3}', [[{ op: 'replace', path: '/b', value: 'x' }]], '{"a":1,"b":"x","c":3}'],
    ['new array-index keys go among the base ones, ascending', '{"1":1,"5":5,"a":0}', [{ 3: 3, z: 1, 0: 0, 9: 9 }], '{"0":0,"1":1,"3":3,"5":5,"9":9,"a":0,"z":1}'],
    ['deleting every member leaves an empty object', '{"a":1,"b":{"c":2}}', [{ a: null, b: null }], '{}'],
    ['members added to an empty object', '{"e":{},"l":[]}', [{ e: { x: [] }, l: { y: {} } }], '{"e":{"x":[]},"l":{"y":{}}}'],
    ['merging into an array or a scalar replaces it with the patch, nulls removed', '{"l":[1],"s":"x"}', [{ l: { a: null, b: 1 }, s: { c: { d: null } } }], '{"l":{"b":1},"s":{"c":{}}}'],
    ['escaped and non-ASCII keys', '{"a\\"b":1,"日本":{"é":2}}', [{ 'a"b': 3, 日本: { é: null, ü: '😀' } }], '{"a\\"b":3,"日本":{"ü":"😀"}}'],
    ['a JSON Patch adds inside a value an earlier patch set', '{"a":1}', [{ n: { x: 1 } }, [{ op: 'add', path: '/n/y', value: 2 }, { op: 'remove', path: '/n/x' }]], '{"a":1,"n":{"y":2}}'],
    ['a failing test drops the whole JSON Patch', '{"a":1}', [[{ op: 'add', path: '/b', value: 1 }, { op: 'test', path: '/a', value: 2 }]], '{"a":1}'],
    ['test sees the earlier patches', '{"a":{"x":1}}', [{ a: { y: 2 } }, [{ op: 'test', path: '/a', value: { y: 2, x: 1 } }, { op: 'add', path: '/ok', value: true }]], '{"a":{"x":1,"y":2},"ok":true}'],
    ['remove of a missing member fails the JSON Patch', '{"a":1}', [[{ op: 'add', path: '/b', value: 1 }, { op: 'remove', path: '/c' }]], '{"a":1}'],
    ['the root replaced by a JSON Patch, then merged', '{"a":1}', [[{ op: 'replace', path: '', value: { b: 1 } }], { c: 2 }], '{"b":1,"c":2}'],
    ['fallback: array element operations', '{"a":[1,2],"b":{"c":1}}', [{ b: { d: 2 } }, [{ op: 'add', path: '/a/-', value: 3 }, { op: 'move', from: '/b/c', path: '/a/0' }]], '{"a":[1,1,2,3],"b":{"d":2}}'],
  ])('%s', (_name, text, raws, expected) => {
    const patches = (raws as unknown[]).map(patch);
    const { bytes, text: rendered } = renderBoth(prepareDoc(text), patches, null);
    expect(bytes).toBe('{"data":' + expected + ',"hash":"h","meta":{"uid":');
    expect(rendered).toBe(expected);
    expect(rendered).toBe(renderPatched(createBaseDocument(text), patches, null, null));
  });

  it('text that is not JSON.stringify output (whitespace, duplicate keys, unsorted index keys) renders correctly', () => {
    const cases: [string, unknown[]][] = [
      ['{ "a" : { "x" : 1 , "y" : [ 1 , 2 ] } , "b" : "é" }', [{ a: { x: 2, z: 3 } }, { b: null }]],
      ['{"a":1,"a":2,"b":{"c":1}}', [{ a: 3, b: { c: null } }]],
      ['{"b":1,"2":2,"1":1}', [{ 3: 3 }]],
    ];
    for (const [text, raws] of cases) {
      const patches = raws.map(patch);
      const { bytes, text: rendered } = renderBoth(prepareDoc(text), patches, null);
      const expected = refApply(text, raws).value;
      expect(JSON.parse(rendered)).toEqual(expected);
      expect(JSON.parse(bytes.slice(8, bytes.length - ',"hash":"h","meta":{"uid":'.length))).toEqual(expected);
    }
  });

  it('an unmutated selection is the base bytes between prefix and suffix', () => {
    const text = '{"a":"é"}';
    const sab = renderSelectionInto(prepareDoc(text), { key: '', seg: '[]', patches: [], applied: null }, '[', ']');
    expect(Buffer.from(sab).toString('utf8')).toBe('[' + text + ']');
  });

  it('renders from UTF-8 bytes the caller already holds (e.g. the revision\'s cached body)', () => {
    const text = '{"ü":{"x":1},"b":"日本"}';
    const held = Buffer.from(text, 'utf8');
    const doc = prepareDoc(text, held);
    expect(doc.bytes.buffer).toBe(held.buffer);
    const sab = renderSelectionInto(doc, selectionOf([patch({ ü: { y: 'é' } })], null), '', '');
    expect(Buffer.from(sab).toString('utf8')).toBe('{"ü":{"x":1,"y":"é"},"b":"日本"}');
  });
});

describe('a render-cache miss on the 512 KiB fixture', () => {
  const text = JSON.stringify(largeDoc());
  const mapping: CompiledMapping = compileMapping(largeMapping());

  function render(doc: PreparedDoc, p: Record<string, unknown>): string {
    const selection = selectCombination(doc, evaluateMapping(mapping, p, NO_VERSION, 0));
    const sab = renderSelectionInto(doc, selection, '{"data":', ',"hash":"h","meta":{"uid":');
    return Buffer.from(sab).toString('utf8');
  }

  it('indexes only the objects on the patched paths, never parses the content, and is exact', () => {
    const doc = prepareDoc(text);
    const out = render(doc, { tier: 'gold', flags: ['f0', 'f3'] });
    const expected = JSON.parse(text) as { balance: Record<string, unknown>; levels: Record<string, Record<string, unknown>> };
    expected.balance.goldBonus = 1.25;
    expected.balance.lootTable = 'a';
    expected.levels.L0002!.boss = 'event-boss-0';
    expected.levels.L0005!.boss = 'event-boss-3';
    expect(out).toBe('{"data":' + JSON.stringify(expected) + ',"hash":"h","meta":{"uid":');

    // The root, balance, levels and the two patched levels: nothing else was scanned.
    const root = doc.rootStart;
    const levels = objectIndex(doc, root).valueStart[objectIndex(doc, root).keys.get('levels')!]!;
    const levelsIndex = objectIndex(doc, levels);
    const balance = objectIndex(doc, root).valueStart[objectIndex(doc, root).keys.get('balance')!]!;
    const level = (id: string): number => levelsIndex.valueStart[levelsIndex.keys.get(id)!]!;
    expect([...doc.objects.keys()].sort((a, b) => a - b)).toEqual([root, balance, levels, level('L0002'), level('L0005')].sort((a, b) => a - b));
    // The parsed value (and with it any copy of the 3,000-member levels object) was never built.
    expect(doc.parsed).toBe(false);

    // Further misses index only the newly patched level.
    render(doc, { flags: ['f13'] });
    expect(doc.objects.size).toBe(6);
    expect(doc.objects.has(level('L0015'))).toBe(true);
    expect(doc.parsed).toBe(false);
  });

  it('deciding which patches of a JSON Patch rule apply does not parse or copy the content either', () => {
    const doc = prepareDoc(text);
    const m = compileMapping({
      rules: [
        { segment: 'a', patch: [{ op: 'test', path: '/levels/L0001/boss', value: (JSON.parse(text) as { levels: Record<string, { boss: unknown }> }).levels.L0001!.boss }, { op: 'replace', path: '/levels/L0001/boss', value: 'x' }] },
        { segment: 'b', patch: [{ op: 'remove', path: '/levels/L9999' }] },
      ],
    });
    const selection = selectCombination(doc, evaluateMapping(m, {}, NO_VERSION, 0));
    expect(selection.seg).toBe('[{"n":"a","v":null}]');
    expect(doc.parsed).toBe(false);
    const out = JSON.parse(renderSelection(doc, selection)) as { levels: Record<string, { boss: string }> };
    expect(out.levels.L0001?.boss).toBe('x');
    expect(doc.parsed).toBe(false);
  });
});
