import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExposuresUrlError, describeExposuresTarget, parseExposuresUrl } from '../../../src/exposures/url.js';

describe('--exposures values', () => {
  it('off and nothing are off', () => {
    expect(parseExposuresUrl('off')).toBeNull();
    expect(parseExposuresUrl('')).toBeNull();
    expect(parseExposuresUrl('  off ')).toBeNull();
  });

  it('sqlite:PATH: the path made absolute against the working directory', () => {
    expect(parseExposuresUrl('sqlite:/var/lib/rcd/exposures.db')).toEqual({ kind: 'sqlite', url: 'sqlite:/var/lib/rcd/exposures.db' });
    expect(parseExposuresUrl('sqlite:data/exposures.db')).toEqual({ kind: 'sqlite', url: `sqlite:${resolve('data/exposures.db')}` });
  });

  it('PostgreSQL URLs as given, shown without their password', () => {
    const url = 'postgres://rcd:s3cret@db.internal:5432/analytics';
    expect(parseExposuresUrl(url)).toEqual({ kind: 'postgres', url });
    expect(parseExposuresUrl('postgresql://db/analytics')).toEqual({ kind: 'postgres', url: 'postgresql://db/analytics' });
    expect(describeExposuresTarget({ kind: 'postgres', url })).not.toContain('s3cret');
  });

  it.each([
    ['on', /--exposures must be off, sqlite:PATH or postgres:/],
    ['mysql://u:p@h/db', /--exposures must be .* got \(a URL of another kind\)$/],
    ['sqlite:', /needs the path of a file/],
    ['sqlite::memory:', /needs the path of a file/],
    ['sqlite:file:x.db?mode=memory', /needs the path of a file/],
    ['postgres://u:secret@/db', /needs a host and a database|malformed PostgreSQL URL/],
    ['postgres://u:secret@host', /needs a host and a database/],
  ])('%s is refused with a message that says what the flag takes', (value, message) => {
    let caught: unknown = null;
    try {
      parseExposuresUrl(value);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ExposuresUrlError);
    expect((caught as Error).message).toMatch(message);
    expect((caught as Error).message).not.toContain('secret');
  });

  it('never the config store\'s own file', () => {
    const store = join(resolve('data'), 'rcd.db');
    expect(() => parseExposuresUrl('sqlite:data/rcd.db', `sqlite:${store}`)).toThrow(/is the config store's file: .*sqlite:.*exposures\.db/);
    expect(parseExposuresUrl('sqlite:data/exposures.db', `sqlite:${store}`)?.kind).toBe('sqlite');
    expect(parseExposuresUrl('sqlite:data/rcd.db', 'postgres://db/rcd')?.kind).toBe('sqlite');
  });
});
