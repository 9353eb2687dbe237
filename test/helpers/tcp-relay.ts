/**
 * A TCP relay to a real server (PostgreSQL in the tests), whose connections a test breaks at once:
 * closed (FIN, as a server that ends its sessions) or reset (RST, as a crash or a network fault
 * would). New connections keep going through.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface TcpRelay {
  /** The target's URL with the relay's host and port in its place. */
  readonly url: string;
  /** Closes every relayed connection on both sides. */
  close(): void;
  /** Resets the client side of every relayed connection (the client reads ECONNRESET). */
  reset(): void;
  /** Stops listening and closes what is left. */
  stop(): Promise<void>;
}

export async function startTcpRelay(targetUrl: string): Promise<TcpRelay> {
  const target = new URL(targetUrl);
  const clients = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    clients.add(client);
    client.on('error', () => undefined).on('close', () => {
      clients.delete(client);
      upstream.destroy();
    });
    upstream.on('error', () => undefined).on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const via = new URL(targetUrl);
  via.hostname = '127.0.0.1';
  via.port = String((server.address() as { port: number }).port);
  return {
    url: via.toString(),
    close: () => {
      for (const c of clients) c.destroy();
    },
    reset: () => {
      for (const c of clients) c.resetAndDestroy();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const c of clients) c.destroy();
      }),
  };
}
