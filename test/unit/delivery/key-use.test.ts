import { describe, expect, it } from 'vitest';
import type { EnvView, KeyView } from '../../../src/delivery/directory.js';
import { newKeyUse, noteKeyUse, takeKeyUse } from '../../../src/delivery/key-use.js';

function view(keyId: string): KeyView {
  return { keyId, env: {} as EnvView, useRound: -1 };
}

describe('key use, noted once per report round', () => {
  it('reports each key used since the last report, again after it, and none unused', () => {
    const use = newKeyUse();
    const a = view('key_a');
    const b = view('key_b');
    noteKeyUse(use, a);
    noteKeyUse(use, a);
    noteKeyUse(use, b);
    const first = takeKeyUse(use);
    expect([...first].sort()).toEqual(['key_a', 'key_b']);
    first.clear();
    expect([...takeKeyUse(use)]).toEqual([]);
    noteKeyUse(use, b);
    noteKeyUse(use, b);
    expect([...takeKeyUse(use)]).toEqual(['key_b']);
  });

  it('a view made anew for the same key (an edit replaced it) is noted in the round it is used', () => {
    const use = newKeyUse();
    noteKeyUse(use, view('key_a'));
    takeKeyUse(use).clear();
    noteKeyUse(use, view('key_a'));
    expect([...takeKeyUse(use)]).toEqual(['key_a']);
  });
});
