import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startPostgres, type RunningPostgres } from './postgres.js';

let postgresServer: RunningPostgres | null = null;

// The e2e suites start the real server from dist/. `npm test` compiles before vitest runs and sets
// RCD_TEST_SKIP_BUILD; a bare `npx vitest` compiles here so that it never tests a stale dist/.
// The PostgreSQL tests use RCD_TEST_PG_URL; without it one throwaway server is started here for the
// whole run (test files inherit the variable) and removed at the end.
export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.RCD_TEST_SKIP_BUILD !== '1') {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}tsconfig.json`], {
      cwd: root,
      stdio: 'inherit',
    });
    // The client SDK's browser build (dist/client/), which the Chromium suites load.
    execFileSync(process.execPath, [`${root}scripts/build-client.mjs`], { cwd: root, stdio: 'inherit', env: { ...process.env, RCD_QUIET_BUILD: '1' } });
    // The web console (served from dist/console/ by the admin listener), as `npm run build` makes it.
    execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${root}src/console/tsconfig.json`], { cwd: root, stdio: 'inherit' });
    execFileSync(process.execPath, [`${root}scripts/build-console.mjs`], { cwd: root, stdio: 'inherit' });
  }
  if (process.env.RCD_TEST_PG_URL === undefined || process.env.RCD_TEST_PG_URL === '') {
    postgresServer = await startPostgres();
    process.env.RCD_TEST_PG_URL = postgresServer.url;
  }
  return async () => {
    await postgresServer?.destroy();
    postgresServer = null;
  };
}
