/**
 * The HTTP inputs docs/security.md ("HTTP layer") describes, input by input, as raw bytes: one
 * definition for the test that pins what rcd's own listener does with each and for the test that
 * sends each through the recommended nginx.
 */

export interface HttpInput {
  /** As named in docs/security.md. */
  readonly name: string;
  readonly bytes: Buffer;
}

const CRLF = '\r\n';

/** A GET /healthz head with `extra` header lines (each ending in CRLF) after Host. */
export function healthHead(extra = '', requestLine = 'GET /healthz HTTP/1.1'): string {
  return `${requestLine}${CRLF}Host: a${CRLF}${extra}${CRLF}`;
}

/** A POST /api/v1/config/:id with key, JSON content type and a `{}` body. */
export function contentPost(id: string, key: Buffer | string, extra = ''): Buffer {
  return Buffer.concat([
    Buffer.from(`POST /api/v1/config/${id} HTTP/1.1${CRLF}Host: a${CRLF}X-Api-Key: `, 'latin1'),
    typeof key === 'string' ? Buffer.from(key, 'latin1') : key,
    Buffer.from(`${CRLF}Content-Type: application/json${CRLF}Content-Length: 2${CRLF}${extra}${CRLF}{}`, 'latin1'),
  ]);
}

/** A POST of `body` to `path` with the given headers and a Content-Length. */
export function rawPost(path: string, headers: Readonly<Record<string, string>>, body: string): string {
  const lines = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}${CRLF}`)
    .join('');
  return `POST ${path} HTTP/1.1${CRLF}Host: a${CRLF}${lines}Content-Length: ${Buffer.byteLength(body)}${CRLF}${CRLF}${body}`;
}

function headerLines(n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += `X-H${i}: v${CRLF}`;
  return out;
}

const b = (s: string): Buffer => Buffer.from(s, 'latin1');

/** The malformed inputs that rcd's uWS build does not answer (it holds the connection until its 10 s idle timeout). */
export const UNANSWERED_INPUTS: readonly HttpInput[] = [
  { name: 'HTTP/1.0 request', bytes: b(`GET /healthz HTTP/1.0${CRLF}${CRLF}`) },
  { name: 'HTTP/1.0 request with Host', bytes: b(healthHead('', 'GET /healthz HTTP/1.0')) },
  { name: 'HTTP/1.1 without Host', bytes: b(`GET /healthz HTTP/1.1${CRLF}${CRLF}`) },
  { name: 'HTTP/2.0 in the request line', bytes: b(healthHead('', 'GET /healthz HTTP/2.0')) },
  { name: 'request line without a version', bytes: b(`GET /healthz${CRLF}${CRLF}`) },
  { name: '49 header fields', bytes: b(healthHead(headerLines(48))) },
  { name: '200 header fields', bytes: b(healthHead(headerLines(199))) },
  { name: 'header line without a colon', bytes: b(healthHead(`Foo bar${CRLF}`)) },
  { name: 'folded header line (SP)', bytes: b(healthHead(`X-A: a${CRLF} b${CRLF}`)) },
  { name: 'folded header line (HTAB)', bytes: b(healthHead(`X-A: a${CRLF}\tb${CRLF}`)) },
  { name: 'space in a header name', bytes: b(healthHead(`X A: v${CRLF}`)) },
  { name: 'space before the colon', bytes: b(healthHead(`X-A : v${CRLF}`)) },
  { name: '_ in a header name', bytes: b(healthHead(`X_A: v${CRLF}`)) },
  { name: '. in a header name', bytes: b(healthHead(`X.A: v${CRLF}`)) },
  { name: 'bare LF line endings', bytes: b(`GET /healthz HTTP/1.1\nHost: a\n\n`) },
  { name: 'bare LF ending the head', bytes: b(`GET /healthz HTTP/1.1${CRLF}Host: a${CRLF}\n`) },
  { name: '0x01 byte in a value', bytes: b(healthHead(`X-A: a\x01b${CRLF}`)) },
  { name: '0x1F byte in a value', bytes: b(healthHead(`X-A: a\x1fb${CRLF}`)) },
  { name: 'NUL byte in a value', bytes: b(healthHead(`X-A: a\x00b${CRLF}`)) },
  { name: 'OPTIONS *', bytes: b(healthHead('', 'OPTIONS * HTTP/1.1')) },
  { name: 'absolute-form target', bytes: b(healthHead('', 'GET http://a/healthz HTTP/1.1')) },
  { name: 'CONNECT authority-form', bytes: b(healthHead('', 'CONNECT a:443 HTTP/1.1')) },
  { name: 'empty line before the request line', bytes: b(CRLF + healthHead()) },
  { name: 'TLS ClientHello on the plain port', bytes: Buffer.from('160301020001000001fc0303', 'hex') },
  { name: 'lower-case version (http/1.1)', bytes: b(healthHead('', 'GET /healthz http/1.1')) },
  { name: 'two spaces after the method', bytes: b(healthHead('', 'GET  /healthz HTTP/1.1')) },
];

/** Inputs rcd's uWS build refuses by closing the connection at once, without an answer. */
export const CLOSED_INPUTS: readonly HttpInput[] = [
  { name: 'lower-case method', bytes: b(healthHead('', 'get /healthz HTTP/1.1')) },
  { name: 'method other than the nine of RFC 9110 and 5789 (PROPFIND)', bytes: b(healthHead('', 'PROPFIND /healthz HTTP/1.1')) },
  { name: 'Content-Length and Transfer-Encoding', bytes: b(`POST /api/v1/config/A HTTP/1.1${CRLF}Host: a${CRLF}Content-Length: 2${CRLF}Transfer-Encoding: chunked${CRLF}${CRLF}2${CRLF}{}${CRLF}0${CRLF}${CRLF}`) },
  { name: 'Transfer-Encoding other than chunked', bytes: b(`POST /api/v1/config/A HTTP/1.1${CRLF}Host: a${CRLF}Transfer-Encoding: gzip${CRLF}${CRLF}{}`) },
  { name: 'negative Content-Length', bytes: b(`POST /api/v1/config/A HTTP/1.1${CRLF}Host: a${CRLF}Content-Length: -1${CRLF}${CRLF}{}`) },
  { name: 'hexadecimal Content-Length', bytes: b(`POST /api/v1/config/A HTTP/1.1${CRLF}Host: a${CRLF}Content-Length: 0x2${CRLF}${CRLF}{}`) },
  { name: 'Content-Length with a sign (+2)', bytes: b(`POST /api/v1/config/A HTTP/1.1${CRLF}Host: a${CRLF}Content-Length: +2${CRLF}${CRLF}{}`) },
  { name: 'Content-Length as a list (2, 2)', bytes: b(`POST /api/v1/config/A HTTP/1.1${CRLF}Host: a${CRLF}Content-Length: 2, 2${CRLF}${CRLF}{}`) },
  { name: 'Content-Length over 2^64', bytes: b(`POST /api/v1/config/A HTTP/1.1${CRLF}Host: a${CRLF}Content-Length: 99999999999999999999${CRLF}${CRLF}{}`) },
  { name: 'chunk extension (2;x=y)', bytes: b(`POST /api/v1/config/A HTTP/1.1${CRLF}Host: a${CRLF}Transfer-Encoding: chunked${CRLF}${CRLF}2;x=y${CRLF}{}${CRLF}0${CRLF}${CRLF}`) },
  { name: 'chunk size not hexadecimal', bytes: b(`POST /api/v1/config/A HTTP/1.1${CRLF}Host: a${CRLF}Transfer-Encoding: chunked${CRLF}${CRLF}zz${CRLF}{}${CRLF}0${CRLF}${CRLF}`) },
];

/** A GET /healthz head of exactly `total` bytes, padded with one long header. */
export function headOfSize(total: number): string {
  const start = `GET /healthz HTTP/1.1${CRLF}Host: a${CRLF}X-Big: `;
  return start + 'a'.repeat(total - start.length - 4) + CRLF + CRLF;
}

/** `text` cut into `n` nearly equal parts. */
export function splitInto(text: string | Buffer, n: number): Buffer[] {
  const buf = typeof text === 'string' ? Buffer.from(text, 'latin1') : text;
  const step = Math.ceil(buf.length / n);
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i += step) out.push(buf.subarray(i, i + step));
  return out;
}

/** The combine path for `ids` (a URL-encoded JSON array in `c`). */
export function combinePath(ids: readonly string[]): string {
  return `/api/v1/combine?c=${encodeURIComponent(JSON.stringify(ids))}`;
}
