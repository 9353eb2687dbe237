/**
 * One content item: the JSONC editor (checked with the server's rules before saving), its revision
 * history with a diff between any two revisions and rollback, and its mapping with the preview.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, apiWrite, seg, type ContentDetail } from '../api.js';
import { Editor, jsoncDiagnostics } from '../editor.js';
import { jsoncProblem } from '../jsonc-check.js';
import { ConfirmButton, useConfirmWrite } from '../parts/confirm-write.js';
import { useFollow } from '../parts/use-follow.js';
import { ItemActivity } from '../parts/item-activity.js';
import { useConflictGate } from '../parts/conflict-warning.js';
import { FieldError, fieldAttrs, unplaced } from '../parts/field-error.js';
import { Diff } from '../parts/diff.js';
import { ErrorBox } from '../parts/messages.js';
import { OutcomeLines, useOutcome } from '../parts/outcome.js';
import { Table } from '../parts/table.js';
import { useLoad } from '../parts/use-load.js';
import { when } from '../parts/when.js';
import { ItemRollouts } from './item-rollouts.js';
import { MappingPanel } from './mapping.js';
import { ScheduleForm, Timeline } from '../schedule-ui.js';

const NEW_TEXT = '{\n  // a comment stays in the stored text and is stripped on delivery\n}\n';

export function ContentItem({ env, id }: { env: string; id: string }): preact.JSX.Element {
  const path = `environments/${seg(env)}/content/${seg(id)}`;
  const detail = useLoad(async () => {
    try {
      return await api<ContentDetail>('GET', path);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'content_not_found') return null;
      throw err;
    }
  }, [path]);
  useFollow(detail.reload, env, id);
  const item = detail.data;
  const newest = item?.revisions[item.revisions.length - 1];
  const [text, setText] = useState(NEW_TEXT);
  const [minApp, setMinApp] = useState('');
  const outcome = useOutcome();
  const confirm = useConfirmWrite();
  // The revision the editor started from: a revision saved meanwhile (live, by someone else) does
  // not replace text being edited; the editor follows the newest only while it holds no edit.
  const [base, setBase] = useState(newest);
  const edited = base !== undefined ? text !== base.text : text !== NEW_TEXT;
  /** Set by this editor's own save: the revision it made is the one to follow. */
  const adopt = useRef(false);
  const gate = useConflictGate();

  useEffect(() => {
    if (newest !== undefined && (!edited || adopt.current)) {
      adopt.current = false;
      setBase(newest);
      setText(newest.text);
      setMinApp(newest.minAppVersion ?? '');
    }
  }, [newest?.revId]);

  const problem = jsoncProblem(text);

  function save(e: Event): void {
    e.preventDefault();
    if (problem !== null) return;
    const q = minApp.trim() === '' ? '' : `?minAppVersion=${encodeURIComponent(minApp.trim())}`;
    // A save that would make pending scheduled changes fail (one pinned to the newest revision) is
    // named first; then the confirmation says what goes live, with an optional comment for the audit.
    const put = { op: 'content.put', id, text, minAppVersion: minApp.trim() === '' ? null : minApp.trim() };
    void gate.guard(env, { ops: [put] }, `Saving ${id}`, () => {
      confirm.ask({
        question: `Save ${id} in ${env} as ${newest === undefined ? 'its first revision' : `revision ${newest.number + 1}`}${q === '' ? '' : ` (minimum app version ${minApp.trim()})`}? Every player of ${env} gets it at once.`,
        yes: 'Yes, save content',
        run: (comment) =>
          outcome.attempt(async () => {
            const r = await apiWrite<{ revision: number; changed: boolean; hash: string }>('PUT', path + q, comment, text);
            adopt.current = true;
            detail.reload();
            return r.changed ? `Saved revision ${r.revision} (hash ${r.hash.slice(0, 12)}).` : 'No change: the newest revision already has this text.';
          }),
      });
      return Promise.resolve();
    });
  }

  return (
    <section aria-labelledby="item-title">
      <h2 id="item-title">
        {id} <span class="muted">in {env}</span>
      </h2>
      <ErrorBox error={detail.error} />
      <form onSubmit={(e) => save(e)} aria-labelledby="edit-title">
        <h3 id="edit-title">{newest === undefined ? 'New content' : `Edit (newest: revision ${newest.number})`}</h3>
        <Editor label="Content JSONC" initial={base?.text ?? NEW_TEXT} resetKey={base?.revId ?? 0} onChange={setText} check={jsoncDiagnostics} />
        {newest !== undefined && base?.revId !== newest.revId && (
          <p role="status" class="error">
            Revision {newest.number} was saved while you edited{base === undefined ? '' : ` revision ${base.number}`}: saving stores your text as revision {newest.number + 1}. Compare
            them in the revision history below.
          </p>
        )}
        {problem !== null ? (
          <p role="alert" class="error" id="jsonc-problem">
            Invalid JSONC at line {problem.line}, column {problem.column}: {problem.reason}
          </p>
        ) : (
          <p class="muted" id="jsonc-problem">
            Valid JSONC.
          </p>
        )}
        <FieldError id="content-text-error" form="content" field="text" error={outcome.error} />
        <div class="row">
          <label>
            Minimum app version <input value={minApp} onInput={(e) => setMinApp(e.currentTarget.value)} placeholder="X.Y.Z (optional)" {...fieldAttrs('content-min-app-error', 'content', 'minAppVersion', outcome.error)} />
          </label>
          <button type="submit" disabled={problem !== null} aria-describedby="jsonc-problem">
            Save content
          </button>
        </div>
        <FieldError id="content-min-app-error" form="content" field="minAppVersion" error={outcome.error} />
        {gate.warning}
        {confirm.dialog}
        <OutcomeLines outcome={{ ...outcome, error: unplaced('content', outcome.error) }} />
      </form>
      {item !== null && item !== undefined && <History item={item} path={path} onChange={detail.reload} />}
      {item !== null && item !== undefined && <ItemActivity env={env} id={id} />}
      {item !== null && item !== undefined && <MappingPanel env={env} item={item} onChange={detail.reload} />}
      {item !== null && item !== undefined && item.mapping !== null && <KillSwitch env={env} item={item} onChange={detail.reload} />}
      {item !== null && item !== undefined && <ItemRollouts env={env} item={item} onChange={detail.reload} />}
      <ItemSchedule env={env} id={id} text={newest?.text} />
    </section>
  );
}

