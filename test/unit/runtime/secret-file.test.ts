import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createSecretFile, readSecretFile } from '../../../src/runtime/secret-file.js';
import { ROOT } from '../../helpers/server-process.js';

// One contender: creates FILES secret files in DIR as fast as it can, each right after the others
// were told to go, and reads every one back at once; prints how many it found empty or missing.
const CONTENDER = `
const { createSecretFile, readSecretFile } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'src', 'runtime', 'secret-file.js')).href)});
const [dir, files, startAt] = process.argv.slice(1);
while (Date.now() < Number(startAt)) {}
let broken = 0;
for (let i = 0; i < Number(files); i++) {
  const path = dir + '/secret-' + i;
  createSecretFile(path, 'written-by-' + process.pid + '-' + 'x'.repeat(2000) + '\\n');
  const text = readSecretFile(path);
  if (text === undefined || !text.startsWith('written-by-') || !text.endsWith('\\n')) broken++;
}
process.stdout.write(String(broken));
`;

function contender(dir: string, files: number, startAt: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CONTENDER, dir, String(files), String(startAt)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`contender exited ${code}`))));
  });
}

describe('secret files (admin token, webhook key): created once, never seen half-written', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const fresh = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'rcd-secret-'));
    dirs.push(d);
    return d;
  };

  it('creates a 0600 file once; a second create leaves the first text and says so', () => {
    const path = join(fresh(), 'nested', 'admin-token');
    expect(createSecretFile(path, 'first\n')).toBe(true);
    expect(createSecretFile(path, 'second\n')).toBe(false);
    expect(readSecretFile(path)).toBe('first\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(path, '..'))).toEqual(['admin-token']);
  });

  it('processes creating the same files at once each read back a whole file, and leave no drafts', async () => {
    const dir = fresh();
    const files = 300;
    const startAt = Date.now() + 1500;
    const broken = await Promise.all([0, 1, 2, 3].map(() => contender(dir, files, startAt)));
    expect(broken).toEqual([0, 0, 0, 0]);
    expect(readdirSync(dir)).toHaveLength(files);
  }, 30_000);
});
