import { describe, expect, it } from 'vitest';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { ConfigError, SERVE_OPTIONS, buildServeConfig, httpThreadsFor, resolveOptions } from '../../../src/runtime/config.js';

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
    expect(build({ store: 'postgres://rcd:pw@db:5432/rcd' }, { RCD_PG_POOL_SIZE: '8' }).pgPoolSize).toBe(8);
  });

  it.each([
    [{ port: '70000' }],
    [{ port: 'abc' }],
    [{ threads: '0' }],
    [{ 'http-threads': '0' }],
    [{ 'http-threads': '65', threads: '64' }],
    [{ 'max-body': '0' }],
    [{ store: 'mysql://x' }],
    [{ 'seed-demo': 'maybe' }],
    [{ 'store-busy-timeout': '60001' }],
    [{ 'store-busy-timeout': '-1' }],
    [{ 'pg-pool-size': '0' }],
    [{ 'pg-pool-size': '101' }],
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

  it('--ofrep-bulk-max-items follows --max-combine-ids unless set, and --max-pending must hold it too', () => {
    expect(build({}).ofrepBulkMaxItems).toBe(100);
    expect(build({ 'max-combine-ids': '7', 'max-pending': '7' }).ofrepBulkMaxItems).toBe(7);
    expect(build({}, { RCD_OFREP_BULK_MAX_ITEMS: '250' }).ofrepBulkMaxItems).toBe(250);
    expect(() => build({ 'ofrep-bulk-max-items': '0' })).toThrowError(ConfigError);
    expect(() => build({ 'ofrep-bulk-max-items': '10001' })).toThrowError(ConfigError);
    expect(() => build({ 'ofrep-bulk-max-items': '500', 'max-pending': '300' })).toThrowError(
      /--max-pending \(300\) must be at least --ofrep-bulk-max-items \(500\)/,
    );
  });

  it('refuses --http-threads above --threads (each delivery loop has its own share of the pool)', () => {
    expect(() => build({ threads: '2', 'http-threads': '3' })).toThrowError(/--threads \(2\) must be at least --http-threads \(3\)/);
    expect(build({ threads: '3', 'http-threads': '3' }).httpThreads).toBe(3);
    expect(build({ threads: '4' }, { RCD_HTTP_THREADS: '2' }).httpThreads).toBe(2);
  });

  it('defaults --http-threads to the rule for this box, never above --threads', () => {
    expect(build({ threads: '64' }).httpThreads).toBe(httpThreadsFor(availableParallelism()));
    expect(build({ threads: '1' }).httpThreads).toBe(1);
  });
});

describe('TLS options', () => {
  it('plain HTTP on both listeners without certificates', () => {
    const c = build({});
    expect(c.tls).toBeNull();
    expect(c.adminTls).toBeNull();
  });

  it('takes the delivery files from flags or RCD_TLS_* and resolves them to absolute paths', () => {
    const c = build({ 'tls-cert': 'cert.pem' }, { RCD_TLS_KEY: '/keys/key.pem', RCD_TLS_CA: 'chain.pem' });
    expect(c.tls).toEqual({
      certFile: resolve('cert.pem'),
      keyFile: '/keys/key.pem',
      passphraseFile: null,
      chainFile: resolve('chain.pem'),
      flagPrefix: '--tls',
    });
    expect(c.adminTls).toBeNull();
  });

  it('keeps the admin listener\'s files apart', () => {
    const c = build({ 'admin-tls-cert': '/a/c.pem', 'admin-tls-key': '/a/k.pem', 'admin-tls-key-passphrase-file': '/a/pass' });
    expect(c.tls).toBeNull();
    expect(c.adminTls).toMatchObject({ certFile: '/a/c.pem', keyFile: '/a/k.pem', passphraseFile: '/a/pass', chainFile: null, flagPrefix: '--admin-tls' });
  });

  it.each([
    [{ 'tls-cert': 'c.pem' }],
    [{ 'tls-key': 'k.pem' }],
    [{ 'tls-ca': 'chain.pem' }],
    [{ 'tls-key-passphrase-file': 'pass' }],
    [{ 'admin-tls-key': 'k.pem' }],
  ])('refuses an incomplete set %j', (flags) => {
    expect(() => build(flags)).toThrow(ConfigError);
  });
});
