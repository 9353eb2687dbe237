/**
 * `npm run bench:http`: the figures of the HTTP features, each side by side with what it is judged
 * against, loaded one after the other in alternating rounds (wrk, one thread):
 *
 * 1. wire bytes of the 512 KiB content (plain: identity, gzip, br; wrapped large-hit: identity, gzip);
 * 2. large-hit (512 KiB wrapped, front-cache hits) with `Accept-Encoding: gzip` against the same
 *    requests uncompressed: req/s and server CPU per request;
 * 3. the 304 path (mapped requests that send the ETag they were given) against a bare-uWS ceiling
 *    answering the same 304 (same headers) after reading the body, and the floor (the same 304 after
 *    the uWS calls and body parse any server needs: bench/harness/ceiling.ts --floor) against that ceiling;
 * 4. N idle change streams (default 10,000; run first, on a fresh server): the server's RSS before
 *    and after, and the time from an admin write being sent until every stream received its event.
 *
 * Options: --rounds N (default 3), --duration S (default 5), --connections N (default 50),
 * --streams N (default 10000), --streams-only (pass 4 alone). The machine is shared: read ratios,
 * not absolute figures.
 */
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { request } from 'node:http';
import { gzipSync } from 'node:zlib';
import { BENCH_KEY, LARGE_ID, repoRoot, writeBundle } from '../fixtures/generate.js';
import { memoryStatus, processCpuMicros } from '../harness/measure.js';
import { Supervisor, drain, freePort, startCeiling, type Target } from '../harness/processes.js';
import { scenarioByName, BASE_SEED, type RequestEntry } from '../harness/scenarios.js';
import { runWrk, wrkAvailable, writeWrkScript } from '../harness/wrk.js';

interface Options {
  rounds: number;
  duration: number;
  connections: number;
  streams: number;
  streamsOnly: boolean;
}

