/**
 * Webhook delivery: fire and forget after an admin write.
 *
 * `emit()` only appends to an in-memory queue and returns; the HTTP calls happen later on the event
 * loop, so a slow or failing receiver never slows an admin call. Each delivery is retried with
 * exponential backoff (with jitter, so many failing hooks do not retry in lockstep) until it
 * succeeds or its total time budget runs out. The queue is bounded: when it is full new deliveries
 * are dropped and logged rather than letting a dead receiver grow memory without limit.
 * Deliveries are not persisted: a restart loses what is still queued (documented).
 *
 * Signed per Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature), through the
 * `standardwebhooks` package so the bytes signed are exactly what its verifier checks. The id is
 * fixed per delivery (receivers drop duplicates by it); the timestamp and signature are made at
 * each attempt, so a retry minutes later still falls inside a receiver's replay window.
 */
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { WebhookEvent, WebhookRegistration } from './state.js';

export interface WebhookPayload {
  readonly event: WebhookEvent;
  readonly env: string;
  readonly id: string | null;
  readonly hash: string | null;
  readonly at: string;
}

export interface WebhookDispatcherOptions {
  /** Deliveries waiting or in flight, over all hooks. Default 1000. */
  readonly maxQueue?: number;
  /** Total time a delivery may keep being retried, from its first attempt. Default 10 minutes. */
  readonly maxRetryMs?: number;
  /** Delay before the first retry; doubles each time. Default 1 s. */
  readonly initialDelayMs?: number;
  /** Cap on one backoff delay. Default 60 s. */
  readonly maxDelayMs?: number;
  /** Time limit of one HTTP attempt. Default 10 s. */
  readonly attemptTimeoutMs?: number;
  /** Attempts running at once. Default 4. */
  readonly concurrency?: number;
  readonly log?: (line: string) => void;
}

export interface WebhookStats {
  readonly queued: number;
  readonly inFlight: number;
  readonly delivered: number;
  readonly failed: number;
  readonly dropped: number;
}

interface Delivery {
  readonly deliveryId: string;
  readonly hookId: string;
  readonly url: string;
  readonly event: WebhookEvent;
  readonly body: string;
  readonly signer: Webhook;
  readonly firstAttemptAt: number;
  attempt: number;
  timer: NodeJS.Timeout | null;
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

export class WebhookDispatcher {
  private readonly hooks: () => Promise<readonly WebhookRegistration[]>;
  private readonly maxQueue: number;
  private readonly maxRetryMs: number;
  private readonly initialDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly attemptTimeoutMs: number;
  private readonly concurrency: number;
  private readonly log: (line: string) => void;

  /** Ready to run now, in order. */
  private readonly ready: Delivery[] = [];
  /** Waiting for a backoff timer. */
  private readonly waiting = new Set<Delivery>();
  private readonly running = new Map<Delivery, AbortController>();
  private readonly settled = new Set<Promise<void>>();
  private closed = false;
  private delivered = 0;
  private failed = 0;
  private dropped = 0;

  constructor(hooks: () => Promise<readonly WebhookRegistration[]>, opts: WebhookDispatcherOptions = {}) {
    this.hooks = hooks;
    this.maxQueue = opts.maxQueue ?? 1000;
    this.maxRetryMs = opts.maxRetryMs ?? 10 * 60_000;
    this.initialDelayMs = opts.initialDelayMs ?? 1000;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
    this.attemptTimeoutMs = opts.attemptTimeoutMs ?? 10_000;
    this.concurrency = opts.concurrency ?? 4;
    this.log = opts.log ?? (() => undefined);
  }

  /** Queues the payloads for every hook subscribed to their event. Never throws, never waits. */
  emit(payloads: readonly WebhookPayload[]): void {
    if (this.closed || payloads.length === 0) return;
    this.hooks().then(
      (hooks) => this.enqueue(hooks, payloads),
      (err: unknown) => this.log(`webhooks: cannot list hooks: ${(err as Error).message}`),
    );
  }

  stats(): WebhookStats {
    return {
      queued: this.ready.length + this.waiting.size,
      inFlight: this.running.size,
      delivered: this.delivered,
      failed: this.failed,
      dropped: this.dropped,
    };
  }

