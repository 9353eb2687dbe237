/** Webhooks: register (the secret is shown once), list, delete. */
import { useState } from 'preact/hooks';
import { api, apiWrite, seg, type Webhook } from '../api.js';
import { DeleteButton, useConfirmWrite } from '../parts/confirm-write.js';
import { CheckGroup } from '../parts/check-group.js';
import { OutcomeLines, useOutcome } from '../parts/outcome.js';
import { Table } from '../parts/table.js';
import { useLoad } from '../parts/use-load.js';
import { when } from '../parts/when.js';

const EVENTS = ['content.updated', 'content.deleted', 'mapping.updated', 'environment.synced'];

export function Webhooks(): preact.JSX.Element {
  const list = useLoad(() => api<{ webhooks: Webhook[] }>('GET', 'webhooks'), []);
  const confirm = useConfirmWrite();
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([...EVENTS]);
  const [secret, setSecret] = useState<string | null>(null);
  const outcome = useOutcome();

  async function add(e: Event): Promise<void> {
    e.preventDefault();
    await outcome.attempt(async () => {
      const r = await api<{ secret: string }>('POST', 'webhooks', { url, events });
      setSecret(r.secret);
      setUrl('');
      list.reload();
    });
  }

  async function remove(id: string, comment: string): Promise<void> {
    await outcome.attempt(async () => {
      await apiWrite('DELETE', `webhooks/${seg(id)}`, comment);
      list.reload();
      return `Webhook ${id} deleted.`;
    });
  }

  return (
    <section aria-labelledby="hooks-title">
      <h2 id="hooks-title">Webhooks</h2>
      <form onSubmit={(e) => void add(e)}>
        <label class="row">
          Webhook URL <input type="url" value={url} onInput={(e) => setUrl(e.currentTarget.value)} required />
        </label>
        <CheckGroup legend="Events" options={EVENTS} isChecked={(ev) => events.includes(ev)} onToggle={(ev, on) => setEvents(on ? [...events, ev] : events.filter((x) => x !== ev))} />
        <button type="submit">Add webhook</button>
      </form>
      {secret !== null && (
        <div role="status" class="once">
          <label>
            Signing secret (shown once) <input readOnly value={secret} />
          </label>
        </div>
      )}
      {confirm.dialog}
      <OutcomeLines outcome={outcome} loadError={list.error} />
      <Table caption="Webhooks" columns={['URL', 'Events', 'Created', 'Actions']}>
        {(list.data?.webhooks ?? []).map((w) => (
          <tr key={w.id}>
            <th scope="row">{w.url}</th>
            <td>{w.events.join(', ')}</td>
            <td>{when(w.createdAt)}</td>
            <td>
              <DeleteButton
                confirm={confirm}
                question={{ question: `Delete the webhook to ${w.url}? It gets no more change notices.`, yes: 'Yes, delete webhook', run: (c) => remove(w.id, c) }}
                what={`webhook ${w.url}`}
              />
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
