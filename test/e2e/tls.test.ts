/**
 * HTTPS end to end: the real server with certificates made by openssl in the test (a root CA that
 * clients trust, an intermediate sent with --tls-ca, server certificates it signs). Clients verify
 * the chain (curl --cacert, Node's fetch with NODE_EXTRA_CA_CERTS, node:https with `ca`); every
 * delivery endpoint answers as over plain HTTP; SIGHUP rotates the certificate while a client keeps
 * requesting; each certificate that cannot be served stops the start with one line and exit 1.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveUntilExit as serveToExit, startServer, tempDir, type Exit, type ServerProcess } from '../helpers/server-process.js';
import { parseAnswer } from '../helpers/answers.js';
import { createPki, issueLeaf, type Leaf, type Pki } from '../helpers/pki.js';

const KEY = 'tls-key-1';
const BUNDLE = {
  environments: {
    live: {
      keys: [KEY],
      content: {
        Game: {
          json: { difficulty: 'normal', shop: { discount: 0 } },
          mapping: { rules: [{ segment: 'vip', when: { tier: 'gold' }, patch: { shop: { discount: 20 } } }] },
        },
        Plain: { json: { x: 1 } },
      },
    },
  },
};

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The serial of the certificate the server presented (HTTPS only). */
  serial: string | null;
}

/** A connection that failed before its TLS session was established: no byte of the request was sent. */
class BeforeHandshake extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/**
 * One request over node:http or node:https (by the URL's scheme); HTTPS verifies against `ca`. A
 * failure before the TLS session is established rejects with BeforeHandshake.
 */
function send(
  base: string,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string; ca?: string; agent?: Agent | false } = {},
): Promise<Answer> {
  const url = new URL(path, base);
  const https = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const options = { method: opts.method ?? 'POST', headers: opts.headers ?? {}, ...(https ? { ca: opts.ca, agent: opts.agent ?? false } : { agent: false as const }) };
    const req = (https ? httpsRequest : httpRequest)(url, options, (res) => {
      const serial = https ? (res.socket as TLSSocket).getPeerCertificate().serialNumber : null;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, serial }));
      res.on('error', reject);
    });
    let established = !https;
    req.on('socket', (socket) => {
      if (req.reusedSocket) established = true;
      else socket.once('secureConnect', () => (established = true));
    });
    req.on('error', (err: NodeJS.ErrnoException) => reject(established ? err : new BeforeHandshake(err.message, err.code)));
    req.end(opts.body);
  });
}

function withoutDate(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const copy = { ...headers };
  delete copy.date;
  return copy;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, encoding: 'utf8', timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
    });
  });
}

let dir: string;
let pki: Pki;
let leaf1: Leaf;
let leaf2: Leaf;
let leaf3: Leaf;
let expired: Leaf;
let encrypted: Leaf;
const file = (name: string): string => join(dir, name);
const rootFile = (): string => join(pki.dir, 'root.pem');

