/**
 * The applier of scheduled changes. Every node of a store that runs the admin listener runs one;
 * one of them at a time holds the store's `scheduler` lease (renewed every second, LEASE_TTL_MS
 * long: a node that dies is taken over within a few seconds) and applies what falls due, through
 * the admin write path (one write queue, the urgent lane): the store transaction, every node's
 * delivery loops applying it, the audit log, the webhooks. The lease only keeps the other nodes
 * from trying in vain; exactly once does not depend on it (src/store/schedule/lifecycle.ts).
 *
 * Whose clock decides: the store's (the database server's for PostgreSQL; the one machine's for
 * SQLite). The holder reads it with every lease renewal and keeps its offset from its own clock, so
 * it wakes at the due time by the store's clock, and the transaction that applies a change checks
 * that time again with the store's own clock: a node with a skewed clock can wake early or late,
 * but never applies early.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Propagation } from '../../control/nodes.js';
import { call, type Step } from '../../store/ops/rows.js';
import { rehearseDue, type Settled } from '../../store/schedule/lifecycle.js';
import type { ScheduleLimits } from '../../store/schedule/limits.js';
import type { LeaseHolder } from '../../store/schedule/rows.js';
import type { Store } from '../../store/types.js';
import { RcdError } from '../../runtime/errors.js';
import type { AdminHandler, AdminResult } from './admin-call.js';
import { applyDueChanges } from './schedule-handlers.js';

/** A lease outlives its holder's death by this much at most. */
export const LEASE_TTL_MS = 3000;
/** How often the lease is renewed (or, by the other nodes, tried). */
const LEASE_RENEW_MS = 1000;
/** The longest the holder sleeps between two looks at the next due time (changes scheduled on other nodes). */
const POLL_MS = 250;
const LEASE = 'scheduler';
/**
 * Batches of due changes (APPLY_BATCH each) one write of the applier applies, back to back: 2,000
 * changes due together go live after one wait for the fleet, one audit append and one webhook
 * release, not one of each per batch: the wait for the fleet is the cost that grows with the number
 * of writes. Bounded, because the write holds the urgent lane that admin writes queue behind.
 */
const BATCHES_PER_WRITE = 4;
/**
 * This long before a due time, the holder rehearses the first WARM_CHANGES changes due then on each
 * of the store's write connections and rolls them back (rehearseDue): the connection's first-use
 * costs are paid before the due time instead of in the apply, where they would delay the changes
 * going live. A few changes warm what a first use costs
 * (those costs do not grow with the batch) and keep the rehearsals, which take the write lock in
 * turn, well inside the lead.
 */
const WARM_LEAD_MS = 2000;
const WARM_CHANGES = 8;

export interface ScheduleMetrics {
  /** A change applied, `lateMs` after its due time until every live node served it. */
  applied(lateMs: number): void;
  failed(): void;
  /** Scheduled changes not settled yet (pending or paused), in the whole store. */
  open(count: number): void;
}

export interface SchedulerOptions {
  readonly limits: ScheduleLimits;
  readonly metrics?: ScheduleMetrics;
}

export const DEFAULT_SCHEDULE_LIMITS: ScheduleLimits = { maxAheadMs: 366 * 86_400_000, maxOpen: 100_000 };
export const DEFAULT_SCHEDULER_OPTIONS: SchedulerOptions = { limits: DEFAULT_SCHEDULE_LIMITS };

export interface WriteOutcome {
  readonly result: AdminResult;
  readonly propagation: Propagation | null;
  /**
   * Why a committed change could not be published on this node (the store failed a moment after the
   * commit), or null. The change and its audit entry are written; the nodes apply it from the change
   * log once the store answers.
   */
  readonly unpublished: Error | null;
}

function* renewLease(holder: string): Step<LeaseHolder> {
  const now = yield* call('storeNowMs');
  return yield* call('takeLease', LEASE, holder, now, now + LEASE_TTL_MS);
}

function* releaseLease(holder: string): Step<void> {
  yield* call('releaseLease', LEASE, holder);
}

function* nextDue(): Step<number | null> {
  return yield* call('nextDueMs');
}

function* countOpen(): Step<number> {
  return yield* call('countOpen');
}

export class Scheduler {
  private readonly holder = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private readonly store: Store;
  private readonly options: SchedulerOptions;
  private readonly log: (line: string) => void;
  private readonly write: (handler: AdminHandler) => Promise<WriteOutcome>;
  /** The lease is renewed on a timer of its own: a long apply must not let it run out. */
  private leaseTimer: NodeJS.Timeout | null = null;
  private renewing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private leader = false;
  /** The store's clock minus this process's. */
  private offsetMs = 0;
  private lastProblem = '';
  /** The due time the write connections were last warmed for, and the warm-up under way. */
  private warmedForMs = 0;
  private warming: Promise<void> | null = null;

  constructor(store: Store, options: SchedulerOptions, log: (line: string) => void, write: (handler: AdminHandler) => Promise<WriteOutcome>) {
    this.store = store;
    this.options = options;
    this.log = log;
    this.write = write;
  }

