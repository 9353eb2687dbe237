import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The e2e suites start the real server from dist/. `npm test` compiles before vitest runs and sets
// RCD_TEST_SKIP_BUILD; a bare `npx vitest` compiles here so that it never tests a stale dist/.
export default function setup(): void {
  if (process.env.RCD_TEST_SKIP_BUILD === '1') return;
  const root = fileURLToPath(new URL('../..', import.meta.url));
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}tsconfig.json`], {
    cwd: root,
    stdio: 'inherit',
  });
  // The web console (served from dist/console/ by the admin listener), as `npm run build` makes it.
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}src/console/tsconfig.json`], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, [`${root}scripts/build-console.mjs`], { cwd: root, stdio: 'inherit' });
}
