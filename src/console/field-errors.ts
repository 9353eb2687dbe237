/**
 * Where an admin API error belongs on a console form, and what it says there in words: the one
 * mapping from the API's error paths (`ops.0.text`, `at`; docs/schedule.md) and codes to the fields
 * of the forms that write, so a refusal appears beside the field it concerns ("the text of the
 * change: line 1, column 12: ...") instead of as `ops.0.text ... (invalid_content, 400)` below the form.
 */
import { ApiError } from './api.js';

/** The forms that place errors by field: scheduling a change, saving content, editing a change's text. */
export type FormName = 'schedule' | 'content' | 'change';

export interface PlacedError {
  /** The form's field: `at`, `id`, `text`, `mapping`, `revision`, `base`, `note`, `minAppVersion`. */
  readonly field: string;
  /** The error in words, starting with what the field is. */
  readonly text: string;
}

/** A field of a form: the API paths it answers for (`ops.*.text`: any op's text), its codes, its words. */
interface FieldRule {
  readonly field: string;
  readonly words: string;
  readonly paths?: readonly string[];
  /** Codes that belong to this field whatever their path (the store's refusals name none). */
  readonly codes?: readonly string[];
  /** With `codes`: only when the message matches. */
  readonly message?: RegExp;
}

const OP_FIELDS: readonly FieldRule[] = [
  { field: 'id', words: 'the content id', paths: ['ops.*.id'], codes: ['content_not_found'] },
  { field: 'base', words: '"only if still at revision"', paths: ['ops.*.baseRevision'], codes: ['base_revision_changed'] },
  { field: 'revision', words: 'the revision to restore', paths: ['ops.*.to'], codes: ['not_found'], message: /^revision \d+ of / },
  { field: 'mapping', words: 'the mapping', paths: ['ops.*.mapping'], codes: ['invalid_mapping'] },
];

const FORMS: Record<FormName, readonly FieldRule[]> = {
  schedule: [
    { field: 'text', words: 'the text of the change', paths: ['ops.*.text', 'ops.*.json'], codes: ['invalid_content'] },
    { field: 'at', words: 'the time the change takes effect', paths: ['at'] },
    { field: 'note', words: 'the note', paths: ['note'] },
    ...OP_FIELDS,
  ],
  change: [{ field: 'text', words: 'the text of the change', paths: ['ops.*.text', 'ops.*.json', 'ops'], codes: ['invalid_content', 'base_revision_changed', 'content_not_found'] }],
  content: [
    { field: 'text', words: 'the content text', codes: ['invalid_content'] },
    // The content save's only query member: a refused one is the minimum app version.
    { field: 'minAppVersion', words: 'the minimum app version', codes: ['invalid_query'] },
  ],
};

/** API phrases that speak of the API itself, in the console's words. */
const REWORDED: readonly [RegExp, string][] = [[/to change something now, send the write itself/, 'to change it now, save it on the item\'s page instead']];

/** The path an error names: in its details (`path`, `field`), else at the start of its message (`at must ...`, `ops.0.text: ...`). */
function pathOf(err: ApiError): string | null {
  const d = err.details as { path?: unknown; field?: unknown } | null | undefined;
  if (typeof d?.path === 'string') return d.path;
  if (typeof d?.field === 'string') return d.field;
  const m = /^(ops\.\d+(?:\.[A-Za-z]+)?|at|note|ops)(?=[: ])/.exec(err.message);
  return m === null ? null : m[1]!;
}

function matches(pattern: string, path: string): boolean {
  return pattern === path.replace(/^ops\.\d+/, 'ops.*');
}

/** The error without the path it starts with ("ops.0.text: x" -> "x", "at must ..." -> "must ..."). */
function rest(message: string, path: string | null): string {
  let out = path !== null && message.startsWith(path) ? message.slice(path.length).replace(/^:?\s*/, '') : message;
  for (const [from, to] of REWORDED) out = out.replace(from, to);
  return out;
}

/** Where `err` belongs on `form`, in words; null when it concerns no one field (shown as a general error). */
export function placeError(form: FormName, err: unknown): PlacedError | null {
  if (!(err instanceof ApiError)) return null;
  const path = pathOf(err);
  const rules = FORMS[form];
  const rule =
    (path === null ? undefined : rules.find((r) => r.paths?.some((p) => matches(p, path)))) ??
    rules.find((r) => r.codes?.includes(err.code) === true && (r.message === undefined || r.message.test(err.message)));
  if (rule === undefined) return null;
  // A refused mapping lists its problems (rule, path, reason) in its details.
  const problems = Array.isArray(err.details) ? (err.details as { path?: string; reason?: string }[]).filter((p) => typeof p.reason === 'string') : [];
  const listed = problems.length === 0 ? '' : ` (${problems.map((p) => `${p.path ?? ''}: ${p.reason ?? ''}`).join('; ')})`;
  return { field: rule.field, text: `${rule.words}: ${rest(err.message, path)}${listed}` };
}

/** The error of `field` on `form`, if `err` is one. */
export function errorOf(form: FormName, err: unknown, field: string): string | null {
  const placed = placeError(form, err);
  return placed !== null && placed.field === field ? placed.text : null;
}
