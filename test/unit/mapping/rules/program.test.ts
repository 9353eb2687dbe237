/**
 * The rule program (src/mapping/rules/program.ts): a mapping's rules as one generated function must
 * write exactly the edges the interpreter (interpretRules) writes, for every p, app version and mod;
 * and where code generation from strings is refused, the interpreter answers alike.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { prng, pick, readFixture } from '../../../../bench/fixtures/generate.js';
import { compileMapping, evaluateMapping, interpretRules } from '../../../../src/mapping/index.js';
import { compileRuleProgram } from '../../../../src/mapping/rules/program.js';
import type { CompiledMapping } from '../../../../src/mapping/rules/compiled.js';
import { NO_VERSION, comparableVersion } from '../../../../src/shared/app-version.js';

// Every kind of rule part: A/B tables with gaps, gated and disabled rules, app-version ranges of one
// and of several comparator sets, inlined operators on one- and two-segment paths, long $in lists (a
// Set), $exists inside $not, and fields the generated code hands to the interpreter ($or at the
// top, $all, $elemMatch, a member Object.prototype also has, $regex and version operators on arrays).
const MAPPING: { rules: Record<string, unknown>[] } = {
  rules: [
    { segment: 'eu', when: { country: { $in: ['DE', 'FR', 'ES', 'IT', 'NL', 'PL'] } }, patch: { a: 1 } },
    { segment: 'many', when: { country: { $in: ['A1', 'A2', 'A3', 'A4', 'A5', 'A6', 'A7', 'A8', 'A9', 'DE', 7, true, null] } }, patch: { a: 2 } },
    { segment: 'payer', when: { spend: { $gt: 20, $lte: 500 } }, patch: { a: 3 } },
    { segment: 'not-us', when: { country: { $nin: ['US', null] }, level: { $ne: 3 } }, patch: { a: 4 } },
    { segment: 'legacy', appVersion: '<1.5.0 || >=2.0.0 <2.1.0', patch: { a: 5 } },
    { segment: 'gated', when: { platform: 'ios' }, mod: [100, 599], patch: { a: 6 } },
    { segment: 'off', disabled: true, when: { platform: 'ios' }, patch: { a: 7 } },
    {
      segment: 'ab',
      when: { 'device.ram': { $gte: 2048 }, 'device.os': { $exists: true } },
      variants: [
        { name: 'A', mod: [0, 199], patch: { a: 8 } },
        { name: 'B', mod: [600, 999], patch: { a: 9 } },
      ],
    },
    { segment: 'no-ram', when: { 'device.ram': { $not: { $exists: true } } }, patch: { a: 10 } },
    { segment: 'null-device', when: { 'device.os': null }, patch: { a: 11 } },
    { segment: 'or', when: { $or: [{ level: { $lt: 5 } }, { tags: 'tester' }] }, patch: { a: 12 } },
    { segment: 'all', when: { tags: { $all: ['vip', 'new'] } }, patch: { a: 13 } },
    { segment: 'elem', when: { scores: { $elemMatch: { $gt: 10 } } }, patch: { a: 14 } },
    { segment: 'inherited', when: { toString: { $exists: false }, valueOf: null }, patch: { a: 15 } },
    { segment: 'rx', when: { name: { $regex: '^pl' }, os: { $vgte: '1.2.0' } }, patch: { a: 16 } },
    { segment: 'str', when: { name: { $gte: 'm' }, level: { $size: 2 } }, patch: { a: 17 } },
    { segment: 'deep', when: { device: { os: 'ios', ram: 4096 }, tags: ['vip', 'new'] }, patch: { a: 18 } },
    { segment: 'tester', when: { tags: 'tester' }, appVersion: '>=1.0.0', patch: { a: 19 } },
    // Bounds with and without a version number (app-version.ts versionNumber: every part below
    // 1024), a prerelease, and a part beyond 9 digits (a key of its own).
    { segment: 'wide', appVersion: '>=1.1023.0 <1024.0.0 || 1.0.1024 || >2024.11.2', patch: { a: 20 } },
    { segment: 'beyond', appVersion: '>=1.1000000000.0 || <0.9.1-rc.1 || <=1023.1023.1023 >1023.1023.1022', patch: { a: 21 } },
  ],
};

const VALUES: unknown[] = ['DE', 'US', 'FR', 'ios', 'android', 'A9', 'm', 'zed', 'player', '1.2.0', '1.10.3', 'x', '', 0, 3, 5, 20, 21, 500, 501, 2048, 4096, -1, 2.5, 7, true, false, null];
// Request versions with a number and too wide for one (compared by key), on both sides of the bounds.
const VERSIONS = ['', '0.9.0', '1.4.9', '1.5.0', '2.0.0', '2.0.5', '2.1.0', '3.0.0', '1.0.1023', '1.0.1024', '1.1023.0', '1.1024.0', '1.999999999.0', '1023.1023.1023', '1024.0.0', '2024.11.2', '2024.11.3'];

function randomValue(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth < 2 && r < 0.1) return Array.from({ length: Math.floor(rand() * 3) }, () => randomValue(rand, depth + 1));
  if (depth < 2 && r < 0.15) return { os: pick(rand, VALUES), ram: pick(rand, VALUES) };
  if (r < 0.2) return pick(rand, ['vip', 'new', 'tester']);
  return pick(rand, VALUES);
}

/** p with some of the attributes the mapping reads, parsed from JSON as requests are. */
function randomP(rand: () => number): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  for (const name of ['country', 'spend', 'level', 'platform', 'tags', 'scores', 'name', 'os', 'toString', 'valueOf']) {
    if (rand() < 0.55) p[name] = randomValue(rand, 0);
  }
  if (rand() < 0.6) p.device = rand() < 0.15 ? pick(rand, [null, 'flat', ['x']]) : { os: pick(rand, ['ios', 'android', null]), ram: pick(rand, [1024, 2048, 4096, '4096']) };
  if (rand() < 0.3) p.tags = pick(rand, [['vip', 'new'], ['tester'], ['new', 'vip', 'x'], 'tester']);
  return JSON.parse(JSON.stringify(p)) as Record<string, unknown>;
}

