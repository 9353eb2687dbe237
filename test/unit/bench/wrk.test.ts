import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseWrkOutput, writeWrkScript } from '../../../bench/wrk.js';

const REPORT = `Running 10s test @ http://127.0.0.1:19080
  1 threads and 100 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.70ms    1.25ms  42.30ms   97.64%
    Req/Sec    60.66k     3.10k   66.45k    75.00%
  Latency Distribution
     50%  830.00us
     75%    1.90ms
     90%    2.24ms
     99%    1.02s
  603535 requests in 10.00s, 1.00GB read
  Non-2xx or 3xx responses: 12
  Socket errors: connect 0, read 1, write 0, timeout 2
Requests/sec:  60353.07
Transfer/sec:    102.06MB
`;

describe('bench --wrk: reading wrk', () => {
  it('parses rate, percentiles in every unit, non-2xx answers and socket errors', () => {
    expect(parseWrkOutput(REPORT)).toEqual({
      reqPerSec: 60353.07,
      latencyMs: { p50: 0.83, p90: 2.24, p99: 1020 },
      non2xx: 12,
      socketErrors: 3,
    });
  });

  it('counts zero when wrk prints no error lines, and refuses a report without percentiles', () => {
    const clean = REPORT.replace(/ {2}Non-2xx.*\n/, '').replace(/ {2}Socket errors.*\n/, '');
    expect(parseWrkOutput(clean).non2xx).toBe(0);
    expect(parseWrkOutput(clean).socketErrors).toBe(0);
    expect(() => parseWrkOutput(REPORT.replace(/ {5}99%.*\n/, ''))).toThrow(/99%/);
  });

  it('writes a Lua script that reproduces every request byte for byte', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcd-wrk-test-'));
    try {
      const body = '{"u":"é \\"q\\" \\\\ 日本","p":{},"v":"1.0.0"}';
      const path = writeWrkScript(dir, 't', [
        { method: 'POST', path: '/api/v1/config/A/dynamic?x=1', headers: { 'X-Api-Key': 'k"1', 'Content-Type': 'application/json' }, body, ctx: { u: '', p: {}, v: '', expectStatus: 200, expectCode: '' } },
        { method: 'GET', path: '/api/v1/env/catalog', headers: { 'X-Api-Key': 'k' }, body: undefined, ctx: { u: '', p: {}, v: '', expectStatus: 200, expectCode: '' } },
      ]);
      const script = readFileSync(path, 'utf8');
      expect(script).toMatch(/^[\x20-\x7e\n]*$/); // plain ASCII: everything else is a decimal escape
      // Lua itself (when installed) reads the strings back to the original bytes.
      const lua = spawnSync('lua', ['-e', `${script}\nio.write(entries[1][4], "|", entries[1][3]["X-Api-Key"], "|", tostring(entries[2][4]))`], { encoding: 'utf8' });
      if (lua.error === undefined) expect(lua.stdout).toBe(`${body}|k"1|nil`);
      else expect(script).toContain('\\195\\169'); // é as its two UTF-8 bytes
      // Escapes have three digits: "\\34" followed by the digit of "1.0.0" would read as byte 341.
      expect(script).toContain('\\0341.0.0\\034');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
