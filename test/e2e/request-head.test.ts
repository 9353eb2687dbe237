/**
 * The headers the delivery routes read (src/delivery/wire/request-head.ts), against the real server in
 * both ways it reads a request's head: one pass over every header (the default, which also checks
 * the framing) and one getHeader per value (--reject-ambiguous-framing false). Both must answer as
 * an HTTP server reading the first header of each name: duplicates, letter case, the key in
 * X-Api-Key or (OFREP) Authorization, Content-Type, Content-Length, If-None-Match, Accept-Encoding
 * and a listed Origin.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server-process.js';
import { rawExchange, responsesIn } from '../helpers/raw.js';

const KEY = 'head-key-0001';
const ORIGIN = 'https://game.example';
const BIG = { text: 'x'.repeat(4000) };
const BUNDLE = {
  environments: {
    env: {
      keys: [KEY],
      content: { Settings: { json: { volume: 7 } }, Big: { json: BIG } },
    },
  },
};
const BODY = '{"u":"player-1"}';
const OFREP_BODY = '{"context":{"targetingKey":"player-1"}}';
const MAX_BODY = 1024;

interface Answer {
  status: number;
  headers: string;
  body: string;
}

function header(a: Answer, name: string): string | null {
  const m = new RegExp(`^${name}: (.*)\\r$`, 'im').exec(a.headers);
  return m === null ? null : m[1]!;
}

function code(a: Answer): string {
  return (JSON.parse(a.body) as { error?: { code?: string } }).error?.code ?? '';
}

const modes = [
  { name: 'one pass over every header (default)', args: [] as string[] },
  { name: 'getHeader per value (--reject-ambiguous-framing false)', args: ['--reject-ambiguous-framing', 'false'] },
];

for (const mode of modes) {
  describe(`request head: ${mode.name}`, () => {
    let server: ServerProcess;
    beforeAll(async () => {
      server = await startServer({ bundle: BUNDLE, args: ['--cors-origins', ORIGIN, '--compress-min-bytes', '1024', '--max-body', String(MAX_BODY), ...mode.args] });
    });
    afterAll(async () => {
      await server?.dispose();
    });

    /**
     * One request written as given (header lines in order, duplicates and all) and its answer; the body
     * goes with a Content-Length of its size unless `withLength` is false (chunked, or no body at all).
     */
    async function exchange(requestLine: string, lines: readonly string[], body: string, withLength = true): Promise<Answer> {
      const framing = withLength ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : '';
      const raw = `${requestLine} HTTP/1.1\r\nHost: rcd\r\n${lines.map((l) => `${l}\r\n`).join('')}${framing}\r\n${body}`;
      const out = await rawExchange(Number(new URL(server.url).port), [raw], { untilResponses: 1 });
      const [first] = responsesIn(out.bytes);
      expect(first, `an answer to ${requestLine}`).toBeDefined();
      return { status: first!.status, headers: first!.headers, body: first!.body.toString('latin1') };
    }

    const post = (path: string, lines: readonly string[], body = BODY): Promise<Answer> => exchange(`POST ${path}`, lines, body);
    const get = (path: string, lines: readonly string[]): Promise<Answer> => exchange(`GET ${path}`, lines, '', false);

    it('answers with the key and type sent in any letter case', async () => {
      const a = await post('/api/v1/config/Settings', ['X-API-KEY: ' + KEY, 'content-TYPE: Application/JSON; charset=utf-8']);
      expect(a.status).toBe(200);
      expect(JSON.parse(a.body)).toEqual({ volume: 7 });
    });

    it('takes the first X-Api-Key of two', async () => {
      const ok = await post('/api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'X-Api-Key: not-a-key', 'Content-Type: application/json']);
      expect(ok.status).toBe(200);
      const refused = await post('/api/v1/config/Settings', ['X-Api-Key: not-a-key', `X-Api-Key: ${KEY}`, 'Content-Type: application/json']);
      expect(refused.status).toBe(401);
      expect(code(refused)).toBe('invalid_api_key');
    });

    it('takes the first Content-Type of two', async () => {
      const refused = await post('/api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: text/plain', 'Content-Type: application/json']);
      expect(refused.status).toBe(400);
      expect(code(refused)).toBe('unsupported_content_type');
      const ok = await post('/api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', 'Content-Type: text/plain']);
      expect(ok.status).toBe(200);
    });

    it('refuses a missing key, a missing type and an empty body with their codes', async () => {
      const noKey = await post('/api/v1/config/Settings', ['Content-Type: application/json']);
      expect([noKey.status, code(noKey)]).toEqual([401, 'missing_api_key']);
      const noType = await post('/api/v1/config/Settings', [`X-Api-Key: ${KEY}`]);
      expect([noType.status, code(noType)]).toEqual([400, 'unsupported_content_type']);
      const empty = await post('/api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json'], '');
      expect([empty.status, code(empty)]).toEqual([400, 'invalid_json']);
      const noLength = await exchange('POST /api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json'], '', false);
      expect([noLength.status, code(noLength)]).toEqual([400, 'invalid_json']);
    });

    it('reads a chunked body (Transfer-Encoding, no Content-Length)', async () => {
      const chunked = `${Buffer.byteLength(BODY).toString(16)}\r\n${BODY}\r\n0\r\n\r\n`;
      const a = await exchange('POST /api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', 'Transfer-Encoding: chunked'], chunked, false);
      expect(a.status).toBe(200);
      expect(JSON.parse(a.body)).toEqual({ volume: 7 });
    });

    it('holds --max-body for a declared length and for a chunked body', async () => {
      const big = JSON.stringify({ u: 'player-1', p: { pad: 'x'.repeat(MAX_BODY) } });
      const declared = await post('/api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json'], big);
      expect([declared.status, code(declared)]).toEqual([413, 'payload_too_large']);
      const chunks = `200\r\n${big.slice(0, 512)}\r\n200\r\n${big.slice(512, 1024)}\r\n${(big.length - 1024).toString(16)}\r\n${big.slice(1024)}\r\n0\r\n\r\n`;
      const chunked = await exchange('POST /api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', 'Transfer-Encoding: chunked'], chunks, false);
      expect([chunked.status, code(chunked)]).toEqual([413, 'payload_too_large']);
      const ofrep = await exchange('POST /ofrep/v1/evaluate/flags/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', 'Transfer-Encoding: chunked'], chunks, false);
      expect(ofrep.status).toBe(413);
      expect(code(ofrep)).toBe('payload_too_large');
    });

    // routes.ts declaredOver decides a short Content-Length by its length: it relies on uWS letting
    // only digits (spaces around them allowed) reach a handler.
    it('closes the connection, unanswered, on a Content-Length that is not digits; takes digits with spaces and leading zeros', async () => {
      const port = Number(new URL(server.url).port);
      for (const value of ['1e1', '+16', '0x10', '-1', 'abc', '1.6e1', '16x', '99999999999999999999']) {
        const raw = `POST /api/v1/config/Settings HTTP/1.1\r\nHost: rcd\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${value}\r\n\r\n${BODY}`;
        const out = await rawExchange(port, [raw], { waitMs: 3000 });
        expect(out.closed, `closed on ${value}`).toBe(true);
        expect(out.bytes.length, `no answer to ${value}`).toBe(0);
      }
      for (const value of [` ${BODY.length}`, `${BODY.length} `, `000${BODY.length}`]) {
        const raw = `POST /api/v1/config/Settings HTTP/1.1\r\nHost: rcd\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${value}\r\n\r\n${BODY}`;
        const [first] = responsesIn((await rawExchange(port, [raw], { untilResponses: 1 })).bytes);
        expect(first?.status, `answered with Content-Length "${value}"`).toBe(200);
      }
    });

    it('answers 304 to the first If-None-Match and compresses for Accept-Encoding', async () => {
      const first = await post('/api/v1/config/Big', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', 'Accept-Encoding: gzip']);
      expect(first.status).toBe(200);
      expect(header(first, 'content-encoding')).toBe('gzip');
      const etag = header(first, 'etag')!;
      expect(etag).toMatch(/^W?\/?"/);
      const plain = await post('/api/v1/config/Big', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json']);
      expect(header(plain, 'content-encoding')).toBeNull();
      const again = await post('/api/v1/config/Big', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', 'Accept-Encoding: gzip', `If-None-Match: ${etag}`]);
      expect(again.status).toBe(304);
      const second = await post('/api/v1/config/Big', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', 'Accept-Encoding: gzip', 'If-None-Match: "other"', `If-None-Match: ${etag}`]);
      expect(second.status).toBe(200);
    });

    it('echoes a listed Origin and no other', async () => {
      const listed = await post('/api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', `Origin: ${ORIGIN}`]);
      expect(header(listed, 'access-control-allow-origin')).toBe(ORIGIN);
      const other = await post('/api/v1/config/Settings', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', 'Origin: https://elsewhere.example']);
      expect(other.status).toBe(200);
      expect(header(other, 'access-control-allow-origin')).toBeNull();
    });

    it('serves the catalog with the head it reads (key, 304)', async () => {
      const first = await get('/api/v1/env/catalog', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json']);
      expect(first.status).toBe(200);
      const etag = header(first, 'etag')!;
      const again = await get('/api/v1/env/catalog', [`X-Api-Key: ${KEY}`, 'Content-Type: application/json', `If-None-Match: ${etag}`]);
      expect(again.status).toBe(304);
    });

    it('takes the OFREP key from Authorization: Bearer when X-Api-Key is absent, and X-Api-Key first', async () => {
      const bearer = await post('/ofrep/v1/evaluate/flags/Settings', [`Authorization: Bearer ${KEY}`, 'Content-Type: application/json'], OFREP_BODY);
      expect(bearer.status).toBe(200);
      expect((JSON.parse(bearer.body) as { key: string }).key).toBe('Settings');
      const both = await post('/ofrep/v1/evaluate/flags/Settings', ['X-Api-Key: not-a-key', `Authorization: Bearer ${KEY}`, 'Content-Type: application/json'], OFREP_BODY);
      expect([both.status, code(both)]).toEqual([401, 'invalid_api_key']);
      const none = await post('/ofrep/v1/evaluate/flags/Settings', ['Content-Type: application/json'], OFREP_BODY);
      expect([none.status, code(none)]).toEqual([401, 'missing_api_key']);
    });
  });
}
