/**
 * The owning thread's handle on the control thread (src/control/thread.ts): starts it, runs its
 * lifecycle commands one at a time, prints its log lines, and reports its unexpected end.
 */
import { Worker, type MessagePort } from 'node:worker_threads';
import { StartupError } from '../runtime/config.js';
import { RcdError } from '../runtime/errors.js';
import { logError } from '../runtime/log.js';
import type { ControlCommand, ControlEvent, ControlFailure, ControlInit, DemoNotice } from './protocol.js';

type Reply = Exclude<ControlEvent, { type: 'failed' } | { type: 'store-open' }>;

interface Waiter {
  readonly type: Reply['type'];
  readonly resolve: (event: Reply) => void;
  readonly reject: (err: Error) => void;
}

export class ControlThread {
  private readonly worker: Worker;
  private readonly onFatal: (reason: string) => void;
  private waiter: Waiter | null = null;
  private closing = false;
  private exited = false;
  private readonly exit: Promise<void>;
  /** The reader URL once the store is open; rejected when the opening fails or the thread ends first. */
  private readonly storeOpen: Promise<string>;
  private settleStoreOpen: { readonly resolve: (readerUrl: string) => void; readonly reject: (err: Error) => void } | null = null;

  /**
   * @param feeds the control thread's ends of the delivery loops' feeds (transferred)
   * @param onFatal called when the thread fails or ends while the server runs
   */
  constructor(init: Omit<ControlInit, 'feeds'>, feeds: readonly MessagePort[], onFatal: (reason: string) => void) {
    this.onFatal = onFatal;
    this.storeOpen = new Promise((resolve, reject) => (this.settleStoreOpen = { resolve, reject }));
    // Awaited only by a start that gets that far; a failure is also reported through opened().
    this.storeOpen.catch(() => undefined);
    const workerData: ControlInit = { ...init, feeds };
    this.worker = new Worker(new URL('./thread.js', import.meta.url), { workerData, transferList: [...feeds] });
    this.worker.on('message', (event: ControlEvent) => this.onEvent(event));
    this.worker.on('error', (err: Error) => this.fail(`the control thread failed: ${err.stack ?? err.message}`));
    this.exit = new Promise((resolve) => {
      this.worker.once('exit', (code: number) => {
        this.exited = true;
        if (!this.closing) this.fail(`the control thread ended unexpectedly (exit code ${code})`);
        resolve();
      });
    });
  }

  /**
   * Resolves with the store's reader URL as soon as the store is open, while the control thread
   * still loads the directory (opened() is the end of the opening; call it first).
   */
  storeOpened(): Promise<string> {
    return this.storeOpen;
  }

  /** Resolves once the store is open, every loop has the first directory and the admin listener is up. */
  opened(): Promise<{ adminPort: number | null; adminTokenAt: string | null }> {
    return this.expect('opened', null) as Promise<{ adminPort: number | null; adminTokenAt: string | null }>;
  }

  /** Imports --import and seeds the demo; resolves once every loop sees the result. */
  async seed(): Promise<DemoNotice | null> {
    const event = (await this.expect('seeded', { type: 'seed' })) as { demo: DemoNotice | null };
    return event.demo;
  }

  async stopAdmin(): Promise<void> {
    if (!this.exited) await this.expect('admin-stopped', { type: 'stop-admin' });
  }

  /** Has the admin listener read its certificate files again (no answer: the control thread logs the outcome). */
  reloadTls(): void {
    if (!this.exited && !this.closing) this.worker.postMessage({ type: 'reload-tls' } satisfies ControlCommand);
  }

  /** Records the last key use, closes the admin state and the store, and ends the thread. */
  async close(): Promise<void> {
    if (this.closing) return this.exit;
    this.closing = true;
    if (!this.exited) {
      try {
        await this.expect('closed', { type: 'close' });
      } catch (err) {
        logError(`closing the store: ${(err as Error).message}`);
      }
      // Idle by now (everything released); terminating skips waiting for its handles to unref.
      await this.worker.terminate();
    }
    return this.exit;
  }

  private expect(type: Reply['type'], command: ControlCommand | null): Promise<Reply> {
    if (this.waiter !== null) return Promise.reject(new Error(`control thread busy with ${this.waiter.type}`));
    if (this.exited) return Promise.reject(new StartupError('the control thread has ended'));
    return new Promise<Reply>((resolve, reject) => {
      this.waiter = { type, resolve, reject };
      if (command !== null) this.worker.postMessage(command);
    });
  }

  private onEvent(event: ControlEvent): void {
    if (event.type === 'store-open') {
      this.settleStoreOpen?.resolve(event.readerUrl);
      this.settleStoreOpen = null;
      return;
    }
    if (event.type === 'failed') this.rejectStoreOpen(errorOf(event.failure));
    const waiter = this.waiter;
    this.waiter = null;
    if (waiter === null) {
      if (event.type === 'failed') this.fail(event.failure.message);
      return;
    }
    if (event.type === 'failed') waiter.reject(errorOf(event.failure));
    else if (event.type === waiter.type) waiter.resolve(event);
    else waiter.reject(new Error(`the control thread answered ${event.type} to ${waiter.type}`));
  }

  private rejectStoreOpen(err: Error): void {
    this.settleStoreOpen?.reject(err);
    this.settleStoreOpen = null;
  }

  private fail(reason: string): void {
    this.rejectStoreOpen(new StartupError(reason));
    const waiter = this.waiter;
    this.waiter = null;
    if (waiter !== null) waiter.reject(new StartupError(reason));
    else if (!this.closing) this.onFatal(reason);
  }
}

function errorOf(f: ControlFailure): Error {
  return f.code === null ? new StartupError(f.message) : new RcdError(f.code, f.message, f.details);
}
