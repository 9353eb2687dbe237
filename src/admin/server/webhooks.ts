/**
 * Webhook delivery from the store's outbox.
 *
 * A write that announces events adds one outbox row per (event, subscribed hook) in its own
 * transaction (the admin handlers build them, the Store inserts them), held until the change is live;
 * then the server releases them and kicks this dispatcher. The dispatcher claims due rows (a lease,
 * so a second node or process on the store never sends one at the same time), posts them, and
 * records the outcome in the store: delivered rows are removed, a failed attempt is due again after
 * an exponential backoff with jitter, and after the last attempt (or an answer that is final) the
 * row stays as a dead letter. Everything it knows is in the store, so a restart resumes where the
 * last process stopped: a row whose attempt was cut by a stop is released at once, a row leased by
 * a process that died is due again when its lease ends. Delivery is therefore at least once; the
 * webhook-id lets receivers drop repeats. No admin call waits on a receiver.
 *
 * Signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature), through the
 * `standardwebhooks` package so the bytes signed are exactly what its verifier checks. The id is
 * fixed per delivery (receivers drop duplicates by it); the timestamp and signature are made at
 * each attempt, so a retry minutes later still falls inside a receiver's replay window.
 */
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { NewOutboxEntry, OutboxEntry, Store } from '../../store/types.js';
import type { AdminStateStore, WebhookEvent, WebhookInfo, WebhookRegistration } from './state.js';
import { postWebhook, type WebhookTarget } from './webhook-post.js';
import { TARGET_REFUSED, TargetRefusedError, checkedLookup } from './webhook-target.js';

export interface WebhookPayload {
  readonly event: WebhookEvent;
  readonly env: string;
  /** The content id; for the schedule.* events, the schedule's id. */
  readonly id: string | null;
  readonly hash: string | null;
  readonly at: string;
  /** The schedule.* events: the scheduled change as it stands (docs/schedule.md, "Webhooks"). */
  readonly schedule?: ScheduleEventBody;
}

/** The payload of an event about one item (the schedule.* events carry their scheduled change too). */
export function webhookPayload(event: WebhookEvent, env: string, id: string | null, hash: string | null, at: string): WebhookPayload {
  return { event, env, id, hash, at };
}

export interface ScheduleEventBody {
  readonly id: string;
  /** When it was due (ISO-8601). */
  readonly at: string;
  readonly status: string;
  /** The content ids it names. */
  readonly items: readonly string[];
  /** It holds a sync of every item (which names no id). */
  readonly allItems: boolean;
  readonly rollout: string | null;
  readonly lateMs: number | null;
  readonly error: { readonly code: string; readonly message: string } | null;
}

/** The bounds of delivery (config.ts: the --webhook-* flags). */
export interface WebhookDispatcherOptions {
  /** Attempts of one delivery, the first included, before it is dead-lettered. Default 12. */
  readonly attempts?: number;
  /** Delay before the first retry; doubles each time. Default 1 s. */
  readonly retryMinMs?: number;
  /** Cap on one backoff delay. Default 10 minutes. */
  readonly retryMaxMs?: number;
  /** Time limit of one HTTP attempt. Default 10 s. */
  readonly attemptTimeoutMs?: number;
  /** Attempts running at once (this process). Default 4. */
  readonly concurrency?: number;
  /** Dead letters kept; the oldest beyond go. Default 1000. */
  readonly deadLetters?: number;
  /** How long a write's deliveries are held if the writer never releases them. Default 5 s. */
  readonly holdMs?: number;
  /** Deliver to targets that are not public addresses (--webhook-allow-private, webhook-target.ts). Default false. */
  readonly allowPrivateTargets?: boolean;
  readonly log?: (line: string) => void;
}

/** What this process did since it started (the outbox itself holds the backlog: Store.outboxCounts). */
export interface WebhookStats {
  readonly inFlight: number;
  readonly delivered: number;
  /** Attempts that failed and were scheduled again. */
  readonly retried: number;
  /** Deliveries dead-lettered. */
  readonly failed: number;
  /** Deliveries dropped because their webhook was deleted. */
  readonly dropped: number;
}

