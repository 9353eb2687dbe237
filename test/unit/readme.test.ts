import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVE_OPTIONS } from '../../src/runtime/config.js';

// The README's configuration table is what operators read: it must name every real flag and variable.
describe('README configuration table', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  for (const spec of SERVE_OPTIONS) {
    it(`documents --${spec.flag} and ${spec.env}`, () => {
      expect(readme).toContain(`| \`--${spec.flag}\` | \`${spec.env}\` |`);
    });
  }
});

// Node accepts only some V8 flags in NODE_OPTIONS and refuses to start on the others. The README
// tells operators to size the young generation with --max-semi-space-size in NODE_OPTIONS, and to
// put --min-semi-space-size on node's command line because NODE_OPTIONS refuses it.
describe('the heap-sizing advice in the README', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  function startsWith(nodeOptions: string): boolean {
    const r = spawnSync(process.execPath, ['-e', '0'], { env: { ...process.env, NODE_OPTIONS: nodeOptions }, encoding: 'utf8' });
    return r.status === 0 && r.stderr === '';
  }
  it('--max-semi-space-size in NODE_OPTIONS: node starts', () => {
    expect(readme).toContain('`--max-semi-space-size=N` (MiB) in `NODE_OPTIONS`');
    expect(startsWith('--max-semi-space-size=8')).toBe(true);
  });
  it('--min-semi-space-size: refused in NODE_OPTIONS, so the README gives the command line', () => {
    expect(startsWith('--min-semi-space-size=8')).toBe(false);
    expect(readme).not.toMatch(/NODE_OPTIONS="[^"]*--min-semi-space-size/);
    expect(readme).toContain('`node --min-semi-space-size=8 --max-semi-space-size=8 bin/rcd.js serve`');
  });
});
