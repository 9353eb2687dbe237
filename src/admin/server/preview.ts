/**
 * Mapping preview: what the delivery API's wrapped endpoint answers one user context, computed by
 * the same code delivery runs (the user-context parser, revision choice by app version, the
 * compiled mapping's rule evaluation, the worker's selection and renderer), plus what the answer
 * does not show: which rule chose which variant, and the rules that did not apply.
 *
 * Runs on the control thread for an admin call: it reads the content from the store (the newest
 * committed state, which is what delivery serves once a write has answered) and compiles it per
 * call; a console previews one user at a time, so nothing is cached.
 */
import { RcdError } from '../../runtime/errors.js';
import { validateUserContext } from '../../delivery/context.js';
import { compileMapping, evaluateMapping, prepareDoc, renderSelection, selectCombination } from '../../mapping/index.js';
import { NO_VERSION_KEY, versionKeyOf } from '../../shared/app-version.js';
import { userMod, userUid } from '../../shared/identity.js';
import { compileContent } from '../../store/jsonc.js';
import type { ContentDetail, RevisionDetail } from '../../store/types.js';

/** One rule of the mapping as this user meets it. */
export interface PreviewRule {
  readonly index: number;
  readonly segment: string;
  /** Applied to this user: in `meta.seg`. */
  readonly applied: boolean;
  /** The variant's name when the rule is an A/B test that picked one for this user's mod, else null. */
  readonly variant: string | null;
  /** `"disabled": true` in the mapping (the kill switch): applied to nobody. */
  readonly disabled: boolean;
}

export interface Preview {
  /** The exact bytes (as text) `POST /api/v1/config/:id/dynamic` answers this context. */
  readonly answerText: string;
  /** The same answer parsed, for display. */
  readonly answer: unknown;
  readonly uid: number;
  readonly mod: number;
  /** The revision number delivered (chosen by `v` and each revision's minAppVersion). */
  readonly revision: number;
  readonly hash: string;
  readonly seg: unknown;
  readonly rules: readonly PreviewRule[];
}

const WRAPPED_PREFIX = '{"data":';

/** The body is the delivery API's user context ({u,p,v}); it is refused with delivery's codes. */
export function previewContent(detail: ContentDetail, body: unknown): Preview {
  const ctx = validateUserContext(body);
  const uid = userUid(ctx.u);
  const mod = userMod(uid);
  const rev = chooseRevision(detail.revisions, ctx.version.key);
  if (rev === undefined) {
    throw new RcdError('content_not_found', `no revision of "${detail.id}" serves app version ${ctx.v}`);
  }
  const content = compileContent(rev.text);
  let data = content.minified;
  let seg = '[]';
  const rules: PreviewRule[] = [];
  if (detail.mapping !== null) {
    const mapping = compileMapping(detail.mapping);
    const combination = evaluateMapping(mapping, ctx.p, ctx.version, mod);
    const doc = prepareDoc(content.minified);
    const selection = selectCombination(doc, combination);
    data = renderSelection(doc, selection);
    seg = selection.seg;
    // Every patch skipped on this revision leaves the empty selection: no rule applied.
    rules.push(...describeRules(detail.mapping, selection.key === '' ? '' : combination.key, selection.applied));
  }
  const answerText = `${WRAPPED_PREFIX}${data},"hash":"${rev.hash}","meta":{"uid":${uid},"mod":${mod},"seg":${seg}}}`;
  return {
    answerText,
    answer: JSON.parse(answerText) as unknown,
    uid,
    mod,
    revision: rev.number,
    hash: rev.hash,
    seg: JSON.parse(seg) as unknown,
    rules,
  };
}

/**
 * The revision delivery picks: the newest whose minAppVersion is absent or <= v (versionKey
 * comparison, as src/delivery/directory.ts chooseRevision); without v, the newest.
 * `revisions` are oldest first, as the store lists them.
 */
function chooseRevision(revisions: readonly RevisionDetail[], vKey: string): RevisionDetail | undefined {
  for (let i = revisions.length - 1; i >= 0; i--) {
    const r = revisions[i]!;
    if (vKey === NO_VERSION_KEY || r.minAppVersion === null || versionKeyOf(r.minAppVersion) <= vKey) return r;
  }
  return undefined;
}

/**
 * Each rule with whether it applied. The combination key lists `rule.choice` pairs in rule order
 * (src/mapping/rules/interning.ts); `applied` (when not null) flags which of them survived the
 * revision (a JSON Patch that does not apply to an older revision is skipped, as in delivery).
 */
function describeRules(raw: unknown, key: string, applied: Uint8Array | null): PreviewRule[] {
  const chosen = new Map<number, number>();
  let k = 0;
  for (const part of key.split(';')) {
    if (part === '') continue;
    const dot = part.indexOf('.');
    const index = Number(part.slice(0, dot));
    if (applied === null || applied[k] === 1) chosen.set(index, Number(part.slice(dot + 1)));
    k++;
  }
  const list = (raw as { rules: { segment: string; disabled?: boolean; variants?: { name: string }[] }[] }).rules;
  return list.map((rule, index) => {
    const choice = chosen.get(index);
    const variant = choice === undefined || choice < 0 ? null : (rule.variants?.[choice]?.name ?? null);
    return { index, segment: rule.segment, applied: choice !== undefined, variant, disabled: rule.disabled === true };
  });
}
