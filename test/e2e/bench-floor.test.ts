// The floor (`npm run bench -- --target floor`, bench/harness/ceiling.ts --floor) is read as "the most any
// server on this uWS build can reach": that holds only if it really pays for what every request of the
// delivery API needs. These tests hold it to that with real processes and raw bytes: it parses the body
// (a body that is not JSON gets 400, where the ceiling answers anything), it refuses ambiguous framing
// like rcd, and the suite labels a floor run as one.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchResults } from '../../bench/load/results.js';
import type { Supervisor as SupervisorType, Target } from '../../bench/harness/processes.js';
import { rawExchange, responsesIn, type RawOutcome } from '../helpers/raw.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
// The compiled suite: the ceiling is forked from dist/bench/harness/ceiling.js beside it.
const processes = (await import(join(root, 'dist/bench/harness/processes.js'))) as typeof import('../../bench/harness/processes.js');

const BODY = '{"data":{"shown":true}}';
let sup: SupervisorType;
let floor: Target;
let ceiling: Target;

function post(target: Target, path: string, body: string, extraHead = ''): Promise<RawOutcome> {
  const port = Number(new URL(target.url).port);
  const head = `POST ${path} HTTP/1.1\r\nHost: bench\r\nX-Api-Key: k\r\nContent-Type: application/json\r\n${extraHead || `Content-Length: ${Buffer.byteLength(body)}\r\n`}\r\n`;
  return rawExchange(port, [head + body], { untilResponses: 1, waitMs: 2000 });
}

beforeAll(async () => {
  sup = new processes.Supervisor();
  floor = await processes.startCeiling(sup, null, 1, true);
  ceiling = await processes.startCeiling(sup, null, 1, false);
  for (const t of [floor, ceiling]) await t.configure({ ok: { status: 200, body: BODY }, validKey: null, unauthorized: null });
}, 60_000);

afterAll(async () => {
  await sup.stopAll();
});