beforeAll(() => {
  dir = tempDir('rcd-tls-');
  mkdirSync(join(dir, 'pki'));
  pki = createPki(join(dir, 'pki'));
  leaf1 = issueLeaf(pki, 'leaf1');
  leaf2 = issueLeaf(pki, 'leaf2');
  leaf3 = issueLeaf(pki, 'leaf3');
  expired = issueLeaf(pki, 'expired', { expired: true });
  encrypted = issueLeaf(pki, 'encrypted', { passphrase: 'correct horse' });
  writeFileSync(file('chain.pem'), pki.intermediatePem);
  writeFileSync(file('passphrase'), 'correct horse\n');
  writeFileSync(file('wrong-passphrase'), 'battery staple\n');
  for (const [name, l] of [['leaf1', leaf1], ['leaf2', leaf2], ['leaf3', leaf3], ['expired', expired], ['encrypted', encrypted]] as const) {
    writeFileSync(file(`${name}.pem`), l.certPem);
    writeFileSync(file(`${name}.key`), l.keyPem);
  }
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function tlsArgs(name: string, extra: string[] = []): string[] {
  return ['--tls-cert', file(`${name}.pem`), '--tls-key', file(`${name}.key`), '--tls-ca', file('chain.pem'), ...extra];
}

/** Request limits the servers compared over HTTP and HTTPS both have, so that refusals are compared too. */
const LIMITS = ['--max-body', '1024', '--max-combine-ids', '3'];

/**
 * The HTTPS server with leaf1 and its chain that the tests share which only speak to it or hold its
 * port; a test of rotation, of other certificates or of other flags starts its own.
 */
let secure: ServerProcess;
beforeAll(async () => {
  secure = await startServer({ bundle: BUNDLE, args: [...LIMITS, ...tlsArgs('leaf1')] });
});
afterAll(async () => {
  await secure?.dispose();
});

describe('HTTPS with a verified chain', () => {
  it('announces https and the certificate it serves', () => {
    expect(secure.url.startsWith('https://127.0.0.1:')).toBe(true);
    expect(secure.stdout()).toContain(`certificate serial ${leaf1.serial}`);
  });

  it('curl --cacert (the root only) verifies the chain: the intermediate is sent', async () => {
    const r = await run('curl', ['-sS', '--fail-with-body', '--cacert', rootFile(), '-H', `X-Api-Key: ${KEY}`, '-H', 'Content-Type: application/json', '-d', '{"u":"p1","p":{"tier":"gold"},"v":"1.0.0"}', `${secure.url}/api/v1/config/Game/dynamic`]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(parseAnswer(r.stdout).data).toEqual({ difficulty: 'normal', shop: { discount: 20 } });
    const shown = await run('sh', ['-c', `echo | openssl s_client -connect ${new URL(secure.url).host} -showcerts 2>/dev/null`]);
    expect(shown.stdout.match(/-----BEGIN CERTIFICATE-----/g)?.length).toBe(2);
  });

  it("Node's fetch verifies the chain with the root as an extra CA, and refuses without it", async () => {
    const script = `fetch(${JSON.stringify(secure.url + '/healthz')}).then(async (r) => console.log(r.status, await r.text()), (e) => { console.log('failed', e.cause?.code ?? e.message); })`;
    const trusted = await run(process.execPath, ['-e', script], { ...process.env, NODE_EXTRA_CA_CERTS: rootFile() });
    expect(trusted.stdout).toMatch(/^200 \{"status":"ok","seq":\d+,"loop":0\}/);
    const untrusted = await run(process.execPath, ['-e', script], { ...process.env, NODE_EXTRA_CA_CERTS: '' });
    expect(untrusted.stdout.trim()).toBe('failed UNABLE_TO_GET_ISSUER_CERT_LOCALLY');
  });

  it('speaks TLS 1.2 and 1.3 only, AEAD suites with forward secrecy, HTTP/1.1 without ALPN', async () => {
    const host = new URL(secure.url).host;
    const handshake = async (args: string[]): Promise<string> => (await run('sh', ['-c', `echo | openssl s_client -connect ${host} ${args.join(' ')} 2>&1`])).stdout;
    expect(await handshake(['-tls1_3'])).toMatch(/New, TLSv1\.3, Cipher is TLS_AES_\d+_GCM_SHA\d+/);
    expect(await handshake(['-tls1_2'])).toMatch(/New, TLSv1\.2, Cipher is ECDHE-RSA-AES\d+-GCM-SHA\d+/);
    expect(await handshake(['-tls1_2', '-cipher', 'ECDHE-RSA-CHACHA20-POLY1305'])).toContain('Cipher is ECDHE-RSA-CHACHA20-POLY1305');
    for (const refused of [['-tls1_1'], ['-tls1'], ['-tls1_2', '-cipher', 'ECDHE-RSA-AES128-SHA'], ['-tls1_2', '-cipher', 'AES128-GCM-SHA256']]) {
      expect(await handshake(refused)).toMatch(/alert (protocol version|handshake failure)/);
    }
    expect(await handshake(['-alpn', 'h2,http/1.1'])).toContain('No ALPN negotiated');
    const viaCurl = await run('curl', ['-sS', '--cacert', rootFile(), '-o', '/dev/null', '-w', '%{http_version}', `${secure.url}/healthz`]);
    expect(viaCurl.stdout).toBe('1.1');
  });

  it('resumes TLS 1.2 sessions', async () => {
    const r = await run('sh', ['-c', `echo | openssl s_client -connect ${new URL(secure.url).host} -tls1_2 -reconnect 2>&1`]);
    expect(r.stdout.match(/^Reused, TLSv1\.2/gm)?.length).toBe(5);
  });
});

describe('every delivery endpoint answers over HTTPS as over HTTP', () => {
  let plain: ServerProcess;
  beforeAll(async () => {
    plain = await startServer({ bundle: BUNDLE, args: LIMITS });
  });
  afterAll(async () => {
    await plain?.dispose();
  });

  const json = { 'x-api-key': KEY, 'content-type': 'application/json' };
  const body = '{"u":"player-7","p":{"tier":"gold"},"v":"1.2.3"}';
  const cases: [string, { method?: string; headers?: Record<string, string>; body?: string }][] = [
    ['/api/v1/config/Game', { headers: json, body }],
    ['/api/v1/config/Game/', { headers: json, body }],
    ['/api/v1/config/Game/dynamic', { headers: json, body }],
    ['/api/v1/config/Plain?responseType=serialized', { headers: json, body }],
    ['/api/v1/combine?c=["Game","Plain"]', { headers: json, body }],
    ['/api/v1/combine/?c=["Game","Plain","Missing"]&dynamic=true', { headers: json, body }],
    ['/api/v1/combine?c=["a","b","c","d"]', { headers: json, body }],
    ['/api/v1/env/catalog', { method: 'GET', headers: { 'x-api-key': KEY } }],
    ['/healthz', { method: 'GET' }],
    ['/healthz', { method: 'POST' }],
    ['/api/v1/config/Game', { method: 'GET', headers: json }],
    ['/api/v1/config/Game', { headers: { 'content-type': 'application/json' }, body }],
    ['/api/v1/config/Game', { headers: { 'x-api-key': 'wrong', 'content-type': 'application/json' }, body }],
    ['/api/v1/config/Game', { headers: { 'x-api-key': KEY, 'content-type': 'text/plain' }, body }],
    ['/api/v1/config/Game', { headers: json, body: '{"u":' }],
    ['/api/v1/config/Game', { headers: json, body: `{"u":"x","p":{"pad":"${'a'.repeat(2000)}"},"v":"1.0.0"}` }],
    ['/api/v1/config/Nope', { headers: json, body }],
    ['/nothing/here', { method: 'GET' }],
  ];

  it('same status, headers and body for each route and each refusal', async () => {
    for (const [path, opts] of cases) {
      const [a, b] = await Promise.all([send(plain.url, path, opts), send(secure.url, path, { ...opts, ca: pki.rootPem })]);
      const label = `${opts.method ?? 'POST'} ${path}`;
      expect(b.status, label).toBe(a.status);
      expect(b.text, label).toBe(a.text);
      expect(withoutDate(b.headers), label).toEqual(withoutDate(a.headers));
    }
    // The cases cover answers and refusals alike.
    const statuses = new Set<number>();
    for (const [path, opts] of cases) statuses.add((await send(secure.url, path, { ...opts, ca: pki.rootPem })).status);
    expect([...statuses].sort()).toEqual([200, 400, 401, 404, 405, 413]);
  });
});

describe('rotation on SIGHUP', () => {
  const ROTATIONS = 5;
  const CLIENTS = 4;
  let server: ServerProcess;
  let certs: Leaf[];
  const install = (l: Leaf, keyOf: Leaf = l): void => {
    writeFileSync(file('live.pem'), l.certPem);
    writeFileSync(file('live.key'), keyOf.keyPem);
  };
  beforeAll(async () => {
    // Six certificates, each with its own serial: the three the file issued for serving, three more.
    certs = [leaf1, leaf2, leaf3, ...Array.from({ length: ROTATIONS - 2 }, (_, i) => issueLeaf(pki, `rotation${i}`))];
    install(certs[0] as Leaf);
    const adminTls = ['--admin-tls-cert', file('live.pem'), '--admin-tls-key', file('live.key'), '--admin-tls-ca', file('chain.pem')];
    const metricsTls = ['--metrics-tls-cert', file('live.pem'), '--metrics-tls-key', file('live.key'), '--metrics-tls-ca', file('chain.pem')];
    server = await startServer({ bundle: BUNDLE, admin: true, metrics: true, args: [...tlsArgs('live'), ...adminTls, ...metricsTls, '--tls-watch-interval', '0'] });
  });
  afterAll(async () => {
    await server?.dispose();
  });

  // Zero failed requests. A connection the kernel resets while it is still in its handshake with the
  // listen socket a rotation closes (net.ipv4.tcp_migrate_req=0, the Linux default; none with 1)
  // carried no request: the client connects again, as clients do on a failed connect.
  it('new connections get each new certificate, with no failed request; a bad one is reported and the current one kept', async () => {
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1, ca: pki.rootPem });
    const headers = { 'x-api-key': KEY, 'content-type': 'application/json' };
    const generation = new Map(certs.map((c, i) => [c.serial, i]));
    // Per client, the generation of the certificate each new connection presented, in order.
    const seen: number[][] = Array.from({ length: CLIENTS }, () => []);
    const failures: string[] = [];
    let keptAlive = 0;
    let resetConnects = 0;
    let stop = false;
    const total = (): number => seen.reduce((n, s) => n + s.length, 0);
    const fresh = seen.map(async (mine) => {
      while (!stop) {
        try {
          const r = await send(server.url, '/api/v1/config/Game/dynamic', { headers, body: '{"u":"p","p":{},"v":"1.0.0"}', ca: pki.rootPem });
          if (r.status !== 200) failures.push(`status ${r.status}`);
          mine.push(generation.get(r.serial ?? '') ?? -1);
        } catch (err) {
          if (err instanceof BeforeHandshake) resetConnects++;
          else failures.push((err as Error).message);
        }
      }
    });
    const reused = (async () => {
      while (!stop) {
        try {
          const r = await send(server.url, '/api/v1/config/Plain', { headers, body: '{"u":"p","p":{},"v":"1.0.0"}', ca: pki.rootPem, agent: keepAlive });
          if (r.status !== 200) failures.push(`keep-alive status ${r.status}`);
          keptAlive++;
        } catch (err) {
          failures.push(`keep-alive: ${(err as Error).message}`);
        }
      }
    })();
    const until = async (what: () => boolean, label: string): Promise<void> => {
      const deadline = Date.now() + 20_000;
      while (!what()) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}\n${server.stderr()}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const adminSerial = async (): Promise<string | null> =>
      (await send(server.adminUrl ?? '', '/admin/v1/environments', { method: 'GET', headers: { authorization: 'Bearer test-admin-token' }, ca: pki.rootPem })).serial;
    // The metrics listener: a scrape over HTTPS verified against the root (the intermediate is sent).
    const metricsSerial = async (): Promise<string | null> => {
      const r = await send(server.metricsUrl ?? '', '/metrics', { method: 'GET', ca: pki.rootPem });
      expect(r.status).toBe(200);
      expect(r.text).toContain('rcd_http_requests_total');
      return r.serial;
    };
    try {
      await until(() => total() >= 50, 'requests before the first rotation');
      expect(server.metricsUrl).toMatch(/^https:/);
      expect(await adminSerial()).toBe(certs[0]?.serial);
      expect(await metricsSerial()).toBe(certs[0]?.serial);
      for (let g = 1; g <= ROTATIONS; g++) {
        install(certs[g] as Leaf);
        server.child.kill('SIGHUP');
        await until(() => seen.some((s) => s.includes(g)), `generation ${g}`);
        const at = total();
        await until(() => total() >= at + 50, `requests after rotation ${g}`);
      }
      expect(await adminSerial()).toBe(certs[ROTATIONS]?.serial);
      expect(await metricsSerial()).toBe(certs[ROTATIONS]?.serial);

      // A certificate with another certificate's key: reported, the current one goes on being served.
      install(certs[0] as Leaf, certs[ROTATIONS]);
      server.child.kill('SIGHUP');
      await until(() => server.stderr().split('\n').filter((l) => l.includes('TLS reload failed')).length === 3, 'the three reload failures');
      const failedAt = seen.map((s) => s.length);
      const at = total();
      await until(() => total() >= at + 50, 'requests after the failed reload');
      stop = true;
      await Promise.all([...fresh, reused]);

      expect(failures).toEqual([]);
      expect(resetConnects).toBeLessThanOrEqual(ROTATIONS);
      expect(keptAlive).toBeGreaterThan(20);
      for (const mine of seen) {
        // Each client saw the generations in order, never an older one after a newer.
        expect(mine.every((g, i) => g >= 0 && (i === 0 || g >= (mine[i - 1] as number)))).toBe(true);
      }
      expect(new Set(seen.flat())).toEqual(new Set(certs.map((_, i) => i)));
      seen.forEach((mine, c) => expect(mine.slice(failedAt[c]).every((g) => g === ROTATIONS)).toBe(true));
      // Delivery, admin and metrics each report the failure on one line, and the process goes on.
      expect(server.stdout()).toContain(`TLS reload: new connections get certificate serial ${certs[ROTATIONS]?.serial}`);
      expect(server.stdout()).toContain(`metrics TLS reload: new connections get certificate serial ${certs[ROTATIONS]?.serial}`);
      expect(server.child.exitCode).toBeNull();
      expect(await adminSerial()).toBe(certs[ROTATIONS]?.serial);
      expect(await metricsSerial()).toBe(certs[ROTATIONS]?.serial);
    } finally {
      stop = true;
      await Promise.all([...fresh, reused]);
      keepAlive.destroy();
    }
  });
});

describe('rotation when the files change', () => {
  it('a new certificate and key written in place are served without a signal', async () => {
    copyFileSync(file('leaf1.pem'), file('watched.pem'));
    copyFileSync(file('leaf1.key'), file('watched.key'));
    const server = await startServer({ args: [...tlsArgs('watched'), '--tls-watch-interval', '100'] });
    try {
      expect((await send(server.url, '/healthz', { method: 'GET', ca: pki.rootPem })).serial).toBe(leaf1.serial);
      copyFileSync(file('leaf3.pem'), file('watched.pem'));
      copyFileSync(file('leaf3.key'), file('watched.key'));
      const deadline = Date.now() + 10_000;
      let serial: string | null = null;
      while (serial !== leaf3.serial && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        serial = (await send(server.url, '/healthz', { method: 'GET', ca: pki.rootPem })).serial;
      }
      expect(serial).toBe(leaf3.serial);
      // The settle delay loads the pair together: no reload saw the certificate without its key.
      expect(server.stderr()).not.toContain('TLS reload failed');
    } finally {
      await server.dispose();
    }
  });
});

describe('HTTPS on several delivery loops', () => {
  /** The loop that answered /healthz on a new connection, and the certificate it presented. */
  async function probe(url: string): Promise<{ loop: number; serial: string | null }> {
    const r = await send(url, '/healthz', { method: 'GET', ca: pki.rootPem });
    expect(r.status).toBe(200);
    return { loop: (JSON.parse(r.text) as { loop: number }).loop, serial: r.serial };
  }

  it('every loop serves HTTPS, and SIGHUP rotates every loop to the new certificate with one log line', async () => {
    copyFileSync(file('leaf1.pem'), file('loops.pem'));
    copyFileSync(file('leaf1.key'), file('loops.key'));
    const server = await startServer({ args: [...tlsArgs('loops'), '--http-threads', '2', '--threads', '2', '--tls-watch-interval', '0'] });
    try {
      expect(server.stdout()).toContain('2 delivery loops');
      const serialsByLoop = async (want: string): Promise<Map<number, string | null>> => {
        const seen = new Map<number, string | null>();
        for (let i = 0; i < 200 && (seen.size < 2 || [...seen.values()].some((s) => s !== want)); i++) {
          const p = await probe(server.url);
          seen.set(p.loop, p.serial);
        }
        return seen;
      };
      const before = await serialsByLoop(leaf1.serial);
      expect([...before.keys()].sort()).toEqual([0, 1]);
      expect([...before.values()]).toEqual([leaf1.serial, leaf1.serial]);

      copyFileSync(file('leaf2.pem'), file('loops.pem'));
      copyFileSync(file('leaf2.key'), file('loops.key'));
      server.child.kill('SIGHUP');
      const deadline = Date.now() + 10_000;
      while (!server.stdout().includes(`TLS reload: new connections get certificate serial ${leaf2.serial}`) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(server.stdout().split('\n').filter((l) => l.includes('TLS reload: new connections get')).length).toBe(1);
      const after = await serialsByLoop(leaf2.serial);
      expect([...after.keys()].sort()).toEqual([0, 1]);
      expect([...after.values()]).toEqual([leaf2.serial, leaf2.serial]);
      expect(server.stderr()).not.toContain('TLS reload failed');
    } finally {
      await server.dispose();
    }
  });
});

describe('start-up refusals: one line, exit 1, nothing listening', () => {
  function serveUntilExit(args: string[]): Promise<Exit> {
    return serveToExit(['--store', 'memory:', '--host', '127.0.0.1', '--port', '0', '--threads', '1', '--admin', 'false', '--seed-demo', 'false', ...args], dir);
  }


  const cases: [string, () => string[], RegExp][] = [
    ['a missing certificate file', () => ['--tls-cert', file('absent.pem'), '--tls-key', file('leaf1.key')], /--tls-cert .*absent\.pem: cannot read the file \(no such file\)/],
    ['a key path that cannot be read', () => ['--tls-cert', file('leaf1.pem'), '--tls-key', dir], /--tls-key .*: cannot read the file \(it is a directory\)/],
    ['a file that holds no certificate', () => ['--tls-cert', file('leaf1.key'), '--tls-key', file('leaf1.key')], /--tls-cert .*: no PEM certificate in the file/],
    ['a key that does not match the certificate', () => ['--tls-cert', file('leaf1.pem'), '--tls-key', file('leaf2.key')], /--tls-key .*leaf2\.key: the key does not match the certificate/],
    ['a wrong passphrase', () => ['--tls-cert', file('encrypted.pem'), '--tls-key', file('encrypted.key'), '--tls-key-passphrase-file', file('wrong-passphrase')], /--tls-key .*: wrong passphrase/],
    ['an encrypted key without a passphrase', () => ['--tls-cert', file('encrypted.pem'), '--tls-key', file('encrypted.key')], /--tls-key .*: the key is encrypted and no --tls-key-passphrase-file was given/],
    ['a chain file without the issuer', () => ['--tls-cert', file('leaf1.pem'), '--tls-key', file('leaf1.key'), '--tls-ca', join(pki.dir, 'root.pem')], /--tls-ca .*: no certificate in it issued the certificate/],
    ['a certificate without its key', () => ['--tls-cert', file('leaf1.pem')], /--tls-cert and --tls-key go together/],
    ['an admin key that does not match', () => ['--admin', 'true', '--admin-port', '0', '--admin-tls-cert', file('leaf1.pem'), '--admin-tls-key', file('leaf3.key')], /--admin-tls-key .*: the key does not match/],
    ['a metrics key that does not match', () => ['--metrics-port', '0', '--metrics-tls-cert', file('leaf1.pem'), '--metrics-tls-key', file('leaf3.key')], /--metrics-tls-key .*: the key does not match/],
    ['a metrics key without its certificate', () => ['--metrics-tls-key', file('leaf1.key')], /--metrics-tls-cert and --metrics-tls-key go together/],
  ];
  for (const [name, args, line] of cases) {
    it(name, async () => {
      const r = await serveUntilExit(args());
      expect(r.code).toBe(1);
      expect(r.stdout).not.toContain('listening on');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(line);
    });
  }

  it('an expired certificate: a warning, and the server starts', async () => {
    const server = await startServer({ args: ['--tls-cert', file('expired.pem'), '--tls-key', file('expired.key'), '--tls-ca', file('chain.pem')] });
    try {
      expect(server.stderr()).toMatch(/^rcd: warning: --tls-cert .*expired\.pem: the certificate \(serial [0-9A-F]+\) expired on 2020-02-01T00:00:00\.000Z/m);
      const r = await send(server.url, '/healthz', { method: 'GET', ca: pki.rootPem }).catch((err: Error & { code?: string }) => err.code);
      expect(r).toBe('CERT_HAS_EXPIRED');
    } finally {
      await server.dispose();
    }
  });

  it('an encrypted key with its passphrase file serves', async () => {
    const server = await startServer({ args: ['--tls-cert', file('encrypted.pem'), '--tls-key', file('encrypted.key'), '--tls-key-passphrase-file', file('passphrase'), '--tls-ca', file('chain.pem')] });
    try {
      const r = await send(server.url, '/healthz', { method: 'GET', ca: pki.rootPem });
      expect(r.status).toBe(200);
      expect(r.serial).toBe(encrypted.serial);
    } finally {
      await server.dispose();
    }
  });

  it('the HTTPS port held by another rcd: the second start stops with one line', async () => {
    const first = secure;
    const port = new URL(first.url).port;
    const r = await serveUntilExit(['--port', port, ...tlsArgs('leaf1')]);
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n')).toEqual([`rcd: error: cannot listen on 127.0.0.1:${port} (the port is in use or not permitted)`]);
    expect((await send(first.url, '/healthz', { method: 'GET', ca: pki.rootPem })).status).toBe(200);
  });
});
