/**
 * `rcd serve` on a memory store with its admin listener, sent SIGTERM the moment it prints that its
 * delivery listener is listening: how the process ended and what it printed.
 */
import { spawn } from 'node:child_process';
import { BIN } from './server-process.js';

export interface StoppedAtListening {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** One such start and stop, with `dataDir` as its data directory. */
export async function stopAtListening(dataDir: string): Promise<StoppedAtListening> {
  const child = spawn(process.execPath, [BIN, 'serve', '--store', 'memory:', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--threads', '1'], {
    env: { ...process.env, RCD_ADMIN_TOKEN: 'test-admin-token', RCD_METRICS: 'false', RCD_LOG_FORMAT: 'pretty' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let signalled = false;
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    if (!signalled && /(?<!admin )listening on/.test(stdout)) {
      signalled = true;
      child.kill('SIGTERM');
    }
  });
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  return { code, signal, stdout, stderr };
}