function options(argv: string[]): Options {
  const o: Options = { rounds: 3, duration: 5, connections: 50, streams: 10_000, streamsOnly: false };
  const rest = argv.filter((a) => a !== '--streams-only');
  o.streamsOnly = rest.length !== argv.length;
  argv = rest;
  for (let i = 0; i < argv.length; i += 2) {
    const v = Number(argv[i + 1]);
    if (!Number.isInteger(v) || v < 1) throw new Error(`${argv[i]} needs a positive integer`);
    if (argv[i] === '--rounds') o.rounds = v;
    else if (argv[i] === '--duration') o.duration = v;
    else if (argv[i] === '--connections') o.connections = v;
    else if (argv[i] === '--streams') o.streams = v;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

const sup = new Supervisor();
const ADMIN_TOKEN = 'bench-http-admin-token-0001';

/** The server with its admin listener (the stream pass edits through it). */
async function startServerWithAdmin(dbPath: string, bundle: string): Promise<Target & { adminUrl: string }> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const args = [join(repoRoot(), 'bin', 'rcd.js'), 'serve', '--store', `sqlite:${dbPath}`, '--import', bundle, '--host', '127.0.0.1'];
  args.push('--port', String(port), '--admin-port', String(adminPort), '--max-streams', '1000000', '--seed-demo', 'false');
  const child = sup.track(spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RCD_ADMIN_TOKEN: ADMIN_TOKEN, RCD_METRICS_PORT: '0', RCD_LOG_FORMAT: 'pretty' } }));
  const tail: string[] = [];
  drain(child.stderr as NodeJS.ReadableStream, tail);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${tail.join('\n')}`)), 120_000);
    drain(child.stdout as NodeJS.ReadableStream, tail, (line) => {
      if (/^rcd: listening on/.test(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    pid: child.pid as number,
    child,
    configure: () => Promise.reject(new Error('not configurable')),
  };
}

interface Exchange {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function exchange(url: string, e: RequestEntry, extra: Record<string, string>): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const req = request(url + e.path, { method: e.method, headers: { ...e.headers, ...extra }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(e.body);
  });
}

interface Measured {
  rps: number;
  cpuUsPerReq: number;
}

async function measure(target: Target, script: string, o: Options): Promise<Measured> {
  const cpu0 = processCpuMicros(target.pid);
  const stats = await runWrk(target.url, script, o.connections, o.duration, (c) => sup.track(c));
  if (stats.socketErrors > 0) throw new Error(`wrk reported ${stats.socketErrors} socket errors against ${target.url}`);
  const cpu = processCpuMicros(target.pid) - cpu0;
  const requests = stats.reqPerSec * o.duration;
  return { rps: stats.reqPerSec, cpuUsPerReq: cpu / requests };
}

function withHeaders(pool: readonly RequestEntry[], headers: (e: RequestEntry, i: number) => Record<string, string>): RequestEntry[] {
  return pool.map((e, i) => ({ ...e, headers: { ...e.headers, ...headers(e, i) } }));
}

function line(label: string, m: Measured): string {
  return `${label.padEnd(34)} ${m.rps.toFixed(0).padStart(8)} req/s  ${m.cpuUsPerReq.toFixed(1).padStart(7)} µs CPU/req`;
}

async function alternate(o: Options, a: () => Promise<Measured>, b: () => Promise<Measured>, la: string, lb: string): Promise<void> {
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  for (let r = 0; r < o.rounds; r++) {
    const ma = await a();
    const mb = await b();
    console.log(`  round ${r + 1}: ${line(la, ma)}\n           ${line(lb, mb)}`);
    ratios.push(ma.rps / mb.rps);
    cpuRatios.push(ma.cpuUsPerReq / mb.cpuUsPerReq);
  }
  const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
  console.log(`  ${la} / ${lb}: req/s ${mean(ratios).toFixed(3)} (min ${Math.min(...ratios).toFixed(3)}, max ${Math.max(...ratios).toFixed(3)}), CPU/req ${mean(cpuRatios).toFixed(3)}`);
}

async function streamsPass(srv: Target & { adminUrl: string }, o: Options): Promise<void> {
  const rssBefore = memoryStatus(srv.pid).rss;
  const sockets: Socket[] = [];
  const readyAt: number[] = [];
  const eventAt: number[] = [];
  const port = Number(new URL(srv.url).port);
  const head = `GET /api/v1/env/events HTTP/1.1\r\nHost: bench\r\nX-Api-Key: ${BENCH_KEY}\r\n\r\n`;
  const open = (i: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1');
      let text = '';
      s.setEncoding('utf8');
      s.on('data', (d: string) => {
        text += d;
        if (readyAt[i] === undefined && text.includes('event: ready')) {
          readyAt[i] = Date.now();
          resolve();
        }
        if (eventAt[i] === undefined && text.includes('event: change')) eventAt[i] = performance.now();
      });
      s.on('error', reject);
      s.write(head);
      sockets.push(s);
    });
  for (let i = 0; i < o.streams; i += 500) {
    await Promise.all(Array.from({ length: Math.min(500, o.streams - i) }, (_, k) => open(i + k)));
  }
  await new Promise((r) => setTimeout(r, 1000));
  const rssAfter = memoryStatus(srv.pid).rss;
  const mib = (b: number): string => (b / 1048576).toFixed(1);
  console.log(`  ${o.streams} idle streams open: server RSS ${mib(rssBefore)} -> ${mib(rssAfter)} MiB (+${mib(rssAfter - rssBefore)} MiB, ${((rssAfter - rssBefore) / o.streams).toFixed(0)} bytes a stream)`);
  // A request every few ms on the delivery port while the events go out: how long the loop is held.
  let probing = true;
  const probeLatencies: number[] = [];
  const probe = (async (): Promise<void> => {
    while (probing) {
      const at = performance.now();
      await (await fetch(`${srv.url}/healthz`)).arrayBuffer();
      probeLatencies.push(performance.now() - at);
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  const t0 = performance.now();
  const res = await fetch(`${srv.adminUrl}/admin/v1/environments/bench/content/${LARGE_ID}/mapping`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ rules: [{ segment: 'bench-edit', patch: { benchEdit: 1 } }] }),
  });
  const answered = performance.now();
  if (!res.ok) throw new Error(`admin write failed: ${res.status} ${await res.text()}`);
  const deadline = Date.now() + 10_000;
  while (eventAt.filter((t) => t !== undefined).length < o.streams && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  probing = false;
  await probe;
  const got = eventAt.filter((t) => t !== undefined).map((t) => t - t0).sort((a, b) => a - b);
  const worst = [...probeLatencies].sort((a, b) => b - a);
  console.log(`  /healthz probed ${probeLatencies.length} times meanwhile: slowest ${worst[0]?.toFixed(1)} ms, then ${worst[1]?.toFixed(1)}, ${worst[2]?.toFixed(1)} ms`);
  const pct = (p: number): string => (got[Math.min(got.length - 1, Math.floor((p / 100) * got.length))] ?? NaN).toFixed(1);
  console.log(`  edit -> events: ${got.length}/${o.streams} streams got it; admin write answered after ${(answered - t0).toFixed(1)} ms; first ${pct(0)} ms, p50 ${pct(50)}, p99 ${pct(99)}, last ${pct(100)} ms after the write was sent`);
  for (const s of sockets) s.destroy();
  // The same write with no stream open: what the write costs without the fan-out.
  await new Promise((r) => setTimeout(r, 500));
  const t1 = performance.now();
  const again = await fetch(`${srv.adminUrl}/admin/v1/environments/bench/content/${LARGE_ID}/mapping`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    body: JSON.stringify({ rules: [{ segment: 'bench-edit-2', patch: { benchEdit: 2 } }] }),
  });
  if (!again.ok) throw new Error(`admin write failed: ${again.status}`);
  console.log(`  the same kind of write with no stream open answered after ${(performance.now() - t1).toFixed(1)} ms`);
}

async function main(): Promise<void> {
  const o = options(process.argv.slice(2));
  sup.installCleanup('bench:http');
  if (!wrkAvailable()) throw new Error('wrk is needed (apt-get install wrk)');
  const dir = sup.tempDir('rcd-bench-http-');
  const bundle = join(dir, 'bundle.json');
  writeBundle(bundle);
  const srv = await startServerWithAdmin(join(dir, 'bench.db'), bundle);
  const ceiling = await startCeiling(sup);
  console.log(`bench:http, ${o.rounds} rounds of ${o.duration} s, ${o.connections} connections; the machine is shared (load ${(await import('node:os')).loadavg()[0]!.toFixed(1)})`);

  // 4. idle streams, first: on a server no load has grown yet
  console.log('4. change streams');
  await streamsPass(srv, o);

  if (o.streamsOnly) return;

  // 1. wire bytes
  const large = scenarioByName('large-hit').pool(BASE_SEED).slice(0, 64);
  const plainLarge: RequestEntry = { ...large[0]!, path: `/api/v1/config/${LARGE_ID}` };
  for (const [label, e] of [['plain 512 KiB', plainLarge], ['wrapped 512 KiB (large-hit)', large[0]!]] as const) {
    const sizes: string[] = [];
    for (const coding of ['identity', 'gzip', 'br']) {
      const r = await exchange(srv.url, e, { 'accept-encoding': coding });
      sizes.push(`${coding}${r.headers['content-encoding'] === undefined ? '(sent identity)' : ''} ${r.body.length}`);
    }
    const id = (await exchange(srv.url, e, { 'accept-encoding': 'identity' })).body;
    console.log(`1. ${label}: ${sizes.join(', ')} bytes; gzip ${((100 * (await exchange(srv.url, e, { 'accept-encoding': 'gzip' })).body.length) / id.length).toFixed(1)}% of raw (zlib -6 of the whole: ${gzipSync(id).length})`);
  }

  // 2. large-hit gzip vs identity
  for (const e of large) await exchange(srv.url, e, {});
  const scriptId = writeWrkScript(dir, 'large-identity', withHeaders(large, () => ({ 'accept-encoding': 'identity' })));
  const scriptGz = writeWrkScript(dir, 'large-gzip', withHeaders(large, () => ({ 'accept-encoding': 'gzip' })));
  console.log('2. large-hit, Accept-Encoding: gzip against identity');
  await alternate(o, () => measure(srv, scriptGz, o), () => measure(srv, scriptId, o), 'large-hit gzip', 'large-hit identity');

  // 3. the 304 path against a ceiling answering the same 304
  const mapped = scenarioByName('mapped').pool(BASE_SEED).slice(0, 256);
  const tags: string[] = [];
  for (const e of mapped) tags.push((await exchange(srv.url, e, {})).headers.etag as string);
  const first = await exchange(srv.url, mapped[0]!, { 'if-none-match': tags[0]! });
  if (first.status !== 304) throw new Error(`expected 304, got ${first.status}`);
  const answer304 = {
    ok: { status: 304, body: '', headers: { etag: tags[0]!, 'cache-control': 'private, no-cache', vary: 'accept-encoding, x-api-key' } },
    validKey: null,
    unauthorized: null,
  };
  await ceiling.configure(answer304);
  const script304 = writeWrkScript(dir, 'mapped-304', withHeaders(mapped, (_e, i) => ({ 'if-none-match': tags[i]! })));
  console.log('3. mapped with If-None-Match (304) against a bare-uWS ceiling answering the same 304, and against the same requests answered 200');
  await alternate(o, () => measure(srv, script304, o), () => measure(ceiling, script304, o), 'rcd 304', 'ceiling 304');
  const script200 = writeWrkScript(dir, 'mapped-200', mapped);
  await alternate(o, () => measure(srv, script304, o), () => measure(srv, script200, o), 'rcd 304', 'rcd 200 (same requests)');
  // The floor (bench/harness/ceiling.ts --floor) answering the same 304 after the header reads, the framing
  // check and the body parse every such request needs: the most any server on this uWS build reaches.
  const floor = await startCeiling(sup, null, 1, true);
  await floor.configure(answer304);
  await alternate(o, () => measure(floor, script304, o), () => measure(ceiling, script304, o), 'floor 304', 'ceiling 304');

}

main()
  .catch((err: unknown) => {
    process.stderr.write(`bench:http failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => sup.stopAll());
