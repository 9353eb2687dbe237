import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { RcdError, type ErrorCode } from '../../../src/runtime/errors.js';

/** A temporary directory removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'rcd-store-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Awaits a promise expected to reject with an RcdError of `code`; returns the error. */
export async function rejectsWith(p: Promise<unknown>, code: ErrorCode): Promise<RcdError> {
  let caught: unknown = null;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(RcdError);
  expect((caught as RcdError).code).toBe(code);
  return caught as RcdError;
}

/** A small valid mapping (docs/api.md format) for a content item with `level` and `color`. */
export const MAPPING = {
  rules: [
    { segment: 'vip', when: { tier: 'vip' }, patch: { level: 99 } },
    {
      segment: 'exp1',
      variants: [
        { name: 'A', mod: [0, 499], patch: { color: 'red' } },
        { name: 'B', mod: [500, 999], patch: { color: 'blue' }, info: 'blue' },
      ],
    },
  ],
};