describe('the floor (bench/harness/ceiling.ts --floor)', () => {
  it('answers a JSON body with the configured answer, as the ceiling does', async () => {
    for (const t of [floor, ceiling]) {
      const r = await post(t, '/api/v1/config/Item/dynamic', '{"u":"user-1","p":{"level":3},"v":"1.2.0"}');
      const [answer] = responsesIn(r.bytes);
      expect(answer?.status).toBe(200);
      expect(answer?.body.toString()).toBe(BODY);
    }
  });

  it('parses the body: one that is not JSON gets 400 invalid_json from the floor and 200 from the ceiling', async () => {
    const f = responsesIn((await post(floor, '/api/v1/config/Item', '{"u": not json')).bytes)[0];
    expect(f?.status).toBe(400);
    expect((JSON.parse(f!.body.toString()) as { error: { code: string } }).error.code).toBe('invalid_json');
    const c = responsesIn((await post(ceiling, '/api/v1/config/Item', '{"u": not json')).bytes)[0];
    expect(c?.status).toBe(200);
  });

  it('parses a body that arrives in several reads (the pieces before the last are copied)', async () => {
    const port = Number(new URL(floor.url).port);
    const body = JSON.stringify({ u: 'user-2', p: { tags: 'x'.repeat(2000) } });
    const head = `POST /api/v1/combine HTTP/1.1\r\nHost: bench\r\nX-Api-Key: k\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const r = await rawExchange(port, [head + body.slice(0, 700), body.slice(700, 1500), body.slice(1500)], { untilResponses: 1, waitMs: 2000 });
    const [answer] = responsesIn(r.bytes);
    expect(answer?.status).toBe(200);
    expect(answer?.body.toString()).toBe(BODY);
  });

  it('closes the connection on two Content-Length headers without answering, as rcd does', async () => {
    const body = '{"u":"a"}';
    const r = await post(floor, '/api/v1/config/Item', body, `Content-Length: 2\r\nContent-Length: ${body.length}\r\n`);
    expect(r.closed).toBe(true);
    expect(r.status).toBe(0);
    // The ceiling pays for no such check: it answers.
    const c = await post(ceiling, '/api/v1/config/Item', body, `Content-Length: ${body.length}\r\nContent-Length: ${body.length}\r\n`);
    expect(c.status).toBe(200);
  });

  it("sends a pool's answers (bench:cost's floor) in the pool's order, each with its own headers, from the first again after the last", async () => {
    const a = { status: 200, body: '{"data":{"a":1}}', headers: { 'cache-control': 'private, max-age=60', etag: '"t.a.17"' } };
    const b = { status: 200, body: '{"data":{"b":22}}', headers: { 'cache-control': 'private, max-age=60', etag: '"t.b.17"' } };
    await floor.configure({ ok: { status: 200, body: BODY }, validKey: null, unauthorized: null, pool: { answers: [a, b], order: [0, 1, 1] } });
    try {
      const sent: { body: string; etag: string | undefined }[] = [];
      for (let i = 0; i < 4; i++) {
        const [answer] = responsesIn((await post(floor, '/api/v1/config/Item/dynamic', '{"u":"user-3","p":{}}')).bytes);
        expect(answer?.status).toBe(200);
        expect(answer?.headers).toMatch(/^content-type: application\/json$/im);
        expect(answer?.headers).toMatch(/^cache-control: private, max-age=60$/im);
        sent.push({ body: answer!.body.toString(), etag: /^etag: (.*)$/im.exec(answer!.headers)?.[1]?.trim() });
      }
      expect(sent).toEqual([
        { body: a.body, etag: '"t.a.17"' },
        { body: b.body, etag: '"t.b.17"' },
        { body: b.body, etag: '"t.b.17"' },
        { body: a.body, etag: '"t.a.17"' },
      ]);
      // Still the floor: a body that is not JSON is refused whatever the pool.
      expect(responsesIn((await post(floor, '/api/v1/config/Item', '{"u": not json')).bytes)[0]?.status).toBe(400);
    } finally {
      await floor.configure({ ok: { status: 200, body: BODY }, validKey: null, unauthorized: null });
    }
    const [again] = responsesIn((await post(floor, '/api/v1/config/Item', '{"u":"user-4"}')).bytes);
    expect(again?.body.toString()).toBe(BODY);
  });
});

describe('npm run bench -- --target floor', () => {
  it('runs the suite with the floor in the server column and says so in the terminal, the JSON and the summary', async () => {
    const outDir = mkdtempSync(join(tmpdir(), 'rcd-bench-floor-test-'));
    try {
      const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
        const child = spawn(process.execPath, [join(root, 'dist/bench/load/run.js'), '--smoke', '--target', 'floor', '--scenario', 'plain,catalog', '--duration', '1', '--out', outDir], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
        let text = '';
        child.stdout.on('data', (d: Buffer) => (text += d.toString()));
        child.stderr.on('data', (d: Buffer) => (text += d.toString()));
        const timer = setTimeout(() => {
          child.kill('SIGTERM');
          reject(new Error(`floor run did not finish:\n${text}`));
        }, 120_000);
        child.on('exit', (exitCode) => {
          clearTimeout(timer);
          resolve({ code: exitCode, output: text });
        });
      });
      expect(code, output).toBe(0);
      expect(output).toMatch(/^floor http:\/\/127\.0\.0\.1:\d+ \(pid \d+/m);
      expect(output).toMatch(/^plain: probing\.\.\. autocannon 1s each: ceiling [\d,]+ req\/s \([\d.]+ µs CPU\/req\), floor [\d,]+ req\/s/m);
      expect(output).toContain('FLOOR RUN: "server" below is the floor');
      const json = readdirSync(outDir).find((f) => f.endsWith('.json'))!;
      const results = JSON.parse(readFileSync(join(outDir, json), 'utf8')) as BenchResults;
      expect(results.target).toBe('floor');
      expect(results.ok).toBe(true);
      for (const s of results.scenarios) {
        expect(s.server.errors, s.key).toBe(0);
        expect(s.server.mismatches, s.key).toBe(0);
        expect(s.server.requests, s.key).toBeGreaterThan(0);
      }
      expect(readFileSync(join(outDir, json.replace(/\.json$/, '.md')), 'utf8')).toContain('FLOOR RUN');
    } finally {
      rmSync(outDir, { recursive: true, force: true });
    }
  }, 150_000);

  it('refuses an unknown --target with exit code 2', async () => {
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [join(root, 'dist/bench/load/run.js'), '--target', 'nginx'], { cwd: root, stdio: 'ignore' });
      child.on('exit', resolve);
    });
    expect(code).toBe(2);
  });
});
