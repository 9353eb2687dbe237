/**
 * The GrowthBook assignment query of docs/experiments.md ("For the results tools"), taken from the
 * docs as written and run against the tables a real server wrote in a real PostgreSQL: it returns
 * one row per player, the variant each player's answers named, the app version and the dimensions,
 * and GrowthBook's date window keeps exactly the players first seen inside it.
 */
import { readFileSync } from 'node:fs';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { call, startServer, tempDir } from '../helpers/server-process.js';
import { createDatabase } from '../helpers/postgres.js';
import { inParallel, readExposures, releasedAfterAll, variantOf } from '../helpers/exposures.js';
import { until } from '../helpers/until.js';

const KEY = 'growthbook-key';
const BUNDLE = {
  environments: {
    prod: {
      keys: [KEY],
      content: {
        Shop: {
          json: { price: 100 },
          mapping: {
            rules: [
              {
                segment: 'price-test',
                variants: [
                  { name: 'control', mod: [0, 499], patch: { price: 100 } },
                  { name: 'cheaper', mod: [500, 999], patch: { price: 80 } },
                ],
              },
            ],
          },
        },
      },
    },
  },
};
const PLAYERS = 400;

/** The first ```sql block after the docs' "### GrowthBook" heading, exactly as a reader copies it. */
function documentedQuery(): string {
  const docs = readFileSync(new URL('../../docs/experiments.md', import.meta.url), 'utf8');
  const section = docs.slice(docs.indexOf('### GrowthBook'));
  const match = /```sql\n([\s\S]*?)```/.exec(section);
  if (match === null) throw new Error('docs/experiments.md has no GrowthBook query');
  return match[1]!;
}

const { running, cleanups } = releasedAfterAll();

interface Seg {
  readonly n: string;
  readonly v: string | null;
}

interface AssignmentRow {
  user_id: string;
  timestamp: Date;
  experiment_id: string;
  variation_id: string;
  app_version: string | null;
  country: string | null;
  platform: string | null;
}

describe('the documented GrowthBook assignment query', () => {
  it('gives GrowthBook one row per player with the variant, version and dimensions the server applied', async () => {
    const db = await createDatabase();
    cleanups.push(db.drop);
    const dir = tempDir();
    const srv = await startServer({ dir, admin: true, bundle: BUNDLE, args: ['--exposures', db.url, '--exposure-dimensions', 'country,platform'] });
    running.push(srv);

    const sent = new Map<string, string>();
    const startedMs = Date.now();
    await inParallel(PLAYERS, 8, async (i) => {
      const u = `player-${i}`;
      const body = { u, p: { country: i % 2 === 0 ? 'DE' : 'BR', platform: 'ios' }, v: '2.1.0' };
      const answer = (await call(srv.url, '/api/v1/config/Shop/dynamic', { key: KEY, body: JSON.stringify(body) })).json as { meta: { seg: Seg[] } };
      sent.set(u, variantOf(answer.meta.seg, 'price-test')!);
    });
    const endedMs = Date.now();
    await until(`${PLAYERS} rows`, async () => (await readExposures(db.url)).rows.length >= PLAYERS, 20_000, 100);

    const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
    try {
      const window = (from: number, to: number): string => documentedQuery().replace('{{ startDate }}', new Date(from).toISOString()).replace('{{ endDate }}', new Date(to).toISOString());
      const rows = (await sql.unsafe(window(startedMs - 1000, endedMs + 1000))) as unknown as AssignmentRow[];
      expect(rows.length).toBe(PLAYERS);
      expect(new Set(rows.map((r) => r.user_id)).size).toBe(PLAYERS);
      for (const r of rows) {
        expect(r.experiment_id).toBe('Shop:price-test');
        expect(r.variation_id).toBe(sent.get(r.user_id));
        expect(r.app_version).toBe('2.1.0');
        expect(r.country).toBe(Number(r.user_id.slice('player-'.length)) % 2 === 0 ? 'DE' : 'BR');
        expect(r.platform).toBe('ios');
        expect(r.timestamp.getTime()).toBeGreaterThanOrEqual(startedMs - 1000);
      }
      const bySent: Record<string, number> = {};
      for (const v of sent.values()) bySent[v] = (bySent[v] ?? 0) + 1;
      const byQuery: Record<string, number> = {};
      for (const r of rows) byQuery[r.variation_id] = (byQuery[r.variation_id] ?? 0) + 1;
      expect(byQuery).toEqual(bySent);
      // A window that ends before the first exposure holds nobody.
      expect(await sql.unsafe(window(startedMs - 60_000, startedMs - 30_000))).toHaveLength(0);
    } finally {
      await sql.end();
    }
  }, 90_000);
});
