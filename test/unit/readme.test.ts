import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVE_OPTIONS } from '../../src/config.js';

// The README's configuration table is what operators read: it must name every real flag and variable.
describe('README configuration table', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  for (const spec of SERVE_OPTIONS) {
    it(`documents --${spec.flag} and ${spec.env}`, () => {
      expect(readme).toContain(`| \`--${spec.flag}\` | \`${spec.env}\` |`);
    });
  }
});
