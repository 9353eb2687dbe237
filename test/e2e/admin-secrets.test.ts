/**
 * Secrets of the real server process: the admin token rules (length, one trimming rule, the scheme
 * of the Authorization header), the modes of the files in the data directory, webhook secrets that
 * are not in the store file yet still sign deliveries (old stores with clear secrets included), and
 * the one rule for API keys an operator chooses.
 */
import { execFile } from 'node:child_process';
import { Webhook } from 'standardwebhooks';
import { chmodSync, copyFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { parseAnswer, type Answer } from '../helpers/answers.js';

const TOKEN = 'test-admin-token';
/** The token of the shared server `plain`, configured with blanks around it (RCD_ADMIN_TOKEN below). */
const PLAIN_TOKEN = `${TOKEN}-padded`;

interface Hit {
  readonly body: string;
  readonly headers: Record<string, string>;
}

let receiver: Server;
let receiverUrl: string;
const hits: Hit[] = [];
const dirs: string[] = [];
/**
 * A server with the defaults but for its admin token, which has blanks around it, for the tests that
 * only speak to one: the token's trimming, the Bearer scheme, the key rule; its webhook key is the
 * one a restored store comes with.
 */
let plain: ServerProcess;

beforeAll(async () => {
  plain = await startServer({ admin: true, env: { RCD_ADMIN_TOKEN: `  ${PLAIN_TOKEN} \t` } });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers as Record<string, string> });
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/rcd`;
});

afterAll(async () => {
  await plain?.dispose();
  receiver.closeAllConnections();
  await new Promise<void>((r) => receiver.close(() => r()));
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function ownDir(): string {
  const dir = tempDir('rcd-secrets-');
  dirs.push(dir);
  return dir;
}

async function adm(srv: ServerProcess, method: string, path: string, body?: unknown, token = TOKEN): Promise<{ status: number; json: Answer }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, {
    method,
    headers: { authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: parseAnswer(await res.text()) };
}

async function withAuth(srv: ServerProcess, authorization: string): Promise<{ status: number; code: string | undefined }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/environments`, { headers: { authorization } });
  const json = (await res.json()) as { error?: { code?: string } };
  return { status: res.status, code: json.error?.code };
}

/** Runs `rcd serve` expecting it to refuse to start; resolves with its exit code and output. */
function serveExpectingExit(dir: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return rcd(dir, ['serve', '--store', `sqlite:${join(dir, 'rcd.db')}`, '--host', '127.0.0.1', '--port', '0', '--admin-port', '0', '--admin-host', '127.0.0.1', '--threads', '1', '--seed-demo', 'false', '--metrics', 'false'], env);
}