/** The item's own timeline, and a change of it to schedule. */
function ItemSchedule({ env, id, text }: { env: string; id: string; text: string | undefined }): preact.JSX.Element {
  const [refresh, setRefresh] = useState(0);
  return (
    <section aria-labelledby="item-schedule-title">
      <h3 id="item-schedule-title">Schedule</h3>
      <ScheduleForm env={env} id={id} initialText={text} onScheduled={() => setRefresh((n) => n + 1)} />
      <Timeline env={env} id={id} refresh={refresh} />
    </section>
  );
}

/**
 * The kill switch (docs/schedule.md): one rule, or every rule, of the mapping disabled at once and
 * the item's scheduled changes cancelled, after a confirmation that says so.
 */
function KillSwitch({ env, item, onChange }: { env: string; item: ContentDetail; onChange: () => void }): preact.JSX.Element {
  const rules = item.mapping?.rules ?? [];
  const [target, setTarget] = useState('all');
  const confirm = useConfirmWrite();
  const outcome = useOutcome();
  const rule = target === 'all' ? null : Number(target);
  const what = rule === null ? 'every rule of the mapping' : `rule ${rule} (${rules[rule]?.segment ?? ''})`;

  async function kill(comment: string): Promise<void> {
    await outcome.attempt(async () => {
      const body = rule === null ? {} : { rule, segment: rules[rule]?.segment };
      const r = await apiWrite<{ ruleCount: number; cancelled: string[] }>('POST', `environments/${seg(env)}/content/${seg(item.id)}/kill`, comment, body);
      onChange();
      return `Killed ${what}: ${r.ruleCount} rules still apply; ${r.cancelled.length} scheduled change(s) cancelled.`;
    });
  }

  return (
    <section aria-labelledby="kill-title">
      <h3 id="kill-title">Kill switch</h3>
      <div class="row">
        <label>
          Disable{' '}
          <select value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
            <option value="all">every rule</option>
            {rules.map((r, i) => (
              <option key={i} value={String(i)}>
                rule {i}: {r.segment}
              </option>
            ))}
          </select>
        </label>
        <ConfirmButton
          confirm={confirm}
          question={{ question: `Disable ${what} of ${item.id} for every player now, and cancel every scheduled change of ${item.id}?`, yes: `Yes, kill ${what}`, run: kill }}
        >
          Kill switch…
        </ConfirmButton>
      </div>
      {confirm.dialog}
      <OutcomeLines outcome={outcome} />
    </section>
  );
}

function History({ item, path, onChange }: { item: ContentDetail; path: string; onChange: () => void }): preact.JSX.Element {
  const revs = item.revisions;
  const last = revs[revs.length - 1]!.number;
  const [a, setA] = useState(Math.max(1, last - 1));
  const [b, setB] = useState(last);
  const outcome = useOutcome();
  const confirm = useConfirmWrite();
  useEffect(() => {
    setA(Math.max(1, last - 1));
    setB(last);
  }, [last]);
  const ra = revs.find((r) => r.number === a);
  const rb = revs.find((r) => r.number === b);

  function rollback(n: number): void {
    confirm.ask({
      question: `Roll ${item.id} in ${item.envId} back to revision ${n}? Its text is copied as revision ${last + 1}, and every player gets it at once.`,
      yes: `Yes, roll back to revision ${n}`,
      run: (comment) =>
        outcome.attempt(async () => {
          const r = await apiWrite<{ revision: number; changed: boolean }>('POST', `${path}/rollback?to=${n}`, comment);
          onChange();
          return r.changed ? `Rolled back: revision ${r.revision} is a copy of revision ${n}.` : `Revision ${n} is already the newest.`;
        }),
    });
  }

  const options = revs.map((r) => (
    <option key={r.number} value={r.number}>
      {r.number}
    </option>
  ));
  return (
    <section aria-labelledby="history-title">
      <h3 id="history-title">Revision history</h3>
      <Table caption={`${revs.length} revisions, newest last`} columns={['Revision', 'Hash', 'Min app version', 'Created', 'Actions']}>
        {revs.map((r) => (
          <tr key={r.number}>
            <th scope="row">{r.number}</th>
            <td>
              <code>{r.hash.slice(0, 12)}</code>
            </td>
            <td>{r.minAppVersion ?? ''}</td>
            <td>{when(r.createdAt)}</td>
            <td>
              {r.number !== last && (
                <button type="button" onClick={() => rollback(r.number)} aria-label={`Roll back to revision ${r.number}`}>
                  Roll back
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
      {confirm.dialog}
      <OutcomeLines outcome={outcome} />
      <div class="row">
        <label>
          Compare revision{' '}
          <select value={a} onChange={(e) => setA(Number(e.currentTarget.value))}>
            {options}
          </select>
        </label>
        <label>
          with revision{' '}
          <select value={b} onChange={(e) => setB(Number(e.currentTarget.value))}>
            {options}
          </select>
        </label>
      </div>
      {ra !== undefined && rb !== undefined && <Diff before={ra.text} after={rb.text} label={`Diff of revision ${a} and revision ${b}`} />}
    </section>
  );
}
