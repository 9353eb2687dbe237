/**
 * Start-up faults a newcomer hits: a listener that cannot start stops the whole process before
 * anything is seeded or reported as listening (one clear line, exit 1, store untouched), so does a
 * store whose folder cannot be made, and a memory store never writes key files.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, serveUntilExit as serveToExit, startServer, tempDir, type Exit, type ServerProcess } from '../helpers/server-process.js';
import { freePort } from '../helpers/free-port.js';
import { stopAtListening } from '../helpers/stop-at-listening.js';

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/**
 * An rcd the tests share: its store three folders down in a directory of its own (folders it made),
 * its delivery listener on a port chosen here (the port another rcd then finds taken).
 */
let held: { server: ServerProcess; dir: string; nested: string; port: number };
beforeAll(async () => {
  const dir = tempDir();
  const nested = join(dir, 'a', 'b', 'c');
  const port = await freePort();
  held = { server: await startServer({ store: `sqlite:${join(nested, 'rcd.db')}`, dir, args: ['--port', String(port)] }), dir, nested, port };
});
afterAll(async () => {
  await held?.server.dispose();
  if (held !== undefined) rmSync(held.dir, { recursive: true, force: true });
});

/** `rcd serve` on 127.0.0.1 with one worker thread, to its end (test/helpers/server-process.ts). */
function serveUntilExit(args: string[], cwd: string): Promise<Exit> {
  return serveToExit(['--host', '127.0.0.1', '--threads', '1', ...args], cwd);
}

/** A port held by a plain TCP listener for the length of the test. */
async function holdPort(): Promise<number> {
  const holder: Server = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  return (holder.address() as { port: number }).port;
}


function ownDir(): string {
  const dir = tempDir();
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** One `rcd: error:` line on stderr, no stack trace; nothing seeded, nothing reported as listening. */
function expectCleanRefusal(run: Exit, dir: string): void {
  expect(run.code, run.stderr).toBe(1);
  const lines = run.stderr.split('\n').filter((l) => l !== '');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^rcd: error: cannot listen on .*127\.0\.0\.1:\d+/);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(run.stdout).not.toContain('seeded');
  expect(run.stdout).not.toContain('listening on');
  expect(run.stdout).not.toContain('demo API key');
  expect(existsSync(join(dir, 'demo-api-key'))).toBe(false);
  const db = new Database(join(dir, 'rcd.db'), { readonly: true, fileMustExist: true });
  try {
    expect(db.prepare('SELECT count(*) AS n FROM environments').get()).toEqual({ n: 0 });
  } finally {
    db.close();
  }
}

describe('a listener that cannot start stops the whole process', () => {
  it('admin port taken: exit 1 with one line, before seeding or listening', async () => {
    const dir = ownDir();
    const taken = await holdPort();
    const run = await serveUntilExit(['--store', `sqlite:${join(dir, 'rcd.db')}`, '--port', '0', '--admin-port', String(taken), '--seed-demo', 'true'], dir);
    expectCleanRefusal(run, dir);
    expect(run.stderr).toContain(`:${taken}`);
  });

  it('delivery port taken by another rcd: exit 1 with one line, before seeding or listening', async () => {
    const { server: first, port } = held;
    expect(new URL(first.url).port).toBe(String(port));

    const dir = ownDir();
    const run = await serveUntilExit(['--store', `sqlite:${join(dir, 'rcd.db')}`, '--port', String(port), '--admin-port', '0', '--seed-demo', 'true'], dir);
    expectCleanRefusal(run, dir);
    // The first server is untouched and alone on its port.
    const health = await call(first.url, '/healthz', { method: 'GET', key: null, contentType: null });
    expect(health.status).toBe(200);
  });

  it('delivery port held by another program: the same', async () => {
    const dir = ownDir();
    const taken = await holdPort();
    const run = await serveUntilExit(['--store', `sqlite:${join(dir, 'rcd.db')}`, '--port', String(taken), '--admin', 'false', '--seed-demo', 'true'], dir);
    expectCleanRefusal(run, dir);
  });
});

describe('a store whose folder cannot be made', () => {
  it('exits 1 with one line naming the path, also where the folder would be under /proc', async () => {
    const dir = ownDir();
    // /proc: Node 20's recursive mkdir loops forever there (src/runtime/directories.ts).
    const procfs = await serveUntilExit(['--store', 'sqlite:/proc/rcd-no-such-dir/data/rcd.db', '--port', '0', '--admin', 'false', '--seed-demo', 'false'], dir);
    expect(procfs.code, procfs.stderr).toBe(1);
    expect(procfs.stderr).toMatch(/^rcd: error: .*\/proc\/rcd-no-such-dir/m);
    expect(procfs.stderr).not.toMatch(/\n\s+at /);
    expect(procfs.stdout).not.toContain('listening on');
    // A regular file where a folder should be.
    writeFileSync(join(dir, 'not-a-dir'), 'x');
    const file = await serveUntilExit(['--store', `sqlite:${join(dir, 'not-a-dir', 'sub', 'rcd.db')}`, '--port', '0', '--admin', 'false', '--seed-demo', 'false'], dir);
    expect(file.code, file.stderr).toBe(1);
    expect(file.stderr).toMatch(/^rcd: error: .*not-a-dir/m);
  });

  it('makes the missing folders of a store path, private to the owner', () => {
    const { dir, nested } = held;
    expect(statSync(nested).isDirectory()).toBe(true);
    expect(statSync(join(dir, 'a')).mode & 0o777).toBe(0o700);
    expect(statSync(nested).mode & 0o777).toBe(0o700);
  });
});

describe('a memory store', () => {
  it('prints its demo key and writes no key file (an existing one is left alone)', async () => {
    const dir = ownDir();
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, 'demo-api-key'), 'demo_from_a_file_store\n');
    const server = await startServer({ dir, seedDemo: true, args: ['--store', 'memory:', '--data-dir', dataDir] });
    cleanup.push(() => server.dispose());
    expect(server.stdout()).toContain('store memory:');
    const key = /demo API key: (demo_\S+)/.exec(server.stdout())?.[1];
    expect(key).toBeDefined();
    const r = await call(server.url, '/api/v1/config/PlayerSettings', { key: key! });
    expect(r.status).toBe(200);
    expect(await server.stop(), server.stderr()).toBe(0);
    expect(readFileSync(join(dataDir, 'demo-api-key'), 'utf8')).toBe('demo_from_a_file_store\n');
  });

  it('with no key file present, none is created', async () => {
    const dir = ownDir();
    const dataDir = join(dir, 'data');
    const server = await startServer({ dir, seedDemo: true, args: ['--store', 'memory:', '--data-dir', dataDir] });
    cleanup.push(() => server.dispose());
    expect(server.stdout()).toContain('seeded a demo environment');
    expect(await server.stop(), server.stderr()).toBe(0);
    expect(existsSync(join(dataDir, 'demo-api-key'))).toBe(false);
  });
});

describe('a stop signal the moment the server is up', () => {
  // test/e2e/stop-at-listening.test.ts repeats this start and stop eight times (npm run test:slow).
  it('SIGTERM as soon as "listening on" is printed: a clean stop, exit 0', async () => {
    const run = await stopAtListening(ownDir());
    expect({ code: run.code, signal: run.signal }, `stdout:\n${run.stdout}\nstderr:\n${run.stderr}`).toEqual({ code: 0, signal: null });
    expect(run.stdout).toContain('stopped');
  });
});
