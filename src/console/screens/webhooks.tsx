/** Webhooks: register (the secret is shown once), list, delete. */
import { useState } from 'preact/hooks';
import { api, seg, type Webhook } from '../api.js';
import { ErrorBox, Status, useLoad, when } from '../ui.js';

const EVENTS = ['content.updated', 'content.deleted', 'mapping.updated', 'environment.synced'];

export function Webhooks(): preact.JSX.Element {
  const list = useLoad(() => api<{ webhooks: Webhook[] }>('GET', 'webhooks'), []);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([...EVENTS]);
  const [secret, setSecret] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<unknown>(null);

  async function add(e: Event): Promise<void> {
    e.preventDefault();
    try {
      const r = await api<{ secret: string }>('POST', 'webhooks', { url, events });
      setSecret(r.secret);
      setUrl('');
      setError(null);
      list.reload();
    } catch (err) {
      setError(err);
    }
  }

  async function remove(id: string): Promise<void> {
    try {
      await api('DELETE', `webhooks/${seg(id)}`);
      setStatus(`Webhook ${id} deleted.`);
      setError(null);
      list.reload();
    } catch (err) {
      setError(err);
    }
  }

  return (
    <section aria-labelledby="hooks-title">
      <h2 id="hooks-title">Webhooks</h2>
      <form onSubmit={(e) => void add(e)}>
        <label class="row">
          Webhook URL <input type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} required />
        </label>
        <fieldset>
          <legend>Events</legend>
          {EVENTS.map((ev) => (
            <label key={ev}>
              <input
                type="checkbox"
                checked={events.includes(ev)}
                onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))}
              />{' '}
              {ev}
            </label>
          ))}
        </fieldset>
        <button type="submit">Add webhook</button>
      </form>
      {secret !== null && (
        <div role="status" class="once">
          <label>
            Signing secret (shown once) <input readOnly value={secret} />
          </label>
        </div>
      )}
      {status !== '' && <Status>{status}</Status>}
      <ErrorBox error={error ?? list.error} />
      <table>
        <caption>Webhooks</caption>
        <thead>
          <tr>
            <th scope="col">URL</th>
            <th scope="col">Events</th>
            <th scope="col">Created</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.webhooks ?? []).map((w) => (
            <tr key={w.id}>
              <th scope="row">{w.url}</th>
              <td>{w.events.join(', ')}</td>
              <td>{when(w.createdAt)}</td>
              <td>
                <button type="button" onClick={() => void remove(w.id)} aria-label={`Delete webhook ${w.url}`}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
