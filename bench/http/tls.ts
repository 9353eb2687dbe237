/**
 * `npm run bench:tls [-- --duration S --connections N --rounds N --key rsa|ec --scenario NAME]`
 *
 * What HTTPS costs on the delivery listener, against what it costs bare uWS: the real server and the
 * bare-uWS ceiling (bench/harness/ceiling.ts, the same response bytes) over plain HTTP and over HTTPS, each
 * in two modes: keep-alive (requests on open connections: the cost of encrypting) and one request per
 * connection (wrk's `Connection: close`: a full TCP and TLS handshake per request, as wrk never
 * resumes a session). The target: the server's ratio to its ceiling over HTTPS within noise of the
 * ratio over HTTP. A third transport puts nginx (docs/nginx/rcd.conf, one worker) in front of the
 * HTTP server to terminate HTTPS, the deployment docs/deployment.md recommends, against the same
 * HTTPS ceiling.
 *
 * A certificate is made with openssl for the run (RSA-2048 by default, or ECDSA P-256 with --key ec:
 * the handshake's signature is most of its cost). wrk (C) drives every run, one thread; rounds run
 * ceiling then server, per mode, so a slow minute of a shared machine lands on both.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { CeilingAnswer } from '../harness/ceiling-protocol.js';
import { repoRoot, writeBundle } from '../fixtures/generate.js';
import { localResultsDir } from '../harness/results-dir.js';
import { Supervisor, startCeiling, startServer, type Target } from '../harness/processes.js';
import { fmtInt, freeResultStem, hostTag, textTable } from '../load/report.js';
import { BASE_SEED, scenarioByName, type RequestEntry } from '../harness/scenarios.js';
import { medianOfRuns, runWrk, wrkAvailable, writeWrkScript, type WrkStats } from '../harness/wrk.js';
// The nginx the e2e tests run, on the file docs/deployment.md recommends.
import { findNginx, startNginx, type NginxProcess } from '../../test/helpers/nginx.js';

const USAGE = `usage: npm run bench:tls -- [options]
  --scenario NAME      a scenario answered 200 (default mapped)
  --duration S         seconds per wrk run (default 5, max 120)
  --connections N      wrk connections (default 50)
  --rounds N           rounds; each runs every mode, ceiling then server (default 1, max 10)
  --key rsa|ec         the certificate's key: RSA-2048 (default) or ECDSA P-256
  --out DIR            where the JSON and Markdown results go (default $RCD_BENCH_RESULTS, else bench/results/local)`;

interface Options {
  readonly scenario: string;
  readonly durationSec: number;
  readonly connections: number;
  readonly rounds: number;
  readonly key: 'rsa' | 'ec';
  readonly outDir: string;
}

function options(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      scenario: { type: 'string' },
      duration: { type: 'string' },
      connections: { type: 'string' },
      rounds: { type: 'string' },
      key: { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const int = (name: string, raw: string | undefined, fallback: number, max: number): number => {
    const n = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`--${name} must be an integer in 1..${max}\n${USAGE}`);
    return n;
  };
  const key = values.key ?? 'rsa';
  if (key !== 'rsa' && key !== 'ec') throw new Error(`--key must be rsa or ec\n${USAGE}`);
  return {
    scenario: values.scenario ?? 'mapped',
    durationSec: int('duration', values.duration, 5, 120),
    connections: int('connections', values.connections, 50, 10_000),
    rounds: int('rounds', values.rounds, 1, 10),
    key,
    outDir: values.out ?? localResultsDir(),
  };
}

/** A self-signed certificate for 127.0.0.1 (wrk does not verify; the e2e tests cover verification). */
function makeCertificate(dir: string, key: 'rsa' | 'ec'): { cert: string; key: string } {
  const keyArgs = key === 'rsa' ? ['-newkey', 'rsa:2048'] : ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
  const files = { cert: join(dir, 'bench-cert.pem'), key: join(dir, 'bench-key.pem') };
  execFileSync('openssl', ['req', '-x509', ...keyArgs, '-nodes', '-keyout', files.key, '-out', files.cert, '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return files;
}

const WARMUP_SEC = 1;

/** What the client speaks to: rcd over HTTP, rcd over HTTPS, or nginx terminating HTTPS in front of rcd over HTTP. */
type Transport = 'http' | 'https' | 'https via nginx';
const TRANSPORTS: readonly Transport[] = ['http', 'https', 'https via nginx'];
type Mode = 'keep-alive' | 'new connection per request';
const MODES: readonly Mode[] = ['keep-alive', 'new connection per request'];

interface Cell {
  readonly transport: Transport;
  readonly mode: Mode;
  readonly ceiling: WrkStats;
  readonly server: WrkStats;
  readonly ratio: number;
}

async function probeAnswer(server: Target, pool: readonly RequestEntry[]): Promise<CeilingAnswer> {
  const e = pool[0] as RequestEntry;
  const init: RequestInit = { method: e.method, headers: e.headers };
  if (e.body !== undefined) init.body = e.body;
  const res = await fetch(server.url + e.path, init);
  const answer = { status: res.status, body: await res.text() };
  if (answer.status !== 200) throw new Error(`the probe got ${answer.status}: ${answer.body.slice(0, 200)}`);
  return answer;
}

async function main(): Promise<void> {
  const opts = options(process.argv.slice(2));
  if (!wrkAvailable()) throw new Error('bench:tls needs wrk on PATH (Debian: apt-get install wrk)');
  const sup = new Supervisor();
  sup.installCleanup('the TLS benchmark');
  let nginx: NginxProcess | null = null;
  try {
    const dir = sup.tempDir('rcd-bench-tls-');
    const bundle = join(dir, 'bundle.json');
    writeBundle(bundle);
    const tls = makeCertificate(dir, opts.key);
    const root = repoRoot();
    const scenario = scenarioByName(opts.scenario);
    const pool = scenario.pool(BASE_SEED);
    process.stdout.write(`starting servers (scenario ${scenario.name}, ${opts.key === 'rsa' ? 'RSA-2048' : 'ECDSA P-256'} certificate)... `);
    const nginxBinary = findNginx();
    if (nginxBinary === null) throw new Error('bench:tls needs nginx (Debian: apt-get install nginx)');
    const http = await startServer(sup, { root, store: `sqlite:${join(dir, 'http.db')}`, bundle, threads: null, label: 'HTTP server' });
    const https = await startServer(sup, { root, store: `sqlite:${join(dir, 'https.db')}`, bundle, threads: null, label: 'HTTPS server', args: ['--tls-cert', tls.cert, '--tls-key', tls.key] });
    nginx = await startNginx(nginxBinary, Number(new URL(http.url).port), 'warn', tls);
    const servers: Record<Transport, string> = { http: http.url, https: https.url, 'https via nginx': nginx.url };
    const httpsCeiling = await startCeiling(sup, tls);
    // nginx in front of rcd is held against the same bare-uWS HTTPS ceiling as rcd serving HTTPS itself.
    const ceilings: Record<Transport, Target> = { http: await startCeiling(sup), https: httpsCeiling, 'https via nginx': httpsCeiling };
    const answer = await probeAnswer(http, pool);
    for (const c of new Set(Object.values(ceilings))) await c.configure({ ok: answer, validKey: null, unauthorized: null });
    const scripts: Record<Mode, string> = {
      'keep-alive': writeWrkScript(dir, 'keep-alive', pool),
      'new connection per request': writeWrkScript(dir, 'close', pool.map((e) => ({ ...e, headers: { ...e.headers, connection: 'close' } }))),
    };
    process.stdout.write(`ok; ${opts.rounds} round(s) of ${opts.durationSec} s per run, ${opts.connections} connections\n`);

    const runs = new Map<string, { ceiling: WrkStats[]; server: WrkStats[] }>();
    const track = (c: Parameters<Supervisor['track']>[0]): void => void sup.track(c);
    // Warm-up, not counted: JIT, the front cache, and the kernel's socket and TLS allocations.
    process.stdout.write('warm-up... ');
    for (const mode of MODES) {
      for (const url of [...Object.values(servers), ceilings.http.url, ceilings.https.url]) await runWrk(url + '/', scripts[mode], opts.connections, WARMUP_SEC, track);
    }
    process.stdout.write('done\n');
    for (let round = 1; round <= opts.rounds && !sup.stopping; round++) {
      for (const mode of MODES) {
        for (const transport of TRANSPORTS) {
          const k = `${transport}|${mode}`;
          const slot = runs.get(k) ?? { ceiling: [], server: [] };
          runs.set(k, slot);
          process.stdout.write(`round ${round}: ${transport} ${mode}... `);
          slot.ceiling.push(await runWrk(ceilings[transport].url + '/', scripts[mode], opts.connections, opts.durationSec, track));
          slot.server.push(await runWrk(servers[transport] + '/', scripts[mode], opts.connections, opts.durationSec, track));
          const last = (xs: WrkStats[]): string => fmtInt((xs[xs.length - 1] as WrkStats).reqPerSec);
          process.stdout.write(`ceiling ${last(slot.ceiling)} req/s, server ${last(slot.server)} req/s\n`);
        }
      }
    }
    const cells: Cell[] = [];
    for (const mode of MODES) {
      for (const transport of TRANSPORTS) {
        const slot = runs.get(`${transport}|${mode}`);
        if (slot === undefined) continue;
        const ceiling = medianOfRuns(slot.ceiling);
        const server = medianOfRuns(slot.server);
        cells.push({ transport, mode, ceiling, server, ratio: server.reqPerSec / ceiling.reqPerSec });
      }
    }
    // wrk counts every connection the server closes after its answer as a read error, so with
    // `Connection: close` only non-2xx answers are errors (wrk counts a request once its answer is whole).
    const errorsOf = (c: Cell): number => c.server.non2xx + (c.mode === 'keep-alive' ? c.server.socketErrors : 0);
    const problems = cells.filter((c) => c.ceiling.non2xx > 0 || errorsOf(c) > 0);
    const table = textTable(
      ['transport', 'mode', 'ceiling req/s', 'server req/s', 'ratio', 'ceiling p99 ms', 'server p99 ms', 'server errors'],
      cells.map((c) => [
        c.transport,
        c.mode,
        fmtInt(c.ceiling.reqPerSec),
        fmtInt(c.server.reqPerSec),
        c.ratio.toFixed(2),
        c.ceiling.latencyMs.p99.toFixed(2),
        c.server.latencyMs.p99.toFixed(2),
        String(errorsOf(c)),
      ]),
    );
    process.stdout.write(`\n${table}\n`);
    const meta = {
      date: new Date().toISOString(),
      host: hostTag(),
      cpus: cpus().length,
      loadavg: loadavg(),
      scenario: scenario.name,
      key: opts.key,
      durationSec: opts.durationSec,
      connections: opts.connections,
      rounds: opts.rounds,
      responseBytes: Buffer.byteLength(answer.body),
    };
    const stem = freeResultStem(opts.outDir, `${meta.date.slice(0, 10)}-${meta.host}-tls-${opts.key}`);
    writeFileSync(`${stem}.json`, JSON.stringify({ meta, cells }, null, 2) + '\n');
    writeFileSync(
      `${stem}.md`,
      `# TLS benchmark ${meta.date}\n\nScenario ${meta.scenario}, ${opts.key === 'rsa' ? 'RSA-2048' : 'ECDSA P-256'} certificate, ` +
        `wrk -t1 -c${opts.connections}, ${opts.rounds} round(s) of ${opts.durationSec} s, ${meta.cpus} CPUs, load ${meta.loadavg.map((l) => l.toFixed(2)).join(' ')}, ` +
        `response ${meta.responseBytes} bytes.\n\n\`\`\`\n${table}\n\`\`\`\n`,
    );
    process.stdout.write(`results: ${stem}.json, ${stem}.md\n`);
    if (problems.length > 0) {
      process.stderr.write(`errors or non-2xx answers in: ${problems.map((c) => `${c.transport} ${c.mode}`).join(', ')}\n`);
      process.exitCode = 1;
    }
  } finally {
    await nginx?.stop();
    await sup.stopAll();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
