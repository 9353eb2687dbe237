/**
 * This process as a node of its store: several `rcd serve` on one store file each register, beat a
 * heartbeat that carries the change-log seq their delivery loops have applied, and a writer waits,
 * bounded by --propagation-timeout, until every live node has applied its write. Runs in the
 * control thread (it writes to the store).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { NodeRecord, Store } from '../store/types.js';

/** How often a node records that it is alive (and its applied seq). */
export const HEARTBEAT_MS = 1000;
/** A node silent this long no longer counts: a writer stops waiting for it. */
export const NODE_LIVENESS_MS = 5 * HEARTBEAT_MS;
/** A node silent this long is removed from the registry (a crash leaves its record behind). */
const NODE_FORGET_MS = 60 * HEARTBEAT_MS;
/** How often a waiting writer re-reads the registry. */
const WAIT_POLL_MS = 5;

/** What an admin write reports about its propagation to the other nodes of the store. */
export interface Propagation {
  /** The change-log seq of the write. */
  readonly seq: number;
  /** Live nodes of the store, this one included. */
  readonly nodes: number;
  /** Of those, how many had applied the write when it answered. */
  readonly applied: number;
  /** The live nodes that had not (each named in a warning and the log). */
  readonly missed: readonly string[];
}

export class NodeRegistry {
  readonly nodeId: string;
  private readonly store: Store;
  private readonly log: (line: string) => void;
  private appliedSeq = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(store: Store, log: (line: string) => void) {
    this.store = store;
    this.log = log;
    this.nodeId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  }

  async start(appliedSeq: number): Promise<void> {
    this.appliedSeq = appliedSeq;
    const now = Date.now();
    const record: NodeRecord = { nodeId: this.nodeId, pid: process.pid, host: hostname(), startedAt: new Date(now).toISOString(), heartbeatMs: now, appliedSeq };
    await this.store.registerNode(record);
    this.timer = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /** Records (in the store) that this node's delivery loops now see every change up to `seq`. */
  async applied(seq: number): Promise<void> {
    if (seq <= this.appliedSeq) return;
    this.appliedSeq = seq;
    await this.store.heartbeat(this.nodeId, seq, Date.now());
  }

  /** Waits until every live node applied `seq`, or `timeoutMs` passed; never throws. */
  async waitFor(seq: number, timeoutMs: number): Promise<Propagation> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let nodes: NodeRecord[];
      try {
        nodes = await this.store.listNodes();
      } catch {
        nodes = [];
      }
      const now = Date.now();
      // This node counts whether or not its record is there (the writer applied its own write): a
      // record can be missing for a moment, e.g. when another node forgot it after a long stall.
      const others = nodes.filter((n) => n.nodeId !== this.nodeId && now - n.heartbeatMs <= NODE_LIVENESS_MS);
      const behind = others.filter((n) => n.appliedSeq < seq);
      if (behind.length === 0 || now >= deadline) {
        const missed = behind.map((n) => `${n.nodeId} (pid ${n.pid} on ${n.host}, applied ${n.appliedSeq})`);
        if (missed.length > 0) this.log(`change ${seq} not applied within ${timeoutMs} ms by: ${missed.join(', ')}`);
        return { seq, nodes: others.length + 1, applied: others.length + 1 - behind.length, missed: behind.map((n) => n.nodeId) };
      }
      await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
    }
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    try {
      await this.store.removeNode(this.nodeId);
    } catch {
      // The store may be gone (that is being reported elsewhere); a stale record ages out.
    }
  }

  private async beat(): Promise<void> {
    try {
      const now = Date.now();
      await this.store.heartbeat(this.nodeId, this.appliedSeq, now);
      for (const n of await this.store.listNodes()) {
        if (n.nodeId !== this.nodeId && now - n.heartbeatMs > NODE_FORGET_MS) await this.store.removeNode(n.nodeId);
      }
    } catch {
      // A locked or unavailable store delays the heartbeat; writers then stop waiting for this node
      // after NODE_LIVENESS_MS, which is the documented degradation.
    }
  }
}
