import { describe, expect, it } from 'vitest';
import { applyPatchToValue, compilePatch, PATCH_FAILED, type CompiledPatch } from '../../../../../src/mapping/patch/patch.js';
import type { MappingProblem } from '../../../../../src/mapping/problems.js';
import { createBaseDocument, renderPatched } from '../../../../../src/mapping/render/fallback/copy-on-write.js';
import { prng } from '../../../../../bench/fixtures/generate.js';

function patch(raw: unknown): CompiledPatch {
  const problems: MappingProblem[] = [];
  const compiled = compilePatch(raw, 'p', 0, problems);
  expect(problems).toEqual([]);
  return compiled as CompiledPatch;
}

/** The reference: apply on the parsed value, serialize the whole result. */
function reference(text: string, patches: CompiledPatch[]): unknown {
  let value = JSON.parse(text) as unknown;
  for (const p of patches) {
    const next = applyPatchToValue(value, p, null);
    if (next !== PATCH_FAILED) value = next;
  }
  return JSON.parse(JSON.stringify(value)) as unknown;
}

function render(text: string, patches: CompiledPatch[]): string {
  return renderPatched(createBaseDocument(text), patches, null, null);
}

const KEYS = ['a', 'b', 'c', 'd', 'é', 'k"q', 'x\\y', '1', '10', 'weird key'];

function randomValue(rnd: () => number, depth: number): unknown {
  const r = rnd();
  if (depth > 3 || r < 0.3) {
    const s = rnd();
    if (s < 0.25) return Math.floor(rnd() * 1000) - 500;
    if (s < 0.5) return KEYS[Math.floor(rnd() * KEYS.length)] + ' \u2603 "q" \\ end';
    if (s < 0.6) return null;
    if (s < 0.7) return rnd() < 0.5;
    return rnd() * 10;
  }
  if (r < 0.6) {
    const arr: unknown[] = [];
    const n = Math.floor(rnd() * 5);
    for (let i = 0; i < n; i++) arr.push(randomValue(rnd, depth + 1));
    return arr;
  }
  const obj: Record<string, unknown> = {};
  const n = Math.floor(rnd() * 6);
  for (let i = 0; i < n; i++) obj[KEYS[Math.floor(rnd() * KEYS.length)]!] = randomValue(rnd, depth + 1);
  return obj;
}

/** A pointer to an existing location (or one past it), chosen at random. */
function randomPointer(rnd: () => number, doc: unknown): string {
  let node = doc;
  let path = '';
  while (typeof node === 'object' && node !== null && rnd() < 0.7) {
    const keys = Array.isArray(node) ? node.map((_v, i) => String(i)) : Object.keys(node);
    if (keys.length === 0) break;
    const key = keys[Math.floor(rnd() * keys.length)]!;
    path += '/' + key.replace(/~/g, '~0').replace(/\//g, '~1');
    node = (node as Record<string, unknown>)[key];
  }
  return path;
}

function randomPatch(rnd: () => number, doc: unknown): unknown {
  if (rnd() < 0.4) {
    const merge = randomValue(rnd, 1);
    return typeof merge === 'object' && merge !== null && !Array.isArray(merge) ? merge : { a: merge, b: null };
  }
  const ops: unknown[] = [];
  const n = 1 + Math.floor(rnd() * 3);
  for (let i = 0; i < n; i++) {
    const kind = ['add', 'remove', 'replace', 'move', 'copy', 'test'][Math.floor(rnd() * 6)];
    const path = randomPointer(rnd, doc);
    if (kind === 'remove' && path === '') continue;
    if (kind === 'move' || kind === 'copy') {
      const from = randomPointer(rnd, doc);
      if (kind === 'move' && path.startsWith(from + '/')) continue;
      ops.push({ op: kind, from, path });
    } else if (kind === 'remove') {
      ops.push({ op: kind, path });
    } else {
      ops.push({ op: kind, path, value: randomValue(rnd, 2) });
    }
  }
  return ops;
}

describe('splice renderer', () => {
  it('gives the same JSON as applying and re-serializing (2,000 random documents and patch sequences)', () => {
    const rnd = prng(20261121);
    for (let n = 0; n < 2000; n++) {
      const doc = { root: randomValue(rnd, 0), list: [randomValue(rnd, 1), randomValue(rnd, 1)], s: 'x' };
      const text = JSON.stringify(doc);
      const patches: CompiledPatch[] = [];
      const count = 1 + Math.floor(rnd() * 3);
      for (let i = 0; i < count; i++) patches.push(patch(randomPatch(rnd, doc)));
      const out = render(text, patches);
      expect(JSON.parse(out), `case ${n}: ${text} ${JSON.stringify(patches)}`).toEqual(reference(text, patches));
    }
  });

  it('keeps untouched text byte for byte, including its formatting and escapes', () => {
    const text = '{"a": {"x": 1, "keep": "\\u0041\\n"}, "list": [1, 2.50, {"deep": true}], "z": "é"}';
    const out = render(text, [patch({ a: { x: 2 } })]);
    expect(out).toBe('{"a":{"x":2,"keep": "\\u0041\\n"},"list": [1, 2.50, {"deep": true}], "z": "é"}');
  });

  it('returns the base text itself when nothing changes', () => {
    const text = '{"a":1}';
    expect(render(text, [patch([{ op: 'test', path: '/a', value: 1 }])])).toBe(text);
  });

  it('skips a patch that does not apply and reports which applied', () => {
    const applied = new Uint8Array(2);
    const out = renderPatched(createBaseDocument('{"a":1}'), [patch([{ op: 'remove', path: '/nope' }]), patch({ b: 2 })], null, applied);
    expect(JSON.parse(out)).toEqual({ a: 1, b: 2 });
    expect([...applied]).toEqual([0, 1]);
  });

  it('later patches win on conflict', () => {
    const out = render('{"a":{"b":1,"c":1}}', [patch({ a: { b: 2, c: 2 } }), patch([{ op: 'replace', path: '/a/b', value: 3 }])]);
    expect(JSON.parse(out)).toEqual({ a: { b: 3, c: 2 } });
  });

  it('reuses the base text around a small patch of a 512 KiB document', () => {
    const big: Record<string, unknown> = {};
    for (let i = 0; big && JSON.stringify(big).length < 512 * 1024; i++) {
      big['section' + i] = { items: Array.from({ length: 20 }, (_v, k) => ({ id: k, name: 'item ' + k, price: k * 1.5 })) };
    }
    big.shop = { banner: 'default', discount: 0 };
    const text = JSON.stringify(big);
    const doc = createBaseDocument(text);
    const p = [patch({ shop: { banner: 'summer', discount: 20 } })];
    const out = renderPatched(doc, p, null, null);
    expect(JSON.parse(out)).toEqual(reference(text, p));
    const cut = text.indexOf('"shop"');
    expect(out.slice(0, cut)).toBe(text.slice(0, cut));
    expect(out.length - text.length).toBe('summer'.length - 'default'.length + 1);
    // A second render on the same document reuses the offsets found by the first.
    expect(renderPatched(doc, p, null, null)).toBe(out);
  });
});
