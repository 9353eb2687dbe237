/**
 * A TCP relay to a real server (PostgreSQL in the tests), whose connections a test breaks at once:
 * closed (FIN, as a server that ends its sessions), reset (RST, as a crash or a network fault
 * would), or frozen (a silent partition: bytes are dropped both ways and nothing is closed, so the
 * client hears nothing at all).
 */
import { connect, createServer, type Socket } from 'node:net';

export interface TcpRelay {
  /** The target's URL with the relay's host and port in its place. */
  readonly url: string;
  /** Closes every relayed connection on both sides. */
  close(): void;
  /** Resets the client side of every relayed connection (the client reads ECONNRESET). */
  reset(): void;
  /**
   * A silent partition: every connection, open or opened from now on, drops what either side sends
   * and stays open. Connections frozen stay so; thaw() lets new connections through again.
   */
  freeze(): void;
  thaw(): void;
  /** Stops listening and closes what is left. */
  stop(): Promise<void>;
}

interface Relayed {
  readonly client: Socket;
  frozen: boolean;
}

export async function startTcpRelay(targetUrl: string): Promise<TcpRelay> {
  const target = new URL(targetUrl);
  const relayed = new Set<Relayed>();
  let freezing = false;
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    const r: Relayed = { client, frozen: freezing };
    relayed.add(r);
    client.on('error', () => undefined).on('close', () => {
      relayed.delete(r);
      upstream.destroy();
    });
    upstream.on('error', () => undefined).on('close', () => client.destroy());
    client.on('data', (d: Buffer) => void (r.frozen || upstream.write(d)));
    upstream.on('data', (d: Buffer) => void (r.frozen || client.write(d)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const via = new URL(targetUrl);
  via.hostname = '127.0.0.1';
  via.port = String((server.address() as { port: number }).port);
  return {
    url: via.toString(),
    close: () => {
      for (const r of relayed) r.client.destroy();
    },
    reset: () => {
      for (const r of relayed) r.client.resetAndDestroy();
    },
    freeze: () => {
      freezing = true;
      for (const r of relayed) r.frozen = true;
    },
    thaw: () => {
      freezing = false;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const r of relayed) r.client.destroy();
      }),
  };
}
