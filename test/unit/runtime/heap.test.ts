import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { operatorSizedYoungGeneration } from '../../../src/runtime/heap.js';
import { DEFAULT_CONTENT_LIMITS } from '../../../src/shared/json-limits.js';
import { ROOT } from '../../helpers/server-process.js';

// Runs in a fresh node process (the V8 flag is process-wide and cannot be undone): churns objects
// with a steady trickle of survivors, the shape of a server under load, and reports whether the
// young generation was held and its size before and after. Modes: "default" (control), "hold",
// "hold+worker" (a worker thread starts after the hold), "hold+worker-holds" (that worker holds
// again when it loads, as src/worker/entry.ts does), "hold+import-thread" / "-unheld" (the control
// thread's import thread started by a big body, told to hold again or not).
const CHURN = `
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
const heapUrl = ${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'src', 'runtime', 'heap.js')).href)};
const heap = await import(heapUrl);
const mode = process.argv[1];
const held = mode !== 'default' && !heap.operatorSizedYoungGeneration(process.execArgv, process.env.NODE_OPTIONS);
if (held) heap.holdYoungGeneration();
let worker = null;
if (mode.startsWith('hold+worker')) {
  const code = mode === 'hold+worker-holds'
    ? 'import(' + JSON.stringify(heapUrl) + ').then((h) => { h.holdYoungGeneration(); require("node:worker_threads").parentPort.postMessage("ready"); });'
    : 'require("node:worker_threads").parentPort.postMessage("ready");';
  worker = new Worker(code, { eval: true, execArgv: [] });
  await new Promise((resolve) => worker.once('message', resolve));
}
let pool = null;
if (mode.startsWith('hold+import-thread')) {
  // The control thread's import thread (src/control/import-pool.ts), started by a body over 64 KiB.
  const { ImportPool } = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'src', 'control', 'import-pool.js')).href)});
  pool = new ImportPool({ niceIncrement: 0, holdYoungGeneration: mode === 'hold+import-thread', contentLimits: ${JSON.stringify(DEFAULT_CONTENT_LIMITS)} }, () => undefined);
  const content = {};
  for (let i = 0; i < 2000; i++) content['Item' + i] = { json: { index: i, name: 'item-' + i } };
  await pool.prepare(Buffer.from(JSON.stringify({ environments: { e: { content } } })));
}
const youngBytes = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
const before = youngBytes();
const ring = new Array(20000);
let sink = 0;
for (let i = 0; i < 3000000; i++) {
  const o = { a: i, b: 'x' + (i % 1000), c: [i, i + 1] };
  if (i % 3 === 0) ring[i % ring.length] = o;
  sink += o.c.length;
}
if (worker !== null) await worker.terminate();
if (pool !== null) await pool.close();
process.stdout.write(JSON.stringify({ held, before, after: youngBytes(), sink: sink > 0 }));
`;

interface Churn {
  held: boolean;
  before: number;
  after: number;
}

type Mode = 'default' | 'hold' | 'hold+worker' | 'hold+worker-holds' | 'hold+import-thread' | 'hold+import-thread-unheld';

function churn(mode: Mode, nodeOptions = ''): Churn {
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', CHURN, mode], {
    env: { ...process.env, NODE_OPTIONS: nodeOptions },
    encoding: 'utf8',
  });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Churn;
}

const MiB = 1024 * 1024;

describe('young generation sizing (rcd serve)', () => {
  it('keeps V8 from growing the young generation under allocation churn', () => {
    const grown = churn('default');
    const held = churn('hold');
    // The control proves the churn is enough to make V8 grow it (to 2 x 16 MiB semi-spaces on Node 20).
    expect(grown.after).toBeGreaterThanOrEqual(8 * grown.before);
    expect(held.held).toBe(true);
    expect(held.after).toBeLessThanOrEqual(2 * held.before);
    expect(held.after).toBeLessThanOrEqual(4 * MiB);
  });

  it('needs holding again in every worker thread: starting one undoes the hold', () => {
    const undone = churn('hold+worker');
    expect(undone.held).toBe(true);
    expect(undone.after).toBeGreaterThanOrEqual(8 * undone.before);
    const kept = churn('hold+worker-holds');
    expect(kept.after).toBeLessThanOrEqual(2 * kept.before);
    expect(kept.after).toBeLessThanOrEqual(4 * MiB);
  });

  it('is held again by the import thread, which starts long after the others', () => {
    const undone = churn('hold+import-thread-unheld');
    expect(undone.after).toBeGreaterThanOrEqual(8 * undone.before);
    const kept = churn('hold+import-thread');
    expect(kept.held).toBe(true);
    expect(kept.after).toBeLessThanOrEqual(2 * kept.before);
    expect(kept.after).toBeLessThanOrEqual(4 * MiB);
  });

  it("leaves the operator's own --max-semi-space-size alone", () => {
    const own = churn('hold', '--max-semi-space-size=8');
    expect(own.held).toBe(false);
    expect(own.after).toBeGreaterThan(4 * MiB);
  });

  it('recognises every way of sizing the young generation', () => {
    expect(operatorSizedYoungGeneration([], undefined)).toBe(false);
    expect(operatorSizedYoungGeneration(['--enable-source-maps'], '--max-old-space-size=512')).toBe(false);
    expect(operatorSizedYoungGeneration(['--max-semi-space-size=32'], undefined)).toBe(true);
    expect(operatorSizedYoungGeneration(['--max_semi_space_size=32'], undefined)).toBe(true);
    expect(operatorSizedYoungGeneration([], '--trace-gc --min-semi-space-size=4')).toBe(true);
    expect(operatorSizedYoungGeneration([], '--semi-space-growth-factor=4')).toBe(true);
  });
});
