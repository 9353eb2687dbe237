/**
 * Unicode default full case folding (CaseFolding.txt status C + F) and the caseless key built on it.
 * JavaScript has no case folding of its own: `toLowerCase` is a different mapping (it keeps `ß`,
 * maps the Kelvin sign to `k` but leaves `ς` apart from `σ`, and is context-sensitive for
 * final sigma), so the table comes from the Unicode data (./case-folding-data.ts, generated).
 */
import { FULL_FOLDINGS, SIMPLE_FOLDING_RUNS } from './case-folding-data.js';

/** Code point -> the string it folds to. Built once at load: ~1,600 entries. */
const FOLD = buildFoldMap();

function buildFoldMap(): Map<number, string> {
  const map = new Map<number, string>();
  for (let r = 0; r < SIMPLE_FOLDING_RUNS.length; r += 4) {
    const first = SIMPLE_FOLDING_RUNS[r]!;
    const count = SIMPLE_FOLDING_RUNS[r + 1]!;
    const stride = SIMPLE_FOLDING_RUNS[r + 2]!;
    const delta = SIMPLE_FOLDING_RUNS[r + 3]!;
    for (let k = 0; k < count; k++) {
      const cp = first + k * stride;
      map.set(cp, String.fromCodePoint(cp + delta));
    }
  }
  for (const row of FULL_FOLDINGS) map.set(row[0]!, String.fromCodePoint(...row.slice(1)));
  return map;
}

/**
 * toCasefold(s): every code point replaced by its full folding. Returns `s` itself when nothing
 * folds. A lone surrogate is kept as it is (callers refuse such ids before storing them).
 */
export function caseFold(s: string): string {
  let out = '';
  let copied = 0; // s[copied..i) is unchanged and not yet appended to out
  let changed = false;
  for (let i = 0; i < s.length; i++) {
    let cp = s.charCodeAt(i);
    const start = i;
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < s.length) {
      const low = s.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
        i++;
      }
    }
    const folded = FOLD.get(cp);
    if (folded !== undefined) {
      out += s.slice(copied, start) + folded;
      copied = i + 1;
      changed = true;
    }
  }
  return changed ? out + s.slice(copied) : s;
}

/**
 * The caseless key of a string: NFC(toCasefold(NFD(s))). Two strings have the same key exactly
 * when they are a canonical caseless match (Unicode 17, section 3.13, D145:
 * NFD(toCasefold(NFD(X))) = NFD(toCasefold(NFD(Y))); NFC and NFD of a string determine each other).
 *
 * Why NFD first and not NFC: NFC composes U+0345 COMBINING GREEK YPOGEGRAMMENI into a preceding
 * capital (Α + ͂ + ͅ becomes ᾼ + ͂), whose folding then puts the ι before the perispomeni, while
 * the folding of the lower-case ᾷ puts it after: NFC-first keys would tell ᾷ from its own title
 * case. Why NFC last: the folded string need not be normalised (ͅ folds to ι, a starter, so marks
 * that followed it now follow the ι; α + ͂ from folding ᾷ composes back to ᾶ), and NFC is the
 * canonical form to store and compare; it is also the shorter one.
 * The key is idempotent (key(key(s)) === key(s)); test/unit/store/case-fold.test.ts checks this for
 * every code point.
 */
export function caselessKey(s: string): string {
  return caseFold(s.normalize('NFD')).normalize('NFC');
}