function edges(out: Int32Array, length: number): number[] {
  return Array.from(out.subarray(0, length));
}

/** Program and interpreter on the same inputs: how many inputs applied at least two rules, and the last rule any applied. */
function agreeOn(mapping: CompiledMapping, seed: number, inputs: number): { rich: number; lastRule: number } {
  const program = compileRuleProgram(mapping.rules);
  expect(program).not.toBeNull();
  const rand = prng(seed);
  const a = new Int32Array(mapping.rules.length);
  const b = new Int32Array(mapping.rules.length);
  let rich = 0;
  let lastRule = -1;
  const disagreements: string[] = [];
  for (let i = 0; i < inputs; i++) {
    const p = randomP(rand);
    const v = pick(rand, VERSIONS);
    const version = v === '' ? NO_VERSION : comparableVersion(v);
    const mod = Math.floor(rand() * 1000);
    const got = edges(a, program!(p, version, mod, a));
    const expected = edges(b, interpretRules(mapping.rules, p, version, mod, b));
    if (expected.length >= 2) rich++;
    for (const edge of expected) lastRule = Math.max(lastRule, Math.floor(edge / 1024));
    if (got.join() !== expected.join()) disagreements.push(`${JSON.stringify(p)} v=${v} mod=${mod}: ${got.join()} != ${expected.join()}`);
  }
  expect(disagreements.slice(0, 5)).toEqual([]);
  return { rich, lastRule };
}

describe("the rule program writes the interpreter's edges", () => {
  it('every kind of rule part, 5,000 random (p, version, mod)', () => {
    const { rich } = agreeOn(compileMapping(MAPPING), 41, 5000);
    // The inputs must reach the rules: most apply several.
    expect(rich).toBeGreaterThan(2500);
  });

  it("the bench's 10-rule mapping", () => {
    agreeOn(compileMapping(readFixture('mapping-10.json')), 7, 3000);
  });

  it('a mapping longer than one chunk of source (400 rules) runs its chunks in order', () => {
    const rules = Array.from({ length: 400 }, (_v, i) => ({
      segment: `r${i}`,
      when: i % 3 === 0 ? { level: { $gte: i % 50 } } : { country: { $in: ['DE', 'US', `C${i}`] }, spend: { $lt: i } },
      ...(i % 7 === 0 ? { variants: [{ name: 'A', mod: [0, 499], patch: { a: i } }, { name: 'B', mod: [500, 999], patch: { a: -i } }] } : { patch: { a: i } }),
    }));
    const mapping = compileMapping({ rules });
    const { rich, lastRule } = agreeOn(mapping, 11, 500);
    expect(rich).toBeGreaterThan(50);
    expect(lastRule).toBeGreaterThan(390);
  });

  it('evaluateMapping builds the program on first use and answers as the interpreter', () => {
    const mapping = compileMapping(MAPPING);
    expect(mapping.program).toBeNull();
    const combination = evaluateMapping(mapping, { country: 'DE', spend: 30, level: 4 }, comparableVersion('1.0.0'), 150);
    expect(mapping.program).not.toBeNull();
    // No device: `device.ram` is not there (8), `device.os` is missing and so matches null (9); no
    // toString of its own, no valueOf (13).
    expect(combination.key).toBe('0.-1;1.-1;2.-1;3.-1;4.-1;8.-1;9.-1;10.-1;13.-1;');
  });
});

describe('where code generation from strings is refused', () => {
  const root = fileURLToPath(new URL('../../../..', import.meta.url));
  it('the interpreter answers (node --disallow-code-generation-from-strings), the same keys as here', () => {
    const inputs = Array.from({ length: 200 }, (_v, i) => ({ p: randomP(prng(1000 + i)), v: VERSIONS[i % VERSIONS.length]!, mod: (i * 37) % 1000 }));
    const script = `
      const { compileMapping, evaluateMapping } = await import(${JSON.stringify(root + 'dist/src/mapping/index.js')});
      const { compileRuleProgram } = await import(${JSON.stringify(root + 'dist/src/mapping/rules/program.js')});
      const { comparableVersion, NO_VERSION } = await import(${JSON.stringify(root + 'dist/src/shared/app-version.js')});
      const m = compileMapping(${JSON.stringify(MAPPING)});
      const inputs = ${JSON.stringify(inputs)};
      const keys = inputs.map((x) => evaluateMapping(m, x.p, x.v === '' ? NO_VERSION : comparableVersion(x.v), x.mod).key);
      process.stdout.write(JSON.stringify({ program: compileRuleProgram(m.rules), keys }));
    `;
    const out = JSON.parse(
      execFileSync(process.execPath, ['--disallow-code-generation-from-strings', '--input-type=module', '-e', script], { encoding: 'utf8' }),
    ) as { program: unknown; keys: string[] };
    const mapping = compileMapping(MAPPING);
    const expected = inputs.map((x) => evaluateMapping(mapping, x.p, x.v === '' ? NO_VERSION : comparableVersion(x.v), x.mod).key);
    expect(out.program).toBeNull();
    expect(out.keys).toEqual(expected);
    expect(new Set(expected).size).toBeGreaterThan(20);
  });
});
