import { MessageChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { BATCH_ROWS, SEND_MS, commitHeld, newExposureRecorder, reserveRows, sendExposures, settleStaged, stageExposure, stopRecorder, type ExposureRecorder } from '../../../src/exposures/recorder.js';
import { QUEUED_ROWS, QUEUE_SLOTS, type ExposureBatch } from '../../../src/exposures/protocol.js';
import { experimentHash } from '../../../src/exposures/naming.js';
import { WINDOW_ROWS } from '../../../src/exposures/filter.js';
import { L_EXPOSURES_DROPPED, L_EXPOSURES_NOTED, newLoopCounters } from '../../../src/metrics/layout.js';
import { userUid } from '../../../src/shared/identity.js';
import { columnsOf, type BatchColumns } from './as-loop.js';

interface Bench {
  readonly x: ExposureRecorder;
  readonly writer: MessagePort;
  readonly queued: Int32Array;
  readonly counters: Float64Array;
}

const opened: MessageChannel[] = [];
afterEach(() => {
  for (const c of opened.splice(0)) {
    c.port1.close();
    c.port2.close();
  }
});

function bench(settings: { dimensions?: string[]; queue?: number; filterSlots?: number } = {}): Bench {
  const channel = new MessageChannel();
  opened.push(channel);
  const queue = new SharedArrayBuffer(QUEUE_SLOTS * Int32Array.BYTES_PER_ELEMENT);
  const counters = newLoopCounters();
  const x = newExposureRecorder({ port: channel.port1, queue }, { dimensions: settings.dimensions ?? [], queue: settings.queue ?? 1000, filterSlots: settings.filterSlots ?? 1024 }, counters);
  return { x, writer: channel.port2, queued: new Int32Array(queue), counters };
}

/** Stages one exposure for `owner` as the request path does. */
function stage(x: ExposureRecorder, owner: object, experiment: string, variant: string, player: string, v = '', p: Record<string, unknown> = {}, environment = 'live'): void {
  stageExposure(x, owner, environment, experiment, experimentHash(experiment), variant, userUid(player), player, v, p);
}

/** Every batch the writer's end holds now (posted before the call), as plain columns. */
function batches(writer: MessagePort): BatchColumns[] {
  const out: BatchColumns[] = [];
  for (let m = receiveMessageOnPort(writer); m !== undefined; m = receiveMessageOnPort(writer)) out.push(columnsOf(m.message as ExposureBatch));
  return out;
}

describe('a loop\'s exposure recorder', () => {
  it('sends the rows of a request answered well as one batch of columns', () => {
    const { x, writer, queued, counters } = bench({ dimensions: ['country', 'level'] });
    const request = {};
    const before = Date.now();
    stage(x, request, 'Shop:banner', 'A', 'p1', '1.2.3', { country: 'DE', level: 7, other: 1 });
    stage(x, request, 'pricing', 'B', 'p1', '1.2.3', { country: 'DE', level: 7, other: 1 });
    expect(settleStaged(x, request, true, true)).toBeNull();
    const other = {};
    stage(x, other, 'Shop:banner', 'B', '', '', {}, 'staging');
    settleStaged(x, other, true, true);
    sendExposures(x);
    const [batch, more] = batches(writer);
    expect(more).toBeUndefined();
    expect(batch).toMatchObject({
      environments: ['live', 'live', 'staging'],
      experiments: ['Shop:banner', 'pricing', 'Shop:banner'],
      variants: ['A', 'B', 'B'],
      players: ['p1', 'p1', ''],
      appVersions: ['1.2.3', '1.2.3', null],
      dimensions: ['{"country":"DE","level":7}', '{"country":"DE","level":7}', '{}'],
    });
    expect(batch!.at).toBeInstanceOf(Float64Array);
    expect(batch!.at).toHaveLength(3);
    for (const at of batch!.at) expect(at).toBeGreaterThanOrEqual(before);
    // Reserved on the writer's counter before posting, and counted as noted.
    expect(queued[QUEUED_ROWS]).toBe(3);
    expect(counters[L_EXPOSURES_NOTED]).toBe(3);
    expect(counters[L_EXPOSURES_DROPPED]).toBe(0);
  });

  it('names each text of a batch once, the rows as indexes into them', () => {
    const { x, writer } = bench({ dimensions: ['country'] });
    for (const player of ['p1', 'p2', 'p3']) {
      const r = {};
      stage(x, r, 'Shop:banner', 'A', player, '1.0.0', { country: 'DE' });
      stage(x, r, 'pricing', 'B', player, '1.0.0', { country: 'DE' });
      settleStaged(x, r, true, true);
    }
    sendExposures(x);
    const m = receiveMessageOnPort(writer)!.message as ExposureBatch;
    expect([...m.texts].sort()).toEqual(['1.0.0', 'A', 'B', 'Shop:banner', 'live', 'pricing', '{"country":"DE"}']);
    expect(m.players).toEqual(['p1', 'p1', 'p2', 'p2', 'p3', 'p3']);
    expect(columnsOf(m)).toMatchObject({ experiments: ['Shop:banner', 'pricing', 'Shop:banner', 'pricing', 'Shop:banner', 'pricing'], variants: ['A', 'B', 'A', 'B', 'A', 'B'] });
  });

  it('takes a request whose rows pass a batch\'s size whole, in one batch', () => {
    const { x, writer } = bench({ queue: 1_000_000, filterSlots: 0 });
    const r = {};
    const n = BATCH_ROWS + 500;
    for (let i = 0; i < n; i++) stage(x, r, 'e' + i, i % 2 === 0 ? 'A' : 'B', 'p');
    settleStaged(x, r, true, true);
    const [batch, more] = batches(writer);
    expect(more).toBeUndefined();
    expect(batch!.players).toHaveLength(n);
    expect(batch!.experiments[n - 1]).toBe('e' + (n - 1));
    expect(batch!.variants.slice(-2)).toEqual(n % 2 === 0 ? ['A', 'B'] : ['B', 'A']);
    expect(batch!.at).toHaveLength(n);
  });

  it('keeps a row held across the filter stepping aside out of its table, unless its player is a sentinel', () => {
    const { x, writer } = bench({ queue: 1_000_000, filterSlots: 1024 });
    const players = Array.from({ length: 400 }, (_, i) => 'held-' + i);
    const other = players.find((p) => userUid(p) >>> 29 !== 0)!;
    const sentinel = players.find((p) => userUid(p) >>> 29 === 0)!;
    // Two requests staged while every row is looked up, held while the render pool works for them.
    const held = [other, sentinel].map((player) => {
      const r = {};
      stage(x, r, 'Launch:price', 'A', player);
      return settleStaged(x, r, false, false)!;
    });
    // Meanwhile a window of new players, no repeat among them: the filter steps aside.
    for (let i = 0; i < WINDOW_ROWS; i++) {
      const r = {};
      stage(x, r, 'Launch:price', 'A', 'new-' + i);
      settleStaged(x, r, true, true);
    }
    expect(x.filter.aside).toBe(true);
    for (const h of held) commitHeld(x, h);
    sendExposures(x);
    const sent = batches(writer).flatMap((b) => b.players);
    expect(sent.slice(-2)).toEqual([other, sentinel]);
    // The sentinel's row is in the table; the other player's is not (its later rows are not looked up).
    expect(x.filter.table.includes(sentinel)).toBe(true);
    expect(x.filter.table.includes(other)).toBe(false);
  });

  it('notes nothing for an answer that failed, and drops a repeat the filter holds', () => {
    const { x, writer } = bench();
    const failed = {};
    stage(x, failed, 'e', 'A', 'p1');
    settleStaged(x, failed, true, false);
    sendExposures(x);
    expect(batches(writer)).toEqual([]);
    const first = {};
    stage(x, first, 'e', 'A', 'p1');
    settleStaged(x, first, true, true);
    const again = {};
    stage(x, again, 'e', 'A', 'p1');
    expect(x.owner).toBeNull(); // dropped before it was staged
    settleStaged(x, again, true, true);
    // Another variant for the same player is not a repeat (the writer records the move).
    const moved = {};
    stage(x, moved, 'e', 'B', 'p1');
    settleStaged(x, moved, true, true);
    sendExposures(x);
    expect(batches(writer).map((b) => b.variants)).toEqual([['A', 'B']]);
  });

  it('holds the exposures of a request the pool works for, committed once it is answered well', () => {
    const { x, writer } = bench({ dimensions: ['country'] });
    const request = {};
    stage(x, request, 'e', 'A', 'p1', '2.0.0', { country: 'FR' });
    const held = settleStaged(x, request, false, false);
    expect(held).toMatchObject({ environment: 'live', player: 'p1', appVersion: '2.0.0', dimensions: '{"country":"FR"}', experiments: ['e'], variants: ['A'] });
    expect(x.owner).toBeNull();
    sendExposures(x);
    expect(batches(writer)).toEqual([]);
    commitHeld(x, held!);
    sendExposures(x);
    expect(batches(writer)).toMatchObject([{ experiments: ['e'], players: ['p1'], appVersions: ['2.0.0'], dimensions: ['{"country":"FR"}'] }]);
  });

  it('drops a stage left unsettled by a request whose start failed when the next request stages', () => {
    const { x, writer } = bench();
    const broken = {};
    stage(x, broken, 'e', 'A', 'p1');
    const next = {};
    stage(x, next, 'e', 'A', 'p2');
    settleStaged(x, broken, true, true); // no longer its stage: nothing
    settleStaged(x, next, true, true);
    sendExposures(x);
    expect(batches(writer).map((b) => b.players)).toEqual([['p2']]);
  });

  it('sends at once when BATCH_ROWS rows wait, else within SEND_MS', async () => {
    const { x, writer } = bench({ queue: 1_000_000, filterSlots: 0 });
    const one = {};
    stage(x, one, 'e', 'A', 'p0');
    settleStaged(x, one, true, true);
    expect(batches(writer)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, SEND_MS * 3));
    expect(batches(writer).map((b) => b.players)).toEqual([['p0']]);
    for (let i = 0; i < BATCH_ROWS; i++) {
      const r = {};
      stage(x, r, 'e', 'A', 'p' + i);
      settleStaged(x, r, true, true);
    }
    const sent = batches(writer);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.players).toHaveLength(BATCH_ROWS);
    expect(x.timer).toBeNull();
  });

  it('drops and counts what would pass --exposure-queue; a dropped player is queued again next time', () => {
    const { x, writer, queued, counters } = bench({ queue: 5 });
    queued[QUEUED_ROWS] = 3; // the writer holds 3 rows
    for (const player of ['p1', 'p2', 'p3', 'p4']) {
      const r = {};
      stage(x, r, 'e', 'A', player);
      settleStaged(x, r, true, true);
    }
    sendExposures(x);
    const [batch] = batches(writer);
    expect(batch!.players).toEqual(['p1', 'p2']);
    expect(batch!.environments).toHaveLength(2);
    expect(batch!.dimensions).toHaveLength(2);
    expect(batch!.at).toHaveLength(2);
    expect(queued[QUEUED_ROWS]).toBe(5);
    expect(counters[L_EXPOSURES_NOTED]).toBe(2);
    expect(counters[L_EXPOSURES_DROPPED]).toBe(2);
    // The queue full: everything is dropped, nothing posted.
    const r = {};
    stage(x, r, 'e', 'A', 'p5');
    settleStaged(x, r, true, true);
    sendExposures(x);
    expect(batches(writer)).toEqual([]);
    expect(counters[L_EXPOSURES_DROPPED]).toBe(3);
    // The writer wrote its rows: p3 (dropped) is queued on its next exposure; p1 (queued) is a repeat.
    queued[QUEUED_ROWS] = 0;
    for (const player of ['p1', 'p3']) {
      const again = {};
      stage(x, again, 'e', 'A', player);
      settleStaged(x, again, true, true);
    }
    sendExposures(x);
    expect(batches(writer).map((b) => b.players)).toEqual([['p3']]);
  });

  it('reserves rows without ever passing the bound', () => {
    const queued = new Int32Array(new SharedArrayBuffer(QUEUE_SLOTS * 4));
    expect(reserveRows(queued, 10, 4)).toBe(4);
    expect(reserveRows(queued, 10, 8)).toBe(6);
    expect(reserveRows(queued, 10, 1)).toBe(0);
    expect(queued[QUEUED_ROWS]).toBe(10);
    queued[QUEUED_ROWS] = 12; // past the bound (another side's figure): nothing more
    expect(reserveRows(queued, 10, 1)).toBe(0);
    expect(queued[QUEUED_ROWS]).toBe(12);
  });

  it('sends the last rows when the loop stops, before its port closes', async () => {
    const { x, writer } = bench();
    const r = {};
    stage(x, r, 'e', 'A', 'last');
    settleStaged(x, r, true, true);
    const received: BatchColumns[] = [];
    const closed = new Promise<BatchColumns[]>((resolve) => writer.once('close', () => resolve(received.slice())));
    writer.on('message', (m: ExposureBatch) => received.push(columnsOf(m)));
    stopRecorder(x);
    expect((await closed).map((b) => b.players)).toEqual([['last']]);
    expect(x.timer).toBeNull();
  });
});