  start(): void {
    this.leaseTimer = setInterval(() => this.renewSoon(), LEASE_RENEW_MS);
    this.leaseTimer.unref();
    this.renewSoon();
  }

  /** A change was scheduled or moved on this node: look at the next due time now. */
  kick(): void {
    if (this.running !== null) this.again = true;
    else if (this.leader) this.wake(0);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.leaseTimer !== null) clearInterval(this.leaseTimer);
    if (this.timer !== null) clearTimeout(this.timer);
    this.leaseTimer = null;
    this.timer = null;
    await this.renewing;
    await this.running;
    await this.warming;
    if (!this.leader) return;
    this.leader = false;
    try {
      await this.store.leaseStep(() => releaseLease(this.holder));
    } catch {
      // It runs out on its own within LEASE_TTL_MS.
    }
  }

  private renewSoon(): void {
    if (this.closed || this.renewing !== null) return;
    this.renewing = this.renew()
      .catch((err: unknown) => this.problem(err))
      .finally(() => {
        this.renewing = null;
      });
  }

  private problem(err: unknown): void {
    const problem = err instanceof RcdError ? `${err.code}: ${err.message}` : (err as Error).message;
    // Once per kind of trouble (a database outage fails every attempt): the retries go on quietly.
    if (problem !== this.lastProblem) this.log(`scheduled changes: ${problem}; retrying`);
    this.lastProblem = problem;
  }

  private wake(delayMs: number): void {
    if (this.closed) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.cycle().finally(() => {
        this.running = null;
      });
    }, delayMs);
    this.timer.unref();
  }

  /** While this node holds the lease: apply what is due, then sleep until the next due time (or POLL_MS). */
  private async cycle(): Promise<void> {
    if (!this.leader) return;
    let delay = POLL_MS;
    try {
      delay = await this.applyWhenDue();
      this.lastProblem = '';
    } catch (err) {
      this.problem(err);
    }
    if (this.again) {
      this.again = false;
      delay = 0;
    }
    if (this.leader) this.wake(delay);
  }

  private async renew(): Promise<void> {
    const t0 = Date.now();
    const lease = await this.store.leaseStep(() => renewLease(this.holder));
    const t1 = Date.now();
    this.offsetMs = lease.nowMs - (t0 + t1) / 2;
    const leader = lease.holder === this.holder;
    if (leader !== this.leader) this.log(leader ? 'scheduled changes: this node applies them (it holds the lease)' : 'scheduled changes: another node holds the lease');
    const gained = leader && !this.leader;
    this.leader = leader;
    if (gained && this.running === null) this.wake(0);
    // Once a second, by the holder only: a count over every open change is the one scan here.
    if (this.options.metrics !== undefined) this.options.metrics.open(leader ? await this.store.readStep(countOpen) : 0);
  }

  /** Applies what is due; returns how long to sleep before the next look. */
  private async applyWhenDue(): Promise<number> {
    while (this.leader && !this.closed) {
      const dueMs = await this.store.readStep(nextDue);
      if (dueMs === null) return POLL_MS;
      // +1: wake just after it by the store's clock (the offset's estimate is good to a round trip).
      const wait = dueMs - (Date.now() + this.offsetMs) + 1;
      if (wait > 0) {
        if (wait <= WARM_LEAD_MS) this.warmFor(dueMs);
        return Math.min(POLL_MS, wait);
      }
      let settled: Settled[] = [];
      let writtenMs = 0;
      const t0 = performance.now();
      const outcome = await this.write(async (ctx, c) => {
        const applied = await applyDueChanges(ctx, c, BATCHES_PER_WRITE);
        settled = applied.settled;
        writtenMs = performance.now() - t0;
        return applied.result;
      });
      if (settled.length > 0) {
        this.log(`scheduled changes: ${settled.length} settled (written in ${writtenMs.toFixed(0)} ms, live and audited after ${(performance.now() - t0).toFixed(0)} ms)`);
      }
      this.observe(settled, outcome.propagation);
      if (outcome.unpublished !== null) throw outcome.unpublished;
      if (settled.length === 0) return POLL_MS;
    }
    return POLL_MS;
  }

  /** Starts warming the write connections for the changes due at `dueMs`, once per due time. */
  private warmFor(dueMs: number): void {
    if (this.warmedForMs === dueMs || this.warming !== null || this.closed) return;
    this.warmedForMs = dueMs;
    this.warming = this.store
      .writeStepOnEach(() => rehearseDue(dueMs, WARM_CHANGES))
      .catch((err: unknown) => this.problem(err))
      .finally(() => {
        this.warming = null;
      });
  }

  private observe(settled: readonly Settled[], propagation: Propagation | null): void {
    const visible = Date.now() + this.offsetMs;
    for (const s of settled) {
      if (s.error !== null) {
        this.options.metrics?.failed();
        this.log(`scheduled change ${s.row.schedule_id} failed (${s.error.code}): ${s.error.message}`);
        continue;
      }
      this.options.metrics?.applied(visible - s.row.due_ms);
    }
    if (propagation !== null && propagation.missed.length > 0) {
      this.log(`scheduled changes applied; not yet live on ${propagation.missed.length} node(s): ${propagation.missed.join(', ')}`);
    }
  }
}