/** The Standard Webhooks form of a secret: `whsec_` + base64 of the key. rcd generates secrets in it. */
export const STANDARD_SECRET_PREFIX = 'whsec_';

/**
 * The signer of a hook's secret: a `whsec_` secret is the base64 of its key (Standard Webhooks);
 * any other secret (one chosen before rcd generated that form, or by an operator) keys the HMAC
 * with its UTF-8 bytes, which a receiver gets with `new Webhook(bytes, { format: 'raw' })`.
 * Throws for a `whsec_` secret that is not base64.
 */
export function webhookSigner(secret: string): Webhook {
  return secret.startsWith(STANDARD_SECRET_PREFIX) ? new Webhook(secret) : new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' });
}

export interface SignatureHeaders {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
}

/** The three Standard Webhooks headers for one attempt. */
export function signatureHeaders(signer: Webhook, id: string, body: string, now: Date): SignatureHeaders {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': signer.sign(id, now, body),
  };
}

/** Receivers should retry the same way we do: 5xx, 408 and 429 are transient; other 4xx are final. */
function isRetryableStatus(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/** The body sent for a payload: fixed member order, so the bytes signed are the bytes stored. */
function payloadBody(p: WebhookPayload): string {
  if (p.schedule === undefined) return JSON.stringify({ event: p.event, env: p.env, id: p.id, hash: p.hash, at: p.at });
  return JSON.stringify({ event: p.event, env: p.env, id: p.id, hash: p.hash, at: p.at, schedule: p.schedule });
}

/** One outbox entry per payload and hook subscribed to its event. */
export function outboxEntries(hooks: readonly WebhookInfo[], payloads: readonly WebhookPayload[]): NewOutboxEntry[] {
  const out: NewOutboxEntry[] = [];
  for (const payload of payloads) {
    const body = payloadBody(payload);
    for (const hook of hooks) {
      if (hook.events.includes(payload.event)) out.push({ id: 'msg_' + randomUUID().replaceAll('-', ''), hookId: hook.id, event: payload.event, body });
    }
  }
  return out;
}

/** A claim's lease covers the attempt's time limit and this margin (clock steps, a slow store). */
const LEASE_MARGIN_MS = 5000;
/** The longest a due entry waits when no write kicked the dispatcher (another node's writes, retries). */
const MAX_POLL_MS = 1000;
/** Polling faster than this buys nothing (a retry this early is within the jitter) and costs queries. */
const MIN_POLL_MS = 50;
/**
 * Retries of this process with a wake-up of their own (a one-shot timer at the time they are due);
 * beyond this many the poll sends them, up to its interval late.
 */
const WAKES_MAX = 1000;

export class WebhookDispatcher {
  private readonly store: Store;
  private readonly state: AdminStateStore;
  private readonly attempts: number;
  private readonly retryMinMs: number;
  private readonly retryMaxMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly concurrency: number;
  private readonly deadLetters: number;
  readonly holdMs: number;
  private readonly target: WebhookTarget;
  private readonly log: (line: string) => void;

  private readonly running = new Map<string, AbortController>();
  private readonly settled = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  /** One per retry waiting for its time (wakeAt): a retry goes out when due, not at the next poll. */
  private readonly wakes = new Set<NodeJS.Timeout>();
  /** The pass running, awaited by close(). */
  private passing: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private claimFailing = false;
  private delivered = 0;
  private retried = 0;
  private failed = 0;
  private dropped = 0;

  constructor(store: Store, state: AdminStateStore, opts: WebhookDispatcherOptions = {}) {
    this.store = store;
    this.state = state;
    this.attempts = opts.attempts ?? 12;
    this.retryMinMs = opts.retryMinMs ?? 1000;
    this.retryMaxMs = opts.retryMaxMs ?? 10 * 60_000;
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? 10_000;
    this.concurrency = opts.concurrency ?? 4;
    this.deadLetters = opts.deadLetters ?? 1000;
    this.holdMs = opts.holdMs ?? 5000;
    const allowPrivate = opts.allowPrivateTargets ?? false;
    this.target = { allowPrivate, lookup: checkedLookup(allowPrivate) };
    this.log = opts.log ?? (() => undefined);
  }

  /** Starts polling the outbox: what a previous process left is resumed at once. */
  start(): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setInterval(() => this.kick(), Math.max(MIN_POLL_MS, Math.min(MAX_POLL_MS, this.retryMinMs)));
    this.timer.unref();
    this.kick();
  }

  /** Deliveries are due now (a write released them): claim them without waiting for the poll. */
  kick(): void {
    if (this.closed) return;
    if (this.passing !== null) {
      this.again = true;
      return;
    }
    this.passing = this.pass().catch((err: unknown) => this.log(`webhooks: ${(err as Error).message}`)).finally(() => {
      this.passing = null;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  stats(): WebhookStats {
    return { inFlight: this.running.size, delivered: this.delivered, retried: this.retried, failed: this.failed, dropped: this.dropped };
  }

  /** Stops: attempts in flight are aborted and their rows made due again, so the next start sends them. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    for (const wake of this.wakes) clearTimeout(wake);
    this.wakes.clear();
    for (const controller of this.running.values()) controller.abort();
    await this.passing;
    for (const controller of this.running.values()) controller.abort();
    await Promise.all([...this.settled]);
  }

  private async pass(): Promise<void> {
    const free = this.concurrency - this.running.size;
    if (free <= 0) return;
    let entries: OutboxEntry[];
    let hooks: WebhookRegistration[];
    let known: Set<string>;
    try {
      const now = Date.now();
      entries = await this.store.claimOutbox(now, now + this.attemptTimeoutMs + LEASE_MARGIN_MS, free);
      if (entries.length === 0) return;
      hooks = await this.state.listWebhooks();
      known = new Set((await this.state.listWebhookInfo()).map((h) => h.id));
      this.claimFailing = false;
    } catch (err) {
      // The store is unreachable or busy: the rows stay (a claimed one is due again when its lease ends).
      if (!this.claimFailing) this.log(`webhooks: cannot read the outbox: ${(err as Error).message}; retrying`);
      this.claimFailing = true;
      return;
    }
    if (this.closed) {
      // Stopped while claiming: give the rows back at once rather than wait for the lease.
      for (const entry of entries) await this.record(entry, { kind: 'retry', atMs: Date.now(), error: 'stopped before an attempt', counted: false });
      return;
    }
    const byId = new Map(hooks.map((h) => [h.id, h]));
    for (const entry of entries) {
      const hook = byId.get(entry.hookId);
      if (hook === undefined) {
        if (known.has(entry.hookId)) {
          // This node's webhook key differs (docs/fleet.md): a counted failure, so a node with the
          // right key can send it meanwhile, and it is dead-lettered if none can.
          await this.retryOrGiveUp(entry, 'the webhook secret does not open with this node\'s webhook key');
        } else {
          await this.record(entry, { kind: 'delivered' });
          this.dropped++;
          this.log(`webhooks: ${entry.hookId} was deleted; its delivery ${entry.id} (${entry.event}) dropped`);
        }
        continue;
      }
      this.begin(entry, hook);
    }
    // A full claim may have left more due rows.
    if (entries.length === free) this.again = true;
  }

  private begin(entry: OutboxEntry, hook: WebhookRegistration): void {
    const controller = new AbortController();
    this.running.set(entry.id, controller);
    const done = this.attempt(entry, hook, controller).finally(() => {
      this.running.delete(entry.id);
      this.settled.delete(done);
      this.kick();
    });
    this.settled.add(done);
  }

  private async attempt(entry: OutboxEntry, hook: WebhookRegistration, controller: AbortController): Promise<void> {
    let signer: Webhook;
    try {
      signer = webhookSigner(hook.secret);
    } catch (err) {
      this.failed++;
      await this.record(entry, { kind: 'dead', error: `the secret cannot sign: ${(err as Error).message}`, keepDead: this.deadLetters });
      return;
    }
    const timeout = setTimeout(() => controller.abort(), this.attemptTimeoutMs);
    let problem: string;
    let cause = '';
    try {
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'rcd-webhooks/1',
        'x-rcd-event': entry.event,
        // Same webhook-id on every retry so a receiver can drop duplicates; a fresh timestamp.
        ...signatureHeaders(signer, entry.id, entry.body, new Date()),
      };
      const status = await postWebhook(hook.url, headers, entry.body, controller.signal, this.target);
      if (status >= 200 && status < 300) {
        this.delivered++;
        await this.record(entry, { kind: 'delivered' });
        return;
      }
      if (!isRetryableStatus(status)) {
        this.failed++;
        this.log(`webhooks: ${entry.hookId} answered ${status} to ${entry.event} ${entry.id}; dead-lettered (not retried)`);
        await this.record(entry, { kind: 'dead', error: `status ${status} (final)`, keepDead: this.deadLetters });
        return;
      }
      problem = `status ${status}`;
    } catch (err) {
      if (err instanceof TargetRefusedError) {
        // Final: the target is refused by this server's rule, not failing. The reason names no
        // address or port, so a dead letter says nothing of what listens on the server's network.
        this.failed++;
        this.log(`webhooks: ${entry.hookId} resolves to an address that is not public; ${entry.event} ${entry.id} dead-lettered (--webhook-allow-private allows it)`);
        await this.record(entry, { kind: 'dead', error: TARGET_REFUSED, keepDead: this.deadLetters });
        return;
      }
      // The socket's own error (refused, reset, unresolved) goes to the log only: the dead letter
      // says what an admin can act on without describing the network.
      problem = controller.signal.aborted ? 'timed out' : 'connection failed';
      cause = controller.signal.aborted ? '' : (err as Error).message;
    } finally {
      clearTimeout(timeout);
    }
    if (this.closed) {
      // Cut by a stop, not the receiver's doing: due again at once, not counted.
      await this.record(entry, { kind: 'retry', atMs: Date.now(), error: 'stopped before an answer', counted: false });
      return;
    }
    await this.retryOrGiveUp(entry, problem, cause);
  }

  /** A failed attempt: due again after the backoff, or dead-lettered when it was the last. `cause`: for the log only. */
  private async retryOrGiveUp(entry: OutboxEntry, problem: string, cause = ''): Promise<void> {
    const made = entry.attempts + 1;
    if (made >= this.attempts) {
      this.failed++;
      this.log(`webhooks: giving up on ${entry.event} ${entry.id} for ${entry.hookId} after ${made} attempts (${cause === '' ? problem : `${problem}: ${cause}`}); dead-lettered`);
      await this.record(entry, { kind: 'dead', error: problem, keepDead: this.deadLetters });
      return;
    }
    this.retried++;
    const atMs = Date.now() + this.backoff(made);
    await this.record(entry, { kind: 'retry', atMs, error: problem, counted: true });
    this.wakeAt(atMs);
  }

  /**
   * Claims at `atMs` (a retry's due time) without waiting for the poll, which would send it up to its
   * interval (up to 1 s) late: the retry's delay is the backoff the docs give, and growing delays
   * stay growing whatever the poll's phase.
   */
  private wakeAt(atMs: number): void {
    if (this.closed || this.wakes.size >= WAKES_MAX) return;
    // One millisecond past the due time: a timer may fire within the millisecond it was due.
    const wake = setTimeout(() => {
      this.wakes.delete(wake);
      this.kick();
    }, Math.max(0, atMs - Date.now() + 1));
    wake.unref();
    this.wakes.add(wake);
  }

  /** The wait after the n-th failed attempt: retryMinMs doubling, capped, with ±20% jitter so failing hooks do not retry in lockstep. */
  private backoff(n: number): number {
    const base = Math.min(this.retryMaxMs, this.retryMinMs * 2 ** (n - 1));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  /** Writes an outcome; a store that cannot take it leaves the lease to run out (the row is sent again: at least once). */
  private async record(entry: OutboxEntry, outcome: Parameters<Store['settleOutbox']>[1]): Promise<void> {
    try {
      await this.store.settleOutbox(entry.id, outcome);
    } catch (err) {
      this.log(`webhooks: cannot record the outcome of ${entry.id}: ${(err as Error).message}`);
    }
  }
}
