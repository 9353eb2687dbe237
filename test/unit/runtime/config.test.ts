import { describe, expect, it } from 'vitest';
import { ConfigError, SERVE_OPTIONS, buildServeConfig, resolveOptions } from '../../../src/runtime/config.js';

const build = (flags: Record<string, string>, env: Record<string, string> = {}) =>
  buildServeConfig(resolveOptions(SERVE_OPTIONS, flags, env));

describe('serve configuration', () => {
  it('has documented defaults', () => {
    const c = build({});
    expect(c.port).toBe(8080);
    expect(c.storeUrl).toBe('sqlite:./data/rcd.db');
    expect(c.maxBodyBytes).toBe(65536);
    expect(c.maxCombineIds).toBe(100);
    expect(c.adminHost).toBe('127.0.0.1');
    expect(c.adminPort).toBe(8081);
    expect(c.storeBusyTimeoutMs).toBe(1000);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('takes a flag over an environment variable over the default', () => {
    expect(build({}, { RCD_PORT: '9000' }).port).toBe(9000);
    expect(build({ port: '9100' }, { RCD_PORT: '9000' }).port).toBe(9100);
    expect(build({}, { RCD_STORE_BUSY_TIMEOUT_MS: '250' }).storeBusyTimeoutMs).toBe(250);
  });

  it.each([
    [{ port: '70000' }],
    [{ port: 'abc' }],
    [{ threads: '0' }],
    [{ 'max-body': '0' }],
    [{ store: 'postgres://x' }],
    [{ 'seed-demo': 'maybe' }],
    [{ 'store-busy-timeout': '60001' }],
    [{ 'store-busy-timeout': '-1' }],
    [{ 'cors-origins': 'game.example.com' }],
    [{ 'cors-origins': 'https://game.example.com/' }],
    [{ 'cors-origins': 'https://game.example.com/play' }],
    [{ 'cors-origins': 'https://a.example, *' }],
    [{ 'compress-min-bytes': '16777217' }],
  ])('refuses %j', (flags) => {
    expect(() => build(flags)).toThrowError(ConfigError);
  });

  it('CORS is off by default; * or a list of exact origins', () => {
    expect(build({}).corsOrigins).toBeNull();
    expect(build({}).compressMinBytes).toBe(1024);
    expect(build({ 'cors-origins': '*' }).corsOrigins).toBe('*');
    expect(build({}, { RCD_CORS_ORIGINS: 'https://game.example.com, http://localhost:3000' }).corsOrigins).toEqual([
      'https://game.example.com',
      'http://localhost:3000',
    ]);
  });

  it('refuses --max-pending below --max-combine-ids (such a combine could never be admitted)', () => {
    expect(() => build({ 'max-pending': '50' })).toThrowError(/--max-pending \(50\) must be at least --max-combine-ids \(100\)/);
    expect(build({ 'max-pending': '50', 'max-combine-ids': '50' }).maxPendingJobs).toBe(50);
  });
});
