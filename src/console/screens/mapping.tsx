/**
 * A content item's mapping: the rules' editor with the server's validation messages grouped per
 * rule, the preview of one user context (the server evaluates it with the delivery code), and how
 * each A/B test splits the mods 0-999.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Diagnostic } from '@codemirror/lint';
import { api, ApiError, apiWrite, seg, type ContentDetail, type Mapping, type MappingProblem } from '../api.js';
import { Editor } from '../editor.js';
import { lineColumn, locateJsonError } from '../../store/json-errors.js';
import { ConfirmButton, useConfirmWrite } from '../parts/confirm-write.js';
import type { PreviewAt } from '../changes-api.js';
import { useConflictGate } from '../parts/conflict-warning.js';
import { ErrorBox } from '../parts/messages.js';
import { PreviewChanges } from '../parts/preview-changes.js';
import { OutcomeLines, useOutcome } from '../parts/outcome.js';
import { Table } from '../parts/table.js';
import { bothZones, instantOf, TimeInput, type Zone } from '../schedule-ui.js';

const EXAMPLE = '{\n  "rules": []\n}\n';

function jsonDiagnostics(text: string): Diagnostic[] {
  try {
    JSON.parse(text);
    return [];
  } catch {
    const at = locateJsonError(text) ?? { index: 0, reason: 'invalid JSON' };
    const { line, column } = lineColumn(text, at.index);
    const from = Math.min(at.index, text.length);
    return [{ from, to: Math.min(from + 1, text.length), severity: 'error', message: `line ${line}, column ${column}: ${at.reason}` }];
  }
}

export function MappingPanel({ env, item, onChange }: { env: string; item: ContentDetail; onChange: () => void }): preact.JSX.Element {
  const path = `environments/${seg(env)}/content/${seg(item.id)}`;
  const stored = item.mapping === null ? EXAMPLE : JSON.stringify(item.mapping, null, 2) + '\n';
  const [text, setText] = useState(stored);
  const [problems, setProblems] = useState<MappingProblem[]>([]);
  const outcome = useOutcome();
  const confirm = useConfirmWrite();
  // The mapping the editor started from: one changed meanwhile (live: a kill switch, a rollout step,
  // someone else) does not replace rules being edited; the editor follows it while it holds no edit.
  const [base, setBase] = useState(stored);
  const adopt = useRef(false);
  useEffect(() => {
    if (text === base || adopt.current) {
      adopt.current = false;
      setBase(stored);
      setText(stored);
    }
  }, [stored]);

  const gate = useConflictGate();

  // A mapping that would make pending scheduled changes fail (a rule a scheduled rule edit names) is
  // named first; then the confirmation says what goes live, with an optional comment for the audit.
  async function save(): Promise<void> {
    await gate.guard(env, { ops: [{ op: 'mapping.put', id: item.id, mapping: JSON.parse(text) as unknown }] }, `Saving the mapping of ${item.id}`, () => {
      confirm.ask({ question: `Save the mapping of ${item.id} in ${env}? Every player of ${env} gets its rules at once.`, yes: 'Yes, save mapping', run: write });
      return Promise.resolve();
    });
  }

  async function write(comment: string): Promise<void> {
    try {
      const r = await apiWrite<{ mappingId: number; ruleCount: number }>('PUT', `${path}/mapping`, comment, text);
      adopt.current = true;
      outcome.setStatus(`Mapping saved: ${r.ruleCount} rules (mapping ${r.mappingId}).`);
      setProblems([]);
      outcome.setError(null);
      onChange();
    } catch (err) {
      // A refused mapping is shown rule by rule below; any other failure as an error.
      const refused = err instanceof ApiError && err.code === 'invalid_mapping' && Array.isArray(err.details);
      setProblems(refused ? (err.details as MappingProblem[]) : []);
      outcome.setError(refused ? null : err);
      outcome.setStatus('');
    }
  }

  async function remove(comment: string): Promise<void> {
    await outcome.attempt(async () => {
      await apiWrite('DELETE', `${path}/mapping`, comment);
      adopt.current = true;
      onChange();
      return 'Mapping deleted.';
    });
  }

  const byRule = new Map<string, MappingProblem[]>();
  for (const p of problems) {
    const k = p.rule === null ? 'Mapping' : `Rule ${p.rule}`;
    byRule.set(k, [...(byRule.get(k) ?? []), p]);
  }
  const parseProblem = jsonDiagnostics(text)[0];

  return (
    <section aria-labelledby="mapping-title">
      <h3 id="mapping-title">Mapping</h3>
      <Editor label="Mapping JSON" initial={base} resetKey={base} onChange={setText} check={jsonDiagnostics} />
      {base !== stored && (
        <p role="status" class="error">
          The mapping was changed while you edited it (its rules now: {item.mapping === null ? 'none' : item.mapping.rules.length}): saving replaces it with yours.
        </p>
      )}
      {parseProblem !== undefined && (
        <p role="alert" class="error">
          Invalid JSON: {parseProblem.message}
        </p>
      )}
      <div class="row">
        <button
          type="button"
          onClick={() => void save()}
          disabled={parseProblem !== undefined}
        >
          Save mapping
        </button>
        {item.mapping !== null && (
          <ConfirmButton
            confirm={confirm}
            question={{ question: `Delete the mapping of ${item.id} in ${env}? Every player gets the content without rules at once.`, yes: 'Yes, delete mapping', run: remove }}
          >
            Delete mapping
          </ConfirmButton>
        )}
      </div>
      {gate.warning}
      {confirm.dialog}
      <OutcomeLines outcome={outcome} />
      {problems.length > 0 && (
        <div role="alert" class="error" aria-label="Mapping problems">
          <p>The mapping was refused; the previous one keeps serving.</p>
          {[...byRule].map(([rule, list]) => (
            <section key={rule} aria-label={rule}>
              <h4>{rule}</h4>
              <ul>
                {list.map((p, i) => (
                  <li key={i}>
                    <code>{p.path}</code>: {p.reason}
                  </li>
                ))}
              </ul>
            </section>
          ))}
        </div>
      )}
      {item.mapping !== null && <ModTable mapping={item.mapping} />}
      <PreviewForm path={path} />
    </section>
  );
}

/** Each A/B test's variants over the mods 0-999, the mods no variant takes, and each share. */
function ModTable({ mapping }: { mapping: Mapping }): preact.JSX.Element | null {
  const tests = mapping.rules.map((r, i) => ({ r, i })).filter(({ r }) => Array.isArray(r.variants));
  if (tests.length === 0) return null;
  return (
    <Table caption="A/B tests: mod ranges over 0-999" columns={['Rule', 'Variant', 'Mods', 'Share']}>
      {tests.flatMap(({ r, i }) => {
        const ranges = [...(r.variants ?? [])].sort((x, y) => x.mod[0] - y.mod[0]);
        const rows: { name: string; from: number; to: number }[] = [];
        let next = 0;
        for (const v of ranges) {
          if (v.mod[0] > next) rows.push({ name: '(not in the test)', from: next, to: v.mod[0] - 1 });
          rows.push({ name: v.name, from: v.mod[0], to: v.mod[1] });
          next = v.mod[1] + 1;
        }
        if (next <= 999) rows.push({ name: '(not in the test)', from: next, to: 999 });
        return rows.map((row) => (
          <tr key={`${i}-${row.from}`}>
            <th scope="row">
              {i}: {r.segment}
            </th>
            <td>{row.name}</td>
            <td>
              {row.from}-{row.to}
            </td>
            <td>{((row.to - row.from + 1) / 10).toFixed(1)}%</td>
          </tr>
        ));
      })}
    </Table>
  );
}

