/**
 * `npm run bench:verdict -- RESULTS.json [--check]`: the verdict table of a recorded run (the one
 * `npm run bench` prints at its end), e.g. for CI on a run made elsewhere. With `--check`, exit 1 when
 * any target FAILed; 2 for a file that is not a suite run.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { BenchResults } from './results.js';
import { anyFailed, evaluateTargets, renderVerdicts } from './targets.js';

const USAGE = 'usage: npm run bench:verdict -- RESULTS.json [--check]   (--check: exit 1 when a target FAILed)\n';

function main(argv: string[]): number {
  let file: string;
  let check: boolean;
  try {
    const { values, positionals } = parseArgs({ args: argv, options: { check: { type: 'boolean', default: false } }, allowPositionals: true, strict: true });
    if (positionals.length !== 1) throw new Error('one results file expected');
    file = positionals[0]!;
    check = values.check === true;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  let results: BenchResults;
  try {
    results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
    if (results.version !== 1 || !Array.isArray(results.scenarios) || (results as { kind?: unknown }).kind !== undefined) throw new Error(`${file} is not a results file of npm run bench (version 1)`);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return 2;
  }
  const checks = evaluateTargets(results);
  process.stdout.write(`${file} (${results.date}, ${results.host})\n\n${renderVerdicts(checks)}\n`);
  return check && anyFailed(checks) ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
