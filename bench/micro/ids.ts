/**
 * Micro-benchmark: the content-id key (src/store/ids.ts contentIdKey) every delivery request
 * computes once per id (a combine: once per listed id). Rows: the former rule (`toLowerCase` alone)
 * as the floor, the ASCII fast path, the full NFD + fold + NFC path for non-ASCII ids, and the full
 * path forced on ASCII ids (what the fast path saves).
 *
 * Run: `node dist/bench/micro/ids.js` (after `npm run build`); prints a table.
 */
import { pathToFileURL } from 'node:url';
import { caselessKey } from '../../src/store/case-fold.js';
import { contentIdKey } from '../../src/store/ids.js';
import { formatTable, measure, type Row } from './measure.js';

/** Ids as the benchmark scenarios name content: mixed-case ASCII, 8-24 characters. */
const ASCII_IDS = ['PlayerSettings', 'StoreLayout', 'LevelConfig_03', 'daily-rewards', 'SeasonPass.Tiers', 'AbTestMatrixForShopUi', 'ui', 'FEATURE_FLAGS'];
/** Non-ASCII ids of similar length: Latin with ß and accents (NFC and NFD), Greek, CJK. */
const OTHER_IDS = ['Straße', 'STRAẞE', 'Café-Menü', 'Cafe\u0301-Menu\u0308', 'ΣΊΣΥΦΟΣ', 'Ärger-Level', '日本語設定', 'Ölförderung'];

/**
 * 1,024 fresh copies of the ids, rotating: the server gets a new, flat, non-internalised string
 * per request from uWS, and V8 must not get to treat the inputs as the same few literals.
 */
function fresh(ids: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < 1024; i++) out.push(Buffer.from(ids[i % ids.length] as string, 'utf8').toString('utf8'));
  return out;
}

function avgChars(ids: readonly string[]): number {
  return Math.round(ids.reduce((n, s) => n + s.length, 0) / ids.length);
}

export function runIdKeyMicro(minMs?: number): Row[] {
  const mask = 1023;
  const a = avgChars(ASCII_IDS);
  const o = avgChars(OTHER_IDS);
  const ascii = fresh(ASCII_IDS);
  const other = fresh(OTHER_IDS);
  return [
    measure(`toLowerCase only, ASCII ids (~${a} chars; the former rule)`, (i) => (ascii[i & mask] as string).toLowerCase(), minMs),
    measure(`contentIdKey, ASCII ids (~${a} chars; scan + toLowerCase)`, (i) => contentIdKey(ascii[i & mask] as string), minMs),
    measure(`full key forced on ASCII ids (~${a} chars; NFD + fold + NFC)`, (i) => caselessKey(ascii[i & mask] as string), minMs),
    measure(`toLowerCase only, non-ASCII ids (~${o} chars; the former rule)`, (i) => (other[i & mask] as string).toLowerCase(), minMs),
    measure(`contentIdKey, non-ASCII ids (~${o} chars; NFD + fold + NFC)`, (i) => contentIdKey(other[i & mask] as string), minMs),
  ];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(formatTable('Content-id key', runIdKeyMicro()));
}