/** Runs `rcd ARGS` in `dir` to its end; resolves with its exit code and output. */
function rcd(dir: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: dir, env: { ...process.env, RCD_LOG_FORMAT: 'pretty', ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

async function waitForHits(n: number): Promise<void> {
  const end = Date.now() + 15_000;
  while (hits.length < n) {
    if (Date.now() > end) throw new Error(`expected ${n} webhook hits, got ${hits.length}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A secret not in the `whsec_` form keys the signature with its UTF-8 bytes (docs/admin.md). */
function signedWith(secret: string, hit: Hit): boolean {
  try {
    new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' }).verify(hit.body, hit.headers);
    return true;
  } catch {
    return false;
  }
}

/** Every byte SQLite keeps for the store: the database and, when present, its WAL. */
function storeBytes(dbPath: string): Buffer {
  const parts = [readFileSync(dbPath)];
  if (existsSync(dbPath + '-wal')) parts.push(readFileSync(dbPath + '-wal'));
  return Buffer.concat(parts);
}

function mode(path: string): number {
  return statSync(path).mode & 0o777;
}

describe('admin token and webhook key at start', () => {
  it('refuses to start with a short token: one line, exit 1, nothing created', async () => {
    const dir = ownDir();
    const r = await serveExpectingExit(dir, { RCD_ADMIN_TOKEN: 'a' });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('RCD_ADMIN_TOKEN');
    expect(r.stdout).not.toContain('listening');
    expect(existsSync(join(dir, 'rcd.db'))).toBe(false);
  });

  it('refuses to start with a short token in the admin-token file', async () => {
    const dir = ownDir();
    writeFileSync(join(dir, 'admin-token'), 'short\n', { mode: 0o600 });
    const r = await serveExpectingExit(dir, { RCD_ADMIN_TOKEN: '' });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(join(dir, 'admin-token'));
    expect(r.stdout).not.toContain('listening');
  });

  it('refuses to start with a webhook key file that holds no key, before creating the store', async () => {
    const dir = ownDir();
    writeFileSync(join(dir, 'webhook-key'), 'not-a-key\n', { mode: 0o600 });
    const r = await serveExpectingExit(dir, {});
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(join(dir, 'webhook-key'));
    expect(existsSync(join(dir, 'rcd.db'))).toBe(false);
  });

  it('trims the configured token the way it trims the presented one', async () => {
    const srv = plain;
    expect(await withAuth(srv, `Bearer ${PLAIN_TOKEN}`)).toEqual({ status: 200, code: undefined });
    expect(await withAuth(srv, `Bearer   ${PLAIN_TOKEN}  `)).toEqual({ status: 200, code: undefined });
    expect(await withAuth(srv, `Bearer ${TOKEN}`)).toEqual({ status: 401, code: 'unauthorized' });
  });

  it('takes the Bearer scheme in any case and refuses other schemes', async () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      expect(await withAuth(plain, `${scheme} ${PLAIN_TOKEN}`)).toEqual({ status: 200, code: undefined });
    }
    for (const bad of [`Basic ${PLAIN_TOKEN}`, `Bearer${PLAIN_TOKEN}`, 'Bearer', 'Bearer    ', `Token ${PLAIN_TOKEN}`, `Bearer ${PLAIN_TOKEN}x`]) {
      expect(await withAuth(plain, bad)).toEqual({ status: 401, code: 'unauthorized' });
    }
  });
});

describe('the data directory', () => {
  it('is created 0700 with every file in it 0600', async () => {
    const data = join(ownDir(), 'fresh', 'data');
    const db = join(data, 'rcd.db');
    const srv = await startServer({ admin: true, args: ['--store', `sqlite:${db}`], env: { RCD_ADMIN_TOKEN: '' } });
    try {
      const token = readFileSync(join(data, 'admin-token'), 'utf8').trim();
      expect((await adm(srv, 'PUT', 'environments/dev', undefined, token)).status).toBe(201);
      expect(mode(join(data, '..'))).toBe(0o700);
      expect(mode(data)).toBe(0o700);
      for (const file of ['rcd.db', 'rcd.db-wal', 'rcd.db-shm', 'admin-token', 'webhook-key']) {
        expect([file, mode(join(data, file))]).toEqual([file, 0o600]);
      }
    } finally {
      await srv.dispose();
    }
  });

  it('tightens store files a restore left readable by others', async () => {
    // The restore: a store `rcd import` wrote and the webhook key of another rcd, both left 0644.
    const dir = ownDir();
    writeFileSync(join(dir, 'bundle.json'), '{"environments":{}}');
    const imported = await rcd(dir, ['import', join(dir, 'bundle.json'), '--store', `sqlite:${join(dir, 'rcd.db')}`], {});
    expect(imported.code, imported.stderr).toBe(0);
    copyFileSync(join(plain.dir, 'webhook-key'), join(dir, 'webhook-key'));
    chmodSync(join(dir, 'rcd.db'), 0o644);
    chmodSync(join(dir, 'webhook-key'), 0o644);
    const again = await startServer({ dir, admin: true });
    try {
      expect(mode(join(dir, 'rcd.db'))).toBe(0o600);
      expect(mode(join(dir, 'rcd.db-wal'))).toBe(0o600);
      expect(mode(join(dir, 'webhook-key'))).toBe(0o600);
    } finally {
      await again.dispose();
    }
  });
});

describe('webhook secrets at rest', () => {
  it('are not in the store file, yet sign deliveries before and after a restart', async () => {
    const dir = ownDir();
    const secret = 'never-in-the-db-file-7f3a9c2e51';
    const db = join(dir, 'rcd.db');
    let srv = await startServer({ dir, admin: true, args: ['--webhook-allow-private', 'true'] });
    try {
      expect((await adm(srv, 'POST', 'webhooks', { url: receiverUrl, events: ['content.updated'], secret })).status).toBe(201);
      await adm(srv, 'PUT', 'environments/dev');
      hits.length = 0;
      expect((await adm(srv, 'PUT', 'environments/dev/content/Store', '{"sale":1}')).status).toBe(200);
      await waitForHits(1);
      expect(signedWith(secret, hits[0]!)).toBe(true);
      expect(storeBytes(db).includes(secret)).toBe(false);
      await srv.stop();
      expect(storeBytes(db).includes(secret)).toBe(false);

      srv = await startServer({ dir, admin: true, args: ['--webhook-allow-private', 'true'] });
      await adm(srv, 'PUT', 'environments/dev/content/Store', '{"sale":2}');
      await waitForHits(2);
      expect(signedWith(secret, hits[1]!)).toBe(true);
    } finally {
      await srv.dispose();
    }
  });

  it('stored in clear by an older version keep signing and leave the file once it is opened', async () => {
    const dir = ownDir();
    const db = join(dir, 'rcd.db');
    const secret = 'legacy-clear-secret-0c1d2e3f4a5b';
    // The table exactly as older versions created it, with one webhook in clear.
    const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => {
      pragma(s: string): unknown;
      exec(s: string): void;
      prepare(s: string): { run(...p: unknown[]): unknown };
      close(): void;
    };
    const old = new Database(db);
    old.pragma('journal_mode = WAL');
    old.exec('CREATE TABLE admin_webhooks (id TEXT PRIMARY KEY, url TEXT NOT NULL, events TEXT NOT NULL, secret TEXT NOT NULL, created_at TEXT NOT NULL)');
    old.prepare('INSERT INTO admin_webhooks VALUES (?, ?, ?, ?, ?)').run('wh_0123456789abcdef', receiverUrl, '["content.updated"]', secret, new Date().toISOString());
    old.close();
    expect(storeBytes(db).includes(secret)).toBe(true);

    const srv = await startServer({ dir, admin: true, args: ['--webhook-allow-private', 'true'] });
    try {
      expect(storeBytes(db).includes(secret)).toBe(false);
      const listed = await adm(srv, 'GET', 'webhooks');
      expect(listed.json.webhooks?.map((w: { id: string }) => w.id)).toEqual(['wh_0123456789abcdef']);
      await adm(srv, 'PUT', 'environments/dev');
      hits.length = 0;
      await adm(srv, 'PUT', 'environments/dev/content/Legacy', '{"a":1}');
      await waitForHits(1);
      expect(signedWith(secret, hits[0]!)).toBe(true);
    } finally {
      await srv.dispose();
    }
    expect(storeBytes(db).includes(secret)).toBe(false);
  });
});

describe('API keys an operator chooses', () => {
  it('follow the store rule (8-256 visible ASCII) through the admin API, and a duplicate is 409', async () => {
    const srv = plain;
    await adm(srv, 'PUT', 'environments/dev', undefined, PLAIN_TOKEN);
    await adm(srv, 'PUT', 'environments/prod', undefined, PLAIN_TOKEN);
    expect((await adm(srv, 'POST', 'environments/dev/keys', { key: 'eight-ch' }, PLAIN_TOKEN)).status).toBe(201);
    expect((await adm(srv, 'POST', 'environments/dev/keys', { key: 'k'.repeat(256) }, PLAIN_TOKEN)).status).toBe(201);
    for (const bad of ['seven-c', 'k'.repeat(257), 'has space-in-it', 'caf\u00e9-key-1', 42]) {
      const r = await adm(srv, 'POST', 'environments/dev/keys', { key: bad }, PLAIN_TOKEN);
      expect([bad, r.status, r.json.error?.code]).toEqual([bad, 400, 'invalid_body']);
    }
    for (const env of ['dev', 'prod']) {
      const dup = await adm(srv, 'POST', `environments/${env}/keys`, { key: 'eight-ch' }, PLAIN_TOKEN);
      expect([env, dup.status, dup.json.error?.code]).toEqual([env, 409, 'conflict']);
    }
  });
});
