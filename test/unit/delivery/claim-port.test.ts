// claimPort (src/delivery/listener.ts) listens on the delivery port for a moment to prove nothing
// else does. A client connecting in that moment (a game client at start-up, the SDK's retry) must
// get an error it retries, never a connection nobody answers: the probe closes within the turn it
// started listening in, so the kernel resets what queued for it and Node accepts nothing.
import { createServer, type AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { claimPort } from '../../../src/delivery/listener.js';

/**
 * Connects to the port over and over from another thread (a connect must arrive while the probe
 * listens, which a connect from the claiming thread cannot: it runs between the two calls) until
 * told to stop; then reports how many connects completed their handshake and how many of those were still
 * open, unanswered, `holdMs` after they connected.
 */
const SPAMMER = `
const { parentPort, workerData } = require('node:worker_threads');
const { connect } = require('node:net');
let stop = false;
let accepted = 0;
let hung = 0;
let pending = 0;
parentPort.on('message', () => { stop = true; if (pending === 0) done(); });
function done() { parentPort.postMessage({ accepted, hung }); }
function once() {
  if (stop) return;
  pending++;
  const s = connect({ host: '127.0.0.1', port: workerData.port });
  let timer = null;
  s.on('connect', () => {
    // A connect from an ephemeral port to itself (the OS picked the target port as the source)
    // is TCP's self-connect: no listener was involved.
    if (s.localPort === s.remotePort) { s.destroy(); return; }
    accepted++;
    // Sent as a client would: a connect whose handshake the closing probe left half-open then
    // meets a reset, so only a connection some socket holds and never answers stays open.
    s.write('GET /healthz HTTP/1.1\\r\\nhost: x\\r\\n\\r\\n');
    timer = setTimeout(() => { hung++; s.destroy(); }, workerData.holdMs);
  });
  s.on('error', () => {});
  s.on('close', () => {
    if (timer !== null) clearTimeout(timer);
    pending--;
    if (stop && pending === 0) done();
    setImmediate(once);
  });
}
for (let i = 0; i < 4; i++) once();
`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

describe('claimPort', () => {
  it('leaves no client that connects while it holds the port waiting on a socket nobody answers', async () => {
    const port = await freePort();
    const worker = new Worker(SPAMMER, { eval: true, workerData: { port, holdMs: 500 } });
    const report = new Promise<{ accepted: number; hung: number }>((resolve) => worker.once('message', resolve));
    // Let the spammer get going (its connects are refused while nothing listens).
    await new Promise((r) => setTimeout(r, 50));
    for (let i = 0; i < 300; i++) expect(await claimPort('127.0.0.1', port)).toBe(port);
    worker.postMessage('stop');
    const { accepted, hung } = await report;
    await worker.terminate();
    expect(hung, `${accepted} connects were accepted`).toBe(0);
  }, 30_000);

  it('rejects a port another listener holds', async () => {
    const held = createServer();
    await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
    const { port } = held.address() as AddressInfo;
    await expect(claimPort('127.0.0.1', port)).rejects.toMatchObject({ code: 'EADDRINUSE' });
    await new Promise((r) => held.close(r));
  });
});