  /** Stops: pending retries are dropped, attempts in flight are aborted; resolves once they settled. */
  async close(): Promise<void> {
    this.closed = true;
    const pending = this.ready.length + this.waiting.size;
    for (const d of this.waiting) if (d.timer !== null) clearTimeout(d.timer);
    this.waiting.clear();
    this.ready.length = 0;
    for (const controller of this.running.values()) controller.abort();
    await Promise.all([...this.settled]);
    if (pending > 0) this.log(`webhooks: stopped with ${pending} deliveries not sent`);
  }

  private enqueue(hooks: readonly WebhookRegistration[], payloads: readonly WebhookPayload[]): void {
    if (this.closed) return;
    for (const payload of payloads) {
      const body = JSON.stringify({ event: payload.event, env: payload.env, id: payload.id, hash: payload.hash, at: payload.at });
      for (const hook of hooks) {
        if (!hook.events.includes(payload.event)) continue;
        if (this.ready.length + this.waiting.size + this.running.size >= this.maxQueue) {
          this.dropped++;
          this.log(`webhooks: queue full (${this.maxQueue}), dropped ${payload.event} for ${hook.id}`);
          continue;
        }
        let signer: Webhook;
        try {
          signer = webhookSigner(hook.secret);
        } catch (err) {
          this.failed++;
          this.log(`webhooks: ${hook.id}: its secret cannot sign (${(err as Error).message}); ${payload.event} not sent`);
          continue;
        }
        this.ready.push({
          deliveryId: 'msg_' + randomUUID().replaceAll('-', ''),
          hookId: hook.id,
          url: hook.url,
          event: payload.event,
          body,
          signer,
          firstAttemptAt: Date.now(),
          attempt: 0,
          timer: null,
        });
      }
    }
    this.pump();
  }

  private pump(): void {
    while (!this.closed && this.running.size < this.concurrency && this.ready.length > 0) {
      const delivery = this.ready.shift() as Delivery;
      const controller = new AbortController();
      this.running.set(delivery, controller);
      const done = this.attempt(delivery, controller).finally(() => {
        this.running.delete(delivery);
        this.settled.delete(done);
        this.pump();
      });
      this.settled.add(done);
    }
  }

  private async attempt(delivery: Delivery, controller: AbortController): Promise<void> {
    delivery.attempt++;
    const timeout = setTimeout(() => controller.abort(), this.attemptTimeoutMs);
    let problem: string;
    try {
      const res = await fetch(delivery.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'rcd-webhooks/1',
          'x-rcd-event': delivery.event,
          // Same webhook-id on every retry so a receiver can drop duplicates; a fresh timestamp.
          ...signatureHeaders(delivery.signer, delivery.deliveryId, delivery.body, new Date()),
        },
        body: delivery.body,
        signal: controller.signal,
        redirect: 'manual',
      });
      // Drain so the connection can be reused; the receiver's answer carries no meaning beyond its status.
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) {
        this.delivered++;
        return;
      }
      if (!isRetryableStatus(res.status)) {
        this.failed++;
        this.log(`webhooks: ${delivery.hookId} answered ${res.status} to ${delivery.event}; not retried`);
        return;
      }
      problem = `status ${res.status}`;
    } catch (err) {
      problem = controller.signal.aborted ? 'timed out or stopped' : (err as Error).message;
    } finally {
      clearTimeout(timeout);
    }
    if (this.closed) return;
    this.scheduleRetry(delivery, problem);
  }

  private scheduleRetry(delivery: Delivery, problem: string): void {
    const base = Math.min(this.maxDelayMs, this.initialDelayMs * 2 ** (delivery.attempt - 1));
    const delay = Math.round(base * (0.8 + Math.random() * 0.4));
    if (Date.now() + delay - delivery.firstAttemptAt > this.maxRetryMs) {
      this.failed++;
      this.log(`webhooks: giving up on ${delivery.event} for ${delivery.hookId} after ${delivery.attempt} attempts (${problem})`);
      return;
    }
    this.waiting.add(delivery);
    delivery.timer = setTimeout(() => {
      delivery.timer = null;
      this.waiting.delete(delivery);
      this.ready.push(delivery);
      this.pump();
    }, delay);
  }
}
