import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NODE_LIVENESS_MS, NodeRegistry } from '../../../src/control/nodes.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { tempDir } from '../store/helpers.js';

let store: Store;
let cleanup: () => void = () => undefined;
afterEach(async () => {
  await store?.close();
  cleanup();
});

async function open(): Promise<Store> {
  const t = tempDir();
  cleanup = t.cleanup;
  store = await openStore(`sqlite:${join(t.dir, 'rcd.db')}`);
  return store;
}

describe('NodeRegistry', () => {
  it('answers at once when it is the only node', async () => {
    const s = await open();
    const log: string[] = [];
    const me = new NodeRegistry(s, (l) => log.push(l));
    await me.start(0);
    const p = await me.waitFor(5, 1000);
    expect(p).toEqual({ seq: 5, nodes: 1, applied: 1, missed: [] });
    await me.stop();
    expect(await s.listNodes()).toEqual([]);
  });

  it('waits for a live node to apply the change, and names one that does not within the bound', async () => {
    const s = await open();
    const log: string[] = [];
    const me = new NodeRegistry(s, (l) => log.push(l));
    const other = new NodeRegistry(s, () => undefined);
    await me.start(0);
    await other.start(0);
    setTimeout(() => void other.applied(3), 50);
    const started = Date.now();
    expect(await me.waitFor(3, 2000)).toEqual({ seq: 3, nodes: 2, applied: 2, missed: [] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);

    const missed = await me.waitFor(4, 100);
    expect(missed).toEqual({ seq: 4, nodes: 2, applied: 1, missed: [other.nodeId] });
    expect(log.join('\n')).toContain(other.nodeId);
    await other.stop();
    await me.stop();
  });

  it('counts itself when its own record is not in the registry', async () => {
    const s = await open();
    const me = new NodeRegistry(s, () => undefined);
    const other = new NodeRegistry(s, () => undefined);
    await me.start(0);
    await other.start(0);
    await s.removeNode(me.nodeId);
    await other.applied(7);
    expect(await me.waitFor(7, 1000)).toEqual({ seq: 7, nodes: 2, applied: 2, missed: [] });
    expect(await me.waitFor(8, 50)).toEqual({ seq: 8, nodes: 2, applied: 1, missed: [other.nodeId] });
    await other.stop();
    await me.stop();
  });

  it('stops waiting for a node whose heartbeat lapsed', async () => {
    const s = await open();
    const me = new NodeRegistry(s, () => undefined);
    await me.start(0);
    await s.registerNode({ nodeId: 'gone', pid: 1, host: 'h', startedAt: new Date().toISOString(), heartbeatMs: Date.now() - NODE_LIVENESS_MS - 1, appliedSeq: 0 });
    expect(await me.waitFor(2, 1000)).toEqual({ seq: 2, nodes: 1, applied: 1, missed: [] });
    await me.stop();
  });
});