/**
 * What the wrapped endpoint answers one user context: now, or as the item will be at a chosen time
 * (its pending scheduled changes due by then applied by the server in a transaction it rolls back).
 */
function PreviewForm({ path }: { path: string }): preact.JSX.Element {
  const [u, setU] = useState('');
  const [p, setP] = useState('{}');
  const [v, setV] = useState('');
  const [later, setLater] = useState(false);
  const [atValue, setAtValue] = useState('');
  const [zone, setZone] = useState<Zone>('local');
  const [shownAt, setShownAt] = useState<string | null>(null);
  const [result, setResult] = useState<PreviewAt | null>(null);
  const [error, setError] = useState<unknown>(null);

  async function run(e: Event): Promise<void> {
    e.preventDefault();
    let attrs: unknown;
    try {
      attrs = JSON.parse(p);
    } catch {
      setError(new Error('p must be a JSON object, e.g. {"country":"DE"}'));
      return;
    }
    const body: Record<string, unknown> = { u, p: attrs };
    if (v.trim() !== '') body.v = v.trim();
    const at = later ? instantOf(atValue, zone) : null;
    if (later && at === null) {
      setError(new Error('choose the time to preview'));
      return;
    }
    try {
      setResult(await api<PreviewAt>('POST', `${path}/preview${at === null ? '' : `?at=${encodeURIComponent(at)}`}`, body));
      setShownAt(at);
      setError(null);
    } catch (err) {
      setResult(null);
      setError(err);
    }
  }

  return (
    <section aria-labelledby="preview-title">
      <h4 id="preview-title">Preview</h4>
      <form class="row" onSubmit={(e) => void run(e)}>
        <label>
          User id (u) <input value={u} onInput={(e) => setU(e.currentTarget.value)} />
        </label>
        <label>
          Attributes (p, JSON) <input value={p} onInput={(e) => setP(e.currentTarget.value)} />
        </label>
        <label>
          App version (v) <input value={v} onInput={(e) => setV(e.currentTarget.value)} placeholder="X.Y.Z (optional)" />
        </label>
        <label>
          <span>
            <input type="checkbox" checked={later} onChange={(e) => setLater(e.currentTarget.checked)} /> As it will be at a time
          </span>
        </label>
        {later && <TimeInput label="Preview at" value={atValue} zone={zone} onValue={setAtValue} onZone={setZone} />}
        <button type="submit">Preview</button>
      </form>
      <ErrorBox error={error} />
      {result !== null && (
        <div role="region" aria-label="Preview result">
          <p>
            {shownAt === null ? 'Now' : `As it will be at ${bothZones(shownAt)} (nothing stored)`}: uid {result.uid}, <strong>mod {result.mod}</strong>, revision{' '}
            {result.revision}
          </p>
          {shownAt !== null && <PreviewChanges preview={result} />}
          <Table caption="Rules for this user" columns={['Rule', 'Applied', 'Variant (A/B group)', 'Switched off']}>
            {result.rules.map((r) => (
              <tr key={r.index}>
                <th scope="row">
                  {r.index}: {r.segment}
                </th>
                <td>{r.applied ? 'yes' : 'no'}</td>
                <td>{r.variant ?? ''}</td>
                <td>{r.disabled ? "switched off (kill switch)" : ""}</td>
              </tr>
            ))}
          </Table>
          <pre aria-label="Delivered answer" tabIndex={0}>
            {JSON.stringify(result.answer, null, 2)}
          </pre>
        </div>
      )}
    </section>
  );
}
