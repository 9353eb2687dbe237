/**
 * A large environment's catalog, which the server sends as pieces (one block of entries each) under
 * one Content-Length: byte for byte the catalog, identity and gzip; whole for a client that stops
 * reading until the server's socket pushes back; right after an edit; and a client that goes away
 * in the middle of one leaves the server serving.
 */
import { connect } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { rawCall } from '../helpers/http-raw.js';

const KEY = 'large-catalog-key-1';
const AUTH = { authorization: 'Bearer test-admin-token' };
const ITEMS = 20_000;

function bundle(): unknown {
  const content: Record<string, unknown> = {};
  for (let i = 0; i < ITEMS; i++) content[`Item${String(i).padStart(5, '0')}`] = { json: { i } };
  return { environments: { big: { keys: [KEY], content } } };
}

interface Answer {
  readonly status: number;
  readonly headers: Map<string, string>;
  readonly body: Buffer;
}

/**
 * Reads answers framed by Content-Length off a connection as its bytes arrive (chunked framing fails
 * the test). The bytes are joined only once enough have arrived to complete the answer in progress,
 * so each is copied about once however small the socket's reads.
 */
class AnswerReader {
  readonly answers: Answer[] = [];
  private chunks: Buffer[] = [];
  private held = 0;
  /** Bytes to hold before parsing again: the end of the answer whose head was read, or 0 while a head is incomplete. */
  private need = 0;

  push(data: Buffer): void {
    this.chunks.push(data);
    this.held += data.length;
    if (this.held < this.need) return;
    let wire = Buffer.concat(this.chunks, this.held);
    this.need = 0;
    for (;;) {
      const end = wire.indexOf('\r\n\r\n');
      if (end === -1) break;
      const lines = wire.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(lines[0]!.split(' ')[1]);
      const headers = new Map<string, string>();
      for (const l of lines.slice(1)) {
        const c = l.indexOf(':');
        headers.set(l.slice(0, c).trim().toLowerCase(), l.slice(c + 1).trim());
      }
      expect(headers.has('transfer-encoding')).toBe(false);
      const total = end + 4 + Number(headers.get('content-length'));
      if (wire.length < total) {
        this.need = total;
        break;
      }
      this.answers.push({ status, headers, body: wire.subarray(end + 4, total) });
      wire = wire.subarray(total);
    }
    this.chunks = [wire];
    this.held = wire.length;
  }
}

function catalogRequest(host: string, gzip: boolean): string {
  return `GET /api/v1/env/catalog HTTP/1.1\r\nHost: ${host}\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nAccept-Encoding: ${gzip ? 'gzip' : 'identity'}\r\n\r\n`;
}

/**
 * Sends `count` catalog requests pipelined on one connection, does not read for `pauseMs` (the
 * answers, megabytes in all, fill the socket buffers and the server meets backpressure), then reads
 * everything until the last answer is complete.
 */
function pipelined(base: string, count: number, gzip: boolean, pauseMs: number): Promise<Answer[]> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const reader = new AnswerReader();
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(Array.from({ length: count }, () => catalogRequest(url.host, gzip)).join(''));
      socket.pause();
      setTimeout(() => socket.resume(), pauseMs);
    });
    socket.on('data', (d: Buffer) => {
      try {
        reader.push(d);
      } catch (err) {
        socket.destroy();
        reject(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      if (reader.answers.length === count) {
        socket.destroy();
        resolve(reader.answers);
      }
    });
    socket.on('error', reject);
    socket.setTimeout(30_000, () => reject(new Error('no complete answers within 30 s')));
  });
}

let srv: ServerProcess;
let identityBody: Buffer;

beforeAll(async () => {
  srv = await startServer({ dir: tempDir(), admin: true, bundle: bundle() });
}, 60_000);
afterAll(async () => {
  await srv?.dispose();
});

describe('a large catalog', () => {
  it('is the whole catalog, with its length, identity and gzip', async () => {
    const identity = await rawCall(srv.url, '/api/v1/env/catalog', { method: 'GET', key: KEY, headers: { 'accept-encoding': 'identity' } });
    expect(identity.status).toBe(200);
    expect(identity.headers['transfer-encoding']).toBeUndefined();
    expect(Number(identity.headers['content-length'])).toBe(identity.wire.length);
    // Well past one piece (src/control/catalog.ts sends bodies over 64 KiB in pieces).
    expect(identity.wire.length).toBeGreaterThan(500_000);
    const parsed = JSON.parse(identity.wire.toString('utf8')) as { catalog: Record<string, { h: string; d: boolean }> };
    expect(Object.keys(parsed.catalog).length).toBe(ITEMS);
    expect(parsed.catalog.Item12345).toEqual({ h: expect.stringMatching(/^[0-9a-f]{32}$/) as unknown, d: false });
    identityBody = identity.wire;

    const gzip = await rawCall(srv.url, '/api/v1/env/catalog', { method: 'GET', key: KEY, headers: { 'accept-encoding': 'gzip' } });
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(Number(gzip.headers['content-length'])).toBe(gzip.wire.length);
    expect(gunzipSync(gzip.wire).equals(identityBody)).toBe(true);
    expect(gzip.wire.length).toBeLessThan(identityBody.length);
  });

  it('arrives whole for a client that stops reading until the server is pushed back', async () => {
    const answers = await pipelined(srv.url, 12, false, 1000);
    expect(answers.length).toBe(12);
    for (const a of answers) {
      expect(a.status, a.body.toString().slice(0, 300)).toBe(200);
      expect(a.body.equals(identityBody)).toBe(true);
    }
    const zipped = await pipelined(srv.url, 6, true, 500);
    for (const a of zipped) expect(gunzipSync(a.body).equals(identityBody)).toBe(true);
  });

  it('changes with an edit, and a client that leaves mid-answer leaves the server serving', async () => {
    const before = await rawCall(srv.url, '/api/v1/env/catalog', { method: 'GET', key: KEY });
    const put = await fetch(`${srv.adminUrl!}/admin/v1/environments/big/content/Item10000`, { method: 'PUT', headers: AUTH, body: '{"i":"edited"}' });
    expect(put.status).toBe(200);
    const after = await rawCall(srv.url, '/api/v1/env/catalog', { method: 'GET', key: KEY, headers: { 'accept-encoding': 'gzip' } });
    expect(after.headers.etag).not.toBe(before.headers.etag);
    const body = gunzipSync(after.wire);
    const catalog = (JSON.parse(body.toString('utf8')) as { catalog: Record<string, { h: string }> }).catalog;
    const was = (JSON.parse(before.wire.toString('utf8')) as { catalog: Record<string, { h: string }> }).catalog;
    expect(catalog.Item10000!.h).not.toBe(was.Item10000!.h);
    expect(catalog.Item10001).toEqual(was.Item10001);
    expect(body.length).toBe(before.wire.length);

    // Ask for a lot, read a little, go away (a reset with answers still being written), a few times:
    // the server drops what is left of those answers and goes on.
    const url = new URL(srv.url);
    for (let round = 0; round < 10; round++) {
      await new Promise<void>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname, () => {
          socket.write(Array.from({ length: 8 }, () => catalogRequest(url.host, false)).join(''));
        });
        socket.once('data', () => {
          socket.destroy();
          resolve();
        });
        socket.on('error', reject);
      });
    }
    const again = await rawCall(srv.url, '/api/v1/env/catalog', { method: 'GET', key: KEY, headers: { 'accept-encoding': 'identity' } });
    expect(again.status).toBe(200);
    expect(again.wire.length).toBe(Number(again.headers['content-length']));
    expect(srv.child.exitCode).toBeNull();
  });
});
