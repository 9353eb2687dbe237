/**
 * The audit log with filters. The API pages by id (newest first); the filters apply to the pages
 * loaded so far, and "Load older entries" fetches the next page.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type AuditEntry } from '../api.js';
import { Choice } from '../parts/choice.js';
import { ErrorBox } from '../parts/messages.js';
import { Table } from '../parts/table.js';
import { useFollow } from '../parts/use-follow.js';
import { commentOf } from '../parts/audit-comment.js';
import { when } from '../parts/when.js';

const PAGE = 200;

export function Audit(): preact.JSX.Element {
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  const [done, setDone] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [action, setAction] = useState('');
  const [env, setEnv] = useState('');
  const [text, setText] = useState('');

  async function load(before: number | null): Promise<void> {
    try {
      const q = before === null ? `audit?limit=${PAGE}` : `audit?limit=${PAGE}&before=${before}`;
      const r = await api<{ entries: AuditEntry[] }>('GET', q);
      setEntries((old) => (before === null ? r.entries : [...old, ...r.entries]));
      setDone(r.entries.length < PAGE);
      setError(null);
    } catch (err) {
      setError(err);
    }
  }
  useEffect(() => void load(null), []);
  // New entries appear at the top as they are written (the newest page is read again).
  useFollow(() => void load(null));

  const actions = [...new Set(entries.map((e) => e.action))].sort();
  const envs = [...new Set(entries.map((e) => e.env).filter((e): e is string => e !== null))].sort();
  const t = text.toLowerCase();
  const shown = entries.filter(
    (e) =>
      (action === '' || e.action === action) &&
      (env === '' || e.env === env) &&
      (t === '' || `${e.actor} ${e.target ?? ''} ${JSON.stringify(e.detail)}`.toLowerCase().includes(t)),
  );

  return (
    <section aria-labelledby="audit-title">
      <h2 id="audit-title">Audit log</h2>
      <div class="row">
        <Choice label="Action" named value={action} choices={actions} onChoose={setAction} anyOption="all" />
        <Choice label="Environment" named value={env} choices={envs} onChoose={setEnv} anyOption="all" />
        <label>
          Actor, target or detail contains <input type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <button type="button" onClick={() => void load(null)}>
          Refresh
        </button>
      </div>
      <ErrorBox error={error} />
      <Table caption={`${shown.length} of ${entries.length} loaded entries`} columns={['When', 'Actor', 'Action', 'Environment', 'Target', 'Comment', 'Detail']}>
        {shown.map((e) => (
          <tr key={e.id}>
            <td>{when(e.at)}</td>
            <td>{e.actor}</td>
            <th scope="row">{e.action}</th>
            <td>{e.env ?? ''}</td>
            <td>{e.target ?? ''}</td>
            <td>{commentOf(e.detail)}</td>
            <td>
              <code>{e.detail === null ? '' : JSON.stringify(e.detail)}</code>
            </td>
          </tr>
        ))}
      </Table>
      {!done && entries.length > 0 && (
        <button type="button" onClick={() => void load(entries[entries.length - 1]!.id)}>
          Load older entries
        </button>
      )}
    </section>
  );
}

