import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launcherNodeFlags } from '../../../bench/harness/processes.js';
import { repoRoot } from '../../../bench/fixtures/generate.js';

describe("benchmarks start rcd with its launcher's node flags", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  function rootWithLauncher(firstLine: string): string {
    const root = mkdtempSync(join(tmpdir(), 'rcd-launcher-'));
    dirs.push(root);
    mkdirSync(join(root, 'bin'));
    writeFileSync(join(root, 'bin', 'rcd.js'), `${firstLine}\nimport './x.js';\n`);
    return root;
  }

  it("reads this checkout's bin/rcd.js: --single-threaded-gc, as npm start and the systemd unit run it", () => {
    expect(launcherNodeFlags(repoRoot())).toEqual(['--single-threaded-gc']);
  });

  it('takes every flag after node, in order', () => {
    expect(launcherNodeFlags(rootWithLauncher('#!/usr/bin/env -S node --single-threaded-gc --max-semi-space-size=8'))).toEqual(['--single-threaded-gc', '--max-semi-space-size=8']);
  });

  it('gives none for a launcher without flags (an older checkout as a baseline)', () => {
    expect(launcherNodeFlags(rootWithLauncher('#!/usr/bin/env node'))).toEqual([]);
  });
});
