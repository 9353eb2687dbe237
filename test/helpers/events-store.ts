/**
 * One store, two nodes, for the change-stream tests (events.test.ts in Node, events-chromium.test.ts
 * in Chromium): the first node started at once with heartbeats every second, a 2.5 s jitter window, 5
 * streams at most and CORS for a page server's origin; the store's second node started by the first
 * test that needs it, on a port chosen once so that a restart comes back on the same one.
 */
import { freePort } from './free-port.js';
import { startPageServer, type PageServer } from './browser.js';
import { startServer, tempDir, type ServerProcess } from './server-process.js';
import type { NodeStream } from './sse.js';

export const AUTH = { authorization: 'Bearer test-admin-token' };
export const KEY = 'events-test-key-1';
export const OTHER_KEY = 'events-other-env-key';
/** The environment of the tests that restart a node of the store. */
export const FLEET_KEY = 'events-fleet-env-key';

export function changes(s: NodeStream): { seq: number; changed?: string[]; all?: boolean; catalog: string; jitterMs: number }[] {
  return s.events.filter((e) => e.event === 'change').map((e) => JSON.parse(e.data) as { seq: number; changed?: string[]; all?: boolean; catalog: string; jitterMs: number });
}

export async function adm(srv: ServerProcess, method: string, path: string, body?: string): Promise<unknown> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as unknown;
}

export class EventsStore {
  /** The store's second node, once started; restartSecond starts it again. */
  private second: Promise<ServerProcess> | undefined;
  /** The second node's port, chosen once: a restarted node comes back on the same one. */
  private secondPort: number | undefined;

  private constructor(
    readonly dir: string,
    readonly srv: ServerProcess,
    readonly page: PageServer,
  ) {}

  static async start(): Promise<EventsStore> {
    const dir = tempDir();
    const page = await startPageServer();
    const srv = await startServer({
      dir,
      admin: true,
      args: ['--stream-heartbeat-ms', '1000', '--stream-jitter-ms', '2500', '--max-streams', '5', '--cors-origins', page.origin],
      bundle: {
        environments: {
          web: { keys: [KEY], content: { Shop: { json: { price: 1 } }, News: { json: { n: 1 } } } },
          other: { keys: [OTHER_KEY], content: { Shop: { json: { price: 9 } } } },
          fleet: { keys: [FLEET_KEY], content: { News: { json: { n: 1 } } } },
        },
      },
    });
    return new EventsStore(dir, srv, page);
  }

  /** The store's second node, started on first use. */
  secondNode(): Promise<ServerProcess> {
    this.second ??= freePort().then((port) => {
      this.secondPort = port;
      return this.startSecond();
    });
    return this.second;
  }

  /** Starts the second node again (after a test stopped it), on its port. */
  restartSecond(): Promise<ServerProcess> {
    this.second = this.startSecond();
    return this.second;
  }

  async dispose(): Promise<void> {
    // A second node that failed to start has nothing to stop.
    await this.second?.then((node) => node.dispose(), () => undefined);
    await this.srv.dispose();
    await this.page.close();
  }

  private startSecond(): Promise<ServerProcess> {
    return startServer({ dir: this.dir, admin: true, args: ['--port', String(this.secondPort), '--cors-origins', this.page.origin] });
  }
}
