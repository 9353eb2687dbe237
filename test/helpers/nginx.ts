/**
 * A real nginx (the Debian package) in front of a real rcd, configured with docs/nginx/rcd.conf,
 * the file docs/deployment.md tells operators to install: only its placeholders are replaced.
 *
 * Unprivileged-friendly: one process (no master, no user switch), loopback, its own prefix, pid,
 * logs and temp folders in a temp dir. Missing nginx is a failure under CI (.ci/run installs it).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ROOT, startServer, tempDir, type ServerProcess } from './server-process.js';
import { freePort } from './free-port.js';

export const RECOMMENDED_CONF = join(ROOT, 'docs', 'nginx', 'rcd.conf');

const CANDIDATES = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/bin/nginx', '/usr/local/nginx/sbin/nginx'];

/** The nginx binary, or null when none is installed. */
export function findNginx(): string | null {
  for (const c of CANDIDATES) if (existsSync(c)) return c;
  const which = spawnSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' });
  const path = which.stdout.trim();
  return which.status === 0 && path !== '' ? path : null;
}

export interface NginxProcess {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  errorLog(): string;
  stop(): Promise<void>;
}

/** The recommended configuration with its placeholders replaced. */
export function renderRecommendedConf(listen: string, upstream: string, host: string): string {
  const text = readFileSync(RECOMMENDED_CONF, 'utf8');
  return text.replaceAll('@RCD_LISTEN@', listen).replaceAll('@RCD_UPSTREAM@', upstream).replaceAll('@RCD_HOST@', host);
}


function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * Starts nginx on a free loopback port, proxying to rcd's delivery listener at `upstreamPort`.
 * `tls`: nginx terminates HTTPS with these files (bench/http/tls.ts measures that deployment).
 */
export async function startNginx(
  binary: string,
  upstreamPort: number,
  logLevel: 'warn' | 'info' = 'warn',
  tls: { cert: string; key: string } | null = null,
): Promise<NginxProcess> {
  const dir = tempDir('rcd-nginx-');
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const site = renderRecommendedConf(`127.0.0.1:${port}${tls === null ? '' : ' ssl'}`, `127.0.0.1:${upstreamPort}`, 'localhost');
    writeFileSync(join(dir, 'rcd.conf'), site);
    // The main file of this instance only: the process model and where its files go.
    writeFileSync(
      join(dir, 'nginx.conf'),
      [
        'daemon off;',
        'master_process off;',
        'worker_processes 1;',
        `pid ${join(dir, 'nginx.pid')};`,
        `error_log ${join(dir, 'error.log')} ${logLevel};`,
        'events { worker_connections 4096; }',
        'http {',
        '  access_log off;',
        `  client_body_temp_path ${join(dir, 'body')};`,
        `  proxy_temp_path ${join(dir, 'proxy')};`,
        `  fastcgi_temp_path ${join(dir, 'fastcgi')};`,
        `  uwsgi_temp_path ${join(dir, 'uwsgi')};`,
        `  scgi_temp_path ${join(dir, 'scgi')};`,
        // The certificate at http level: the recommended file's server block inherits it.
        ...(tls === null ? [] : [`  ssl_certificate ${tls.cert};`, `  ssl_certificate_key ${tls.key};`, '  ssl_protocols TLSv1.2 TLSv1.3;']),
        `  include ${join(dir, 'rcd.conf')};`,
        '}',
        '',
      ].join('\n'),
    );
    const child: ChildProcess = spawn(binary, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const errorLog = (): string => {
      const file = join(dir, 'error.log');
      return stderr + (existsSync(file) ? readFileSync(file, 'utf8') : '');
    };
    const deadline = Date.now() + 10_000;
    let up = false;
    while (Date.now() < deadline && child.exitCode === null) {
      if (await canConnect(port)) {
        up = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!up) {
      child.kill('SIGKILL');
      await exited;
      // Another process took the port between freePort() and nginx's bind: try another one.
      if (/Address already in use/.test(errorLog()) && attempt < 5) continue;
      const log = errorLog();
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`nginx did not start:\n${log}`);
    }
    return {
      port,
      url: `${tls === null ? 'http' : 'https'}://127.0.0.1:${port}`,
      dir,
      errorLog,
      stop: async () => {
        // SIGQUIT: graceful stop; SIGKILL after 3 s if it is still there.
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await exited;
        clearTimeout(timer);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

/** A real rcd serving `bundle` and a real nginx in front of it; fails saying how to install nginx when none is. */
export async function startBehindNginx(bundle: unknown): Promise<{ server: ServerProcess; nginx: NginxProcess }> {
  const binary = findNginx();
  if (binary === null) {
    throw new Error('nginx is not installed: these tests run a real nginx in front of rcd (apt-get install nginx; .ci/run installs it)');
  }
  const server = await startServer({ bundle });
  try {
    return { server, nginx: await startNginx(binary, Number(new URL(server.url).port)) };
  } catch (err) {
    await server.dispose();
    throw err;
  }
}
