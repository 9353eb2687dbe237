/**
 * Starts the real `rcd serve` process (compiled, from dist/ via bin/rcd.js) on ephemeral ports with a
 * temporary store, and speaks HTTP to it. No mocks: this is what a client or an operator sees.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout: two folders up from here, or three when running compiled from dist/ (bench/http/tls.ts uses the nginx helper). */
const HERE_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const ROOT = basename(HERE_ROOT) === 'dist' ? dirname(HERE_ROOT) : HERE_ROOT;
export const BIN = join(ROOT, 'bin', 'rcd.js');
/**
 * Servers started by the tests log plain lines (`rcd: ...`, `rcd: error: ...`), which the tests
 * match; without a terminal the default would be JSON. test/e2e/logs.test.ts covers the JSON format.
 */
export const HUMAN_LOG = { RCD_LOG_FORMAT: 'pretty' } as const;

export interface ServerOptions {
  /** Bundle object written to a temp file and passed with --import. */
  bundle?: unknown;
  /** Reuse a directory (e.g. to restart on the same store). A fresh temp dir otherwise. */
  dir?: string;
  args?: string[];
  env?: Record<string, string>;
  /** Admin listener on an ephemeral port (default: disabled). */
  admin?: boolean;
  /** Seed the demo environment into an empty store, as `npm start` does (default: false). */
  seedDemo?: boolean;
  /** Store URL (default: sqlite:<dir>/rcd.db), e.g. a PostgreSQL database. */
  store?: string;
  /** Serve metrics on an ephemeral port (default: off, so parallel tests do not compete for 9464). */
  metrics?: boolean;
  /** Resolve once the process printed this instead of "listening on" (e.g. a start waiting for its store). */
  readyWhen?: RegExp;
  /** The program and its leading arguments instead of `node bin/rcd.js` (an installed `rcd`, a unit's ExecStart). */
  command?: readonly string[];
}

export interface ServerProcess {
  readonly url: string;
  readonly adminUrl: string | null;
  /** http://host:port/metrics when started with `metrics: true`. */
  readonly metricsUrl: string | null;
  readonly dir: string;
  readonly storeUrl: string;
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** Stop and remove the temp dir (unless it was given). */
  dispose(): Promise<void>;
}

/** How a `rcd serve` that was meant to end by itself ended (serveUntilExit). */
export interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `rcd serve ARGS` in `cwd` until it exits by itself: for start-ups that must stop (a
 * half-started server hits the 20 s timeout, which rejects with its output).
 */
export function serveUntilExit(args: readonly string[], cwd: string): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', ...args], {
      cwd,
      env: { ...process.env, ...HUMAN_LOG, RCD_ADMIN_TOKEN: 'test-admin-token', RCD_METRICS: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`rcd serve did not exit\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export function tempDir(prefix = 'rcd-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function startServer(opts: ServerOptions = {}): Promise<ServerProcess> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? tempDir();
  const storeUrl = opts.store ?? `sqlite:${join(dir, 'rcd.db')}`;
  const [program, ...lead] = opts.command ?? [process.execPath, BIN];
  const args = [...lead, 'serve', '--store', storeUrl, '--host', '127.0.0.1', '--port', '0', '--threads', '2', '--seed-demo', String(opts.seedDemo === true)];
  if (opts.admin === true) args.push('--admin-port', '0', '--admin-host', '127.0.0.1');
  else args.push('--admin', 'false');
  if (opts.metrics === true) args.push('--metrics-port', '0', '--metrics-host', '127.0.0.1');
  else args.push('--metrics', 'false');
  if (opts.bundle !== undefined) {
    const file = join(dir, 'bundle.json');
    writeFileSync(file, JSON.stringify(opts.bundle));
    args.push('--import', file);
  }
  args.push(...(opts.args ?? []));
  const child = spawn(program!, args, {
    cwd: dir,
    env: { ...process.env, ...HUMAN_LOG, RCD_ADMIN_TOKEN: 'test-admin-token', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const url = await new Promise<string>((resolve, reject) => {
    // A server that did not start in time is killed, so that no test run leaves one behind.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start in time\nstdout:\n${out}\nstderr:\n${err}`));
    }, 20_000);
    const onData = (): void => {
      if (opts.readyWhen !== undefined && opts.readyWhen.test(out + err)) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stderr.off('data', onData);
        resolve('');
        return;
      }
      const m = /(?<!admin )listening on (https?:\/\/[^\s"]+)/.exec(out);
      if (m !== null && (opts.admin !== true || /admin listening on/.test(out))) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stderr.off('data', onData);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening\nstdout:\n${out}\nstderr:\n${err}`));
    });
  });
  const adminMatch = /admin listening on (https?:\/\/[^\s"]+)/.exec(out);
  const metricsMatch = /metrics at (https?:\/\/[^\s"]+)/.exec(out);

  const stop = async (): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };
  return {
    url,
    adminUrl: adminMatch === null ? null : adminMatch[1]!,
    metricsUrl: metricsMatch === null ? null : metricsMatch[1]!,
    dir,
    storeUrl,
    child,
    stdout: () => out,
    stderr: () => err,
    stop,
    dispose: async () => {
      await stop();
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/** POST (or GET) with the delivery API's headers; `headers` entries set to null are omitted. */
export async function call(
  base: string,
  path: string,
  opts: { method?: string; key?: string | null; contentType?: string | null; body?: string | null; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key !== null && opts.key !== undefined) headers['x-api-key'] = opts.key;
  const ct = opts.contentType === undefined ? 'application/json' : opts.contentType;
  if (ct !== null) headers['content-type'] = ct;
  const method = opts.method ?? 'POST';
  const init: RequestInit = { method, headers };
  if (method !== 'GET' && method !== 'HEAD') init.body = opts.body === undefined ? '{}' : (opts.body ?? undefined);
  const res = await fetch(base + path, init);
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** A node's /healthz: `status` ok, or degraded with `store` unavailable while its store is unreachable. */
export async function healthOf(srv: { readonly url: string }): Promise<{ status?: string; store?: string }> {
  return (await call(srv.url, '/healthz', { method: 'GET', key: null, contentType: null })).json as { status?: string; store?: string };
}

/** A server's /readyz at `base`: its status, and the error code while not ready (starting, draining, store_unavailable). */
export async function readinessOf(base: string): Promise<{ status: number; code: string | undefined }> {
  const r = await call(base, '/readyz', { method: 'GET', key: null, contentType: null });
  return { status: r.status, code: errorCode(r) };
}

/** The stable error code of an error reply. */
export function errorCode(r: Reply): string | undefined {
  return (r.json as { error?: { code?: string } } | undefined)?.error?.code;
}
