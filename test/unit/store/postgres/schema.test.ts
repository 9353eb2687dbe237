/**
 * The PostgreSQL store's schema on a real server: an older database is upgraded by a newer rcd, a
 * database of a newer schema is refused, nodes opening one database at once agree, and writers on
 * several connections number the change log without gaps, in commit order.
 */
import postgres from 'postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../../src/store/index.js';
import { migrate, PG_MIGRATIONS, PG_SCHEMA_VERSION } from '../../../../src/store/postgres/schema.js';
import { createDatabase } from '../../../helpers/postgres.js';
import { rejectsWith } from '../helpers.js';

let url: string;
let drop: () => Promise<void>;
let sql: postgres.Sql;
const opened: Store[] = [];

beforeEach(async () => {
  ({ url, drop } = await createDatabase());
  sql = postgres(url, { max: 1, onnotice: () => undefined });
});
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  await sql.end();
  await drop();
});

async function version(): Promise<number> {
  return (await sql.unsafe<{ version: number }[]>('SELECT version FROM schema_version'))[0]!.version;
}

describe('PostgreSQL schema', () => {
  it('creates the schema on an empty database and records its version', async () => {
    opened.push(await openStore(url));
    expect(await version()).toBe(PG_SCHEMA_VERSION);
  });

  it('a newer rcd applies its new migrations to an older database, keeping the data', async () => {
    const s = await openStore(url);
    opened.push(s);
    await s.putEnvironment('prod');
    // A release that adds a migration: the database of the previous one is brought up to it.
    const next = [...PG_MIGRATIONS, 'ALTER TABLE environments ADD COLUMN note text'];
    await migrate(sql, next);
    expect(await version()).toBe(PG_SCHEMA_VERSION + 1);
    expect((await sql.unsafe<{ env_id: string; note: string | null }[]>('SELECT env_id, note FROM environments')).map((r) => r.env_id)).toEqual(['prod']);
    // Applying it again changes nothing.
    await migrate(sql, next);
    expect(await version()).toBe(PG_SCHEMA_VERSION + 1);
  });

  it('refuses a database written by a newer schema version, with a stable code', async () => {
    opened.push(await openStore(url));
    await sql.unsafe('UPDATE schema_version SET version = 99');
    const err = await rejectsWith(openStore(url), 'store_schema_too_new');
    expect(err.message).toContain('99');
  });

  it('nodes opening one new database at the same time all succeed, migrated once', async () => {
    const stores = await Promise.all([openStore(url), openStore(url), openStore(url)]);
    opened.push(...stores);
    expect(await version()).toBe(PG_SCHEMA_VERSION);
    expect((await sql.unsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM schema_version'))[0]!.n).toBe(1);
  });

  it('writers on several connections number the change log without gaps; a refused write burns no number', async () => {
    const [a, b] = await Promise.all([openStore(url), openStore(url)]);
    opened.push(a, b);
    await a.putEnvironment('prod');
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 20; i++) {
      writes.push(a.putContent('prod', `a${i}`, `{"i":${i}}`, null));
      writes.push(b.putContent('prod', `b${i}`, `{"i":${i}}`, null));
      // Refused inside the transaction (the environment does not exist): nothing logged.
      writes.push(b.putContent('missing', `c${i}`, '{}', null).catch(() => undefined));
    }
    await Promise.all(writes);
    const batch = await b.changesSince(0, 1000);
    expect(batch.entries.map((e) => e.seq)).toEqual(batch.entries.map((_, i) => i + 1));
    // A new item logs its insert and the update that stamps its revision, as on SQLite.
    expect(batch.headSeq).toBe(1 + 40 * 2);
  });

  it('a malformed URL is refused clearly; an unreachable server is store_unavailable', async () => {
    await rejectsWith(openStore('postgres://'), 'invalid_request');
    await rejectsWith(openStore('postgres://user@127.0.0.1:1/db'), 'store_unavailable');
  });
});
