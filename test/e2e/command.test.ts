/**
 * `rcd` as a command on the PATH: what `npm install -g .` (and `npm link`, the same operation) makes
 * of a checkout, done by the real npm into a temporary prefix, then the installed command run. The
 * folder install links the checkout and its bin without fetching anything (--offline), so it is
 * fast and CI-safe; installing the packed tarball from the registry (1.5 min of downloads and native
 * builds on the development VM) is checked by hand (docs/operations.md), and here by the tarball's
 * file list: everything the installed command needs is in it.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, copyFileSync, lstatSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, ROOT, startServer, tempDir } from '../helpers/server-process.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The shebang's `env node` finds the node running the tests first. */
const PATH = `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;

/** Runs a program to its end (bounded), with node's folder on PATH as a shell would have it. */
function run(program: string, args: readonly string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(program, args, { cwd, env: { ...process.env, PATH }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

/** `npm install -g <folder>` into a prefix of its own: never the machine's global folder. */
function installGlobally(folder: string, prefix: string): Promise<Run> {
  return run('npm', ['install', '-g', '--prefix', prefix, folder, '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], tempDir('rcd-npm-cwd-'));
}

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('npm install -g . (a built checkout)', () => {
  const prefix = tempDir('rcd-prefix-');
  dirs.push(prefix);
  const rcd = join(prefix, 'bin', 'rcd');

  it('puts rcd on the prefix bin, linked to the checkout', async () => {
    const r = await installGlobally(ROOT, prefix);
    expect(r.code, r.stderr).toBe(0);
    expect(lstatSync(rcd).isSymbolicLink()).toBe(true);
    expect(readlinkSync(rcd)).toMatch(/remote-config-delivery\/bin\/rcd\.js$/);
  });

  it('answers --version and --help', async () => {
    const version = await run(rcd, ['--version'], prefix);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toBe(VERSION);
    const help = await run(rcd, ['--help'], prefix);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('rcd serve [options]');
    const serveHelp = await run(rcd, ['serve', '--help'], prefix);
    expect(serveHelp.code).toBe(0);
    expect(serveHelp.stdout).toContain('RCD_STORE');
  });

  it('serves: the installed command starts a server that answers a delivery request', async () => {
    const server = await startServer({ command: [rcd], seedDemo: true, env: { PATH } });
    try {
      const key = readFileSync(join(server.dir, 'demo-api-key'), 'utf8').trim();
      const r = await call(server.url, '/api/v1/config/PlayerSettings', { key });
      expect(r.status).toBe(200);
      expect((r.json as { difficulty: string }).difficulty).toBe('normal');
    } finally {
      await server.dispose();
    }
  });
});

describe('a checkout that was never built', () => {
  it('says to build it, in one line, and exits 1 (not a module-not-found trace)', async () => {
    const checkout = tempDir('rcd-unbuilt-');
    const prefix = tempDir('rcd-prefix-');
    dirs.push(checkout, prefix);
    mkdirSync(join(checkout, 'bin'));
    copyFileSync(join(ROOT, 'bin', 'rcd.js'), join(checkout, 'bin', 'rcd.js'));
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
    // Only what names the package and its bin: an unbuilt checkout without its dependencies installed.
    writeFileSync(join(checkout, 'package.json'), JSON.stringify({ name: pkg.name, version: pkg.version, type: pkg.type, bin: pkg.bin }));
    const installed = await installGlobally(checkout, prefix);
    expect(installed.code, installed.stderr).toBe(0);
    const r = await run(join(prefix, 'bin', 'rcd'), ['--version'], prefix);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^rcd: error: .*dist\/src\/cli\.js is missing/);
    expect(r.stderr).toContain('npm run build');
  });
});

describe('npm pack', () => {
  it('packs what an installed rcd needs, and not the sources or tests', async () => {
    // --ignore-scripts: prepack would rebuild dist/ under the other test files' feet; it is built.
    const r = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], ROOT);
    expect(r.code, r.stderr).toBe(0);
    const files = new Set((JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path));
    for (const needed of ['package.json', 'bin/rcd.js', 'dist/src/cli.js', 'dist/src/server.js', 'dist/src/worker/entry.js', 'dist/src/control/thread.js', 'dist/client/rcd-client.js', 'deploy/systemd/rcd.service', 'docs/operations.md']) {
      expect(files.has(needed), needed).toBe(true);
    }
    expect([...files].some((f) => f.startsWith('dist/console/'))).toBe(true);
    expect([...files].filter((f) => f.startsWith('src/') || f.startsWith('test/') || f.startsWith('dist/test/'))).toEqual([]);
  });
});
