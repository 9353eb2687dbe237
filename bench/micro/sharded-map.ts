/**
 * Micro-benchmark: the delivery loop's content table (src/delivery/sharded-map.ts) against a plain
 * Map. Two questions:
 *
 * - the hot path: what one lookup by content id costs (a content request does one), on a table of
 *   100,000 ids, with fresh (non-internalised) id strings as uWS hands them over;
 * - the edit path: the longest single insert while a table grows from 0 to 300,000 ids, i.e. the
 *   step in which the table copies itself into one twice its size (a plain Map copies every entry,
 *   inside whichever delta slice crosses the boundary).
 *
 * Run: `node dist/bench/micro/sharded-map.js` (after `npm run build`); part of `npm run bench:micro`.
 */
import { pathToFileURL } from 'node:url';
import { ShardedMap, stringShard } from '../../src/delivery/sharded-map.js';
import { formatTable, measure, type Row } from './measure.js';

const LOOKUP_ITEMS = 100_000;
const GROW_ITEMS = 300_000;

function ids(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `item${String(i).padStart(6, '0')}`);
}

/** 1,024 fresh copies of ids spread over the table (a new string per request, as the server gets). */
function freshLookups(all: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < 1024; i++) out.push(Buffer.from(all[(i * 7919) % all.length]!, 'utf8').toString('utf8'));
  return out;
}

interface Table {
  set(key: string, value: number): unknown;
  get(key: string): number | undefined;
}

/** The longest single set() while `table` grows by `keys`, in ms (the best of 3 fresh tables). */
function worstInsertMs(make: () => Table, keys: readonly string[]): number {
  let best = Infinity;
  for (let run = 0; run < 3; run++) {
    const table = make();
    let worst = 0;
    for (let i = 0; i < keys.length; i++) {
      const t = process.hrtime.bigint();
      table.set(keys[i]!, i);
      const ns = Number(process.hrtime.bigint() - t);
      if (ns > worst) worst = ns;
    }
    best = Math.min(best, worst / 1e6);
  }
  return best;
}

export function runShardedMapMicro(minMs?: number): { lookups: Row[]; worstInsert: { plain: number; sharded: number } } {
  const all = ids(LOOKUP_ITEMS);
  const plain = new Map<string, number>();
  const sharded = new ShardedMap<string, number>(stringShard);
  all.forEach((id, i) => {
    plain.set(id, i);
    sharded.set(id, i);
  });
  const probe = freshLookups(all);
  const mask = 1023;
  const lookups = [
    measure(`Map.get, ${LOOKUP_ITEMS.toLocaleString('en-US')} ids`, (i) => plain.get(probe[i & mask]!), minMs),
    measure(`ShardedMap.get (stringShard + Map.get), ${LOOKUP_ITEMS.toLocaleString('en-US')} ids`, (i) => sharded.get(probe[i & mask]!), minMs),
    measure('stringShard alone', (i) => stringShard(probe[i & mask]!), minMs),
  ];
  const grow = ids(GROW_ITEMS);
  return {
    lookups,
    worstInsert: {
      plain: worstInsertMs(() => new Map<string, number>(), grow),
      sharded: worstInsertMs(() => new ShardedMap<string, number>(stringShard), grow),
    },
  };
}

export function formatShardedMapResult(r: ReturnType<typeof runShardedMapMicro>): string {
  const grow = GROW_ITEMS.toLocaleString('en-US');
  return (
    formatTable('Content table lookups (bench/micro/sharded-map.ts)', r.lookups) +
    `\nLongest single insert while growing to ${grow} ids (best of 3): Map ${r.worstInsert.plain.toFixed(2)} ms, ShardedMap ${r.worstInsert.sharded.toFixed(2)} ms\n`
  );
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(formatShardedMapResult(runShardedMapMicro()));
}
