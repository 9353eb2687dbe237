/**
 * How a delivery loop in a worker thread should reach the render pool (docs/architecture.md, "Several
 * delivery loops"): its own Piscina share (one hop: loop -> pool worker), or one pool in the main
 * thread reached over a MessagePort (two hops each way: loop -> main -> pool worker and back). A
 * Piscina instance belongs to the thread that created it, so those are the two shapes at hand.
 *
 * The task is the pool's shape without its work: a batch of 8 jobs answered by 8 fresh 1 KiB heads,
 * transferred. Reported: µs per batch round trip with 1 and with 16 batches in flight, and for the
 * relay the main thread's event-loop utilisation (time taken from loop 0, which serves HTTP there).
 *
 *   npm run build && node dist/bench/micro/pool-reach.js [batches]
 */
import { MessageChannel, Worker, isMainThread, workerData, type MessagePort } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';
import { Piscina, move, transferableSymbol, valueSymbol } from 'piscina';

interface Job {
  kind: number;
  revId: number;
  mappingId: number;
  comboKey: string;
}
interface Role {
  role: 'loop' | 'task';
  mode?: 'own' | 'relay';
  port?: MessagePort;
  batches?: number;
  inFlight?: number;
}

const JOBS = 8;
const HEAD_BYTES = 1024;

/** Piscina's Transferable protocol, as src/worker/entry.ts uses it. */
class Moved {
  constructor(
    private readonly value: unknown,
    private readonly list: ArrayBuffer[],
  ) {}

  get [transferableSymbol](): ArrayBuffer[] {
    return this.list;
  }

  get [valueSymbol](): unknown {
    return this.value;
  }
}

/** The pool task: one head per job, moved to the caller. */
export default function task(batch: { jobs: Job[] }): unknown {
  const heads = batch.jobs.map(() => new ArrayBuffer(HEAD_BYTES));
  return move(new Moved({ results: heads.map((head) => ({ head, seg: '', error: '' })), heads }, heads) as never);
}

function newPool(): Piscina {
  return new Piscina({ filename: import.meta.url, minThreads: 1, maxThreads: 1, idleTimeout: Number.MAX_SAFE_INTEGER, workerData: { role: 'task' } satisfies Role });
}

function batchOf(i: number): { jobs: Job[] } {
  const jobs: Job[] = [];
  for (let j = 0; j < JOBS; j++) jobs.push({ kind: 1, revId: i, mappingId: 7, comboKey: 'a|b' });
  return { jobs };
}

/** In the loop thread: `batches` round trips, `inFlight` at a time; posts µs per batch. */
async function runLoop(role: Role, report: MessagePort): Promise<void> {
  let send: (b: { jobs: Job[] }) => Promise<unknown>;
  let pool: Piscina | null = null;
  if (role.mode === 'own') {
    pool = newPool();
    const p = pool;
    send = (b) => p.run(b);
  } else {
    const port = role.port!;
    const waiting = new Map<number, (v: unknown) => void>();
    let next = 0;
    port.on('message', (m: { id: number; out: unknown }) => {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      w?.(m.out);
    });
    send = (b) =>
      new Promise((resolve) => {
        const id = next++;
        waiting.set(id, resolve);
        port.postMessage({ id, batch: b });
      });
  }
  await send(batchOf(0));
  const total = role.batches!;
  let started = 0;
  const t0 = performance.now();
  const lane = async (): Promise<void> => {
    while (started < total) {
      started++;
      await send(batchOf(started));
    }
  };
  await Promise.all(Array.from({ length: role.inFlight! }, lane));
  const us = ((performance.now() - t0) * 1000) / total;
  report.postMessage(us);
  await pool?.destroy();
  role.port?.close();
}

async function measure(mode: 'own' | 'relay', batches: number, inFlight: number): Promise<{ us: number; mainElu: number }> {
  let relayPool: Piscina | null = null;
  const transfer: MessagePort[] = [];
  const role: Role = { role: 'loop', mode, batches, inFlight };
  let mainPort: MessagePort | null = null;
  if (mode === 'relay') {
    relayPool = newPool();
    await relayPool.run(batchOf(0));
    const ch = new MessageChannel();
    mainPort = ch.port1;
    role.port = ch.port2;
    transfer.push(ch.port2);
    const pool = relayPool;
    mainPort.on('message', (m: { id: number; batch: { jobs: Job[] } }) => {
      void pool.run(m.batch).then((out: unknown) => {
        const heads = (out as { heads: ArrayBuffer[] }).heads;
        mainPort!.postMessage({ id: m.id, out }, heads);
      });
    });
  }
  const reportCh = new MessageChannel();
  const worker = new Worker(new URL(import.meta.url), { workerData: { ...role, report: reportCh.port2 }, transferList: [...transfer, reportCh.port2] });
  const elu0 = performance.eventLoopUtilization();
  const us = await new Promise<number>((resolve) => reportCh.port1.once('message', resolve));
  const mainElu = performance.eventLoopUtilization(elu0).utilization;
  reportCh.port1.close();
  mainPort?.close();
  await worker.terminate();
  await relayPool?.destroy();
  return { us, mainElu };
}

async function main(): Promise<void> {
  const batches = Number(process.argv[2] ?? '20000');
  console.log(`pool reach: ${batches} batches of ${JOBS} jobs (${HEAD_BYTES} B heads), 3 rounds each, alternating`);
  for (const inFlight of [1, 16]) {
    const own: number[] = [];
    const relay: number[] = [];
    const elu: number[] = [];
    for (let round = 0; round < 3; round++) {
      own.push((await measure('own', batches, inFlight)).us);
      const r = await measure('relay', batches, inFlight);
      relay.push(r.us);
      elu.push(r.mainElu);
    }
    const med = (a: number[]): number => [...a].sort((x, y) => x - y)[1]!;
    console.log(
      `in flight ${inFlight}: own share ${med(own).toFixed(1)} µs/batch, relay via main ${med(relay).toFixed(1)} µs/batch ` +
        `(x${(med(relay) / med(own)).toFixed(2)}), main thread busy ${(med(elu) * 100).toFixed(0)}% during the relay`,
    );
  }
}

const role = workerData as (Role & { report?: MessagePort }) | null;
if (isMainThread) void main();
else if (role?.role === 'loop') void runLoop(role, role.report!);
