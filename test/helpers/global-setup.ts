import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The e2e suites start the real server from dist/, so compile once before any test file runs.
export default function setup(): void {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}tsconfig.json`], {
    cwd: root,
    stdio: 'inherit',
  });
}
