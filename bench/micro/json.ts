/**
 * Micro-benchmark: JSON.parse against simdjson.parse and simdjson.isValid, on a typical request body
 * (80 bytes) and on a large content document (~460 KB). Decides where simdjson is used (see
 * src/store/jsonc.ts for the conclusion).
 *
 * Run: `node dist/bench/micro/json.js` (after `npm run build`); prints a table.
 */
import { pathToFileURL } from 'node:url';
import simdjson from 'simdjson';
import { formatTable, measure, type Row } from './measure.js';

/** A user-context body of exactly 80 bytes, the shape the delivery endpoints receive. */
export function smallBody(): string {
  const base = '{"u":"player-0001","p":{"country":"DE","level":12,"tags":["vip"]},"v":"1.2.3"}';
  return base + ' '.repeat(Math.max(0, 80 - Buffer.byteLength(base)));
}

/** A deterministic, config-like document of about 460 KB (objects, arrays, strings, numbers). */
export function largeDocument(targetBytes = 460 * 1024): string {
  const items: unknown[] = [];
  let seed = 42;
  const next = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed;
  };
  let size = 0;
  for (let i = 0; size < targetBytes; i++) {
    const item = {
      id: `item_${i}`,
      name: `Item number ${i} of the catalogue`,
      price: (next() % 100000) / 100,
      enabled: next() % 2 === 0,
      weights: [next() % 1000, next() % 1000, next() % 1000, next() % 1000],
      rewards: { gold: next() % 5000, gems: next() % 50, label: `reward-${next() % 97}` },
    };
    items.push(item);
    size += JSON.stringify(item).length + 1;
  }
  return JSON.stringify({ version: 3, items });
}


export function runJsonMicro(minMs = 1000): Row[] {
  const small = smallBody();
  const large = largeDocument();
  const rows: Row[] = [];
  rows.push(measure('JSON.parse 80 B', () => JSON.parse(small), minMs));
  rows.push(measure('simdjson.parse 80 B', () => simdjson.parse(small), minMs));
  rows.push(measure('simdjson.isValid 80 B', () => simdjson.isValid(small), minMs));
  const kb = Math.round(Buffer.byteLength(large) / 1024);
  rows.push(measure(`JSON.parse ${kb} KB`, () => JSON.parse(large), minMs));
  rows.push(measure(`simdjson.parse ${kb} KB`, () => simdjson.parse(large), minMs));
  rows.push(measure(`simdjson.isValid ${kb} KB`, () => simdjson.isValid(large), minMs));
  rows.push(measure(`JSON.parse+JSON.stringify ${kb} KB (compileContent's work)`, () => JSON.stringify(JSON.parse(large)), minMs));
  return rows;
}


if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(formatTable('JSON parse and validation', runJsonMicro()));
}
