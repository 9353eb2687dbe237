import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, SERVE_OPTIONS, buildServeConfig, resolveOptions } from '../../../src/runtime/config.js';

const build = (flags: Record<string, string>, env: Record<string, string> = {}) => buildServeConfig(resolveOptions(SERVE_OPTIONS, flags, env));

describe('the exposure flags', () => {
  it('are off by default', () => {
    expect(build({}).exposures).toBeNull();
    expect(build({ exposures: 'off', 'exposure-dimensions': 'country' }).exposures).toBeNull();
  });

  it('take sqlite:PATH (made absolute) with the documented defaults', () => {
    const c = build({ exposures: 'sqlite:./data/exposures.db' });
    expect(c.exposures).toEqual({ url: `sqlite:${resolve('data/exposures.db')}`, kind: 'sqlite', dimensions: [], queue: 200_000, filterSlots: 65_536 });
    expect(Object.isFrozen(c.exposures)).toBe(true);
  });

  it('take postgres:// and postgresql:// URLs, from the flag or the environment', () => {
    expect(build({ exposures: 'postgres://rcd:pw@db:5432/rcd' }).exposures?.kind).toBe('postgres');
    expect(build({}, { RCD_EXPOSURES: 'postgresql://db/analytics' }).exposures).toMatchObject({ kind: 'postgres', url: 'postgresql://db/analytics' });
    // The exposure tables may live in the config store's PostgreSQL database (they are rcd_exposures*).
    expect(build({ store: 'postgres://db/rcd', exposures: 'postgres://db/rcd' }).exposures?.kind).toBe('postgres');
  });

  it('take the dimensions, queue and filter from flags or the environment', () => {
    const c = build(
      { exposures: 'sqlite:/tmp/e.db', 'exposure-dimensions': ' country , platform,device.os ' },
      { RCD_EXPOSURE_QUEUE: '10', RCD_EXPOSURE_FILTER: '0' },
    );
    expect(c.exposures).toMatchObject({ dimensions: ['country', 'platform', 'device.os'], queue: 10, filterSlots: 0 });
    expect(build({ exposures: 'sqlite:/tmp/e.db', 'exposure-filter': '4194304', 'exposure-queue': '10000000' }).exposures).toMatchObject({
      filterSlots: 4_194_304,
      queue: 10_000_000,
    });
    expect(build({ exposures: 'sqlite:/tmp/e.db', 'exposure-filter': '1024' }).exposures?.filterSlots).toBe(1024);
  });

  it.each([
    [{ exposures: 'on' }, /--exposures must be off, sqlite:PATH or postgres:\/\/.*got "on"/],
    [{ exposures: 'sqlite:' }, /--exposures sqlite:PATH needs the path of a file/],
    [{ exposures: 'mysql://db/x' }, /--exposures must be off/],
    [{ store: 'sqlite:./data/rcd.db', exposures: 'sqlite:data/rcd.db' }, /--exposures sqlite:data\/rcd.db is the config store's file: exposures are written to a file of their own/],
    [{ 'exposure-queue': '0' }, /--exposure-queue must be between 1 and 10000000, got 0/],
    [{ 'exposure-queue': '10000001' }, /--exposure-queue must be between 1 and 10000000/],
    [{ 'exposure-queue': 'many' }, /--exposure-queue must be an integer/],
    [{ 'exposure-filter': '1000' }, /--exposure-filter must be 0 or a power of two from 1024 to 4194304, got 1000/],
    [{ 'exposure-filter': '512' }, /--exposure-filter must be 0 or a power of two from 1024/],
    [{ 'exposure-filter': '8388608' }, /--exposure-filter must be between 0 and 4194304/],
    [{ 'exposure-dimensions': 'country,country' }, /--exposure-dimensions: "country" is named twice/],
    [{ 'exposure-dimensions': 'a,b,c,d,e,f,g,h,i' }, /--exposure-dimensions: at most 8 dimensions, got 9/],
    [{ 'exposure-dimensions': 'country,' }, /--exposure-dimensions: "" is not a dimension name/],
    [{ 'exposure-dimensions': 'a b' }, /--exposure-dimensions: "a b" is not a dimension name/],
    [{ 'exposure-dimensions': 'x'.repeat(65) }, /is not a dimension name \(1-64 characters/],
  ])('refuse %o with a message naming the flag', (flags, message) => {
    // Checked whether or not --exposures is on: a mistake shows before it is switched on.
    expect(() => build(flags)).toThrowError(ConfigError);
    expect(() => build(flags)).toThrowError(message);
  });

  it('are listed in --help', () => {
    const flags = SERVE_OPTIONS.map((o) => o.flag);
    for (const flag of ['exposures', 'exposure-dimensions', 'exposure-queue', 'exposure-filter']) expect(flags).toContain(flag);
  });
});
