/** Environments: the list with item and key counts, create, delete (confirmed, with a comment for the audit log; forced when it holds content). */
import { useState } from 'preact/hooks';
import { api, apiWrite, seg, type Environment } from '../api.js';
import { DeleteButton, useConfirmWrite } from '../parts/confirm-write.js';
import { OutcomeLines, useOutcome } from '../parts/outcome.js';
import { Table } from '../parts/table.js';
import { useLoad } from '../parts/use-load.js';
import { useFollow } from '../parts/use-follow.js';
import { when } from '../parts/when.js';

export function Environments(): preact.JSX.Element {
  const list = useLoad(() => api<{ environments: Environment[] }>('GET', 'environments'), []);
  useFollow(list.reload);
  const [name, setName] = useState('');
  const outcome = useOutcome();
  const confirm = useConfirmWrite();

  async function create(e: Event): Promise<void> {
    e.preventDefault();
    await outcome.attempt(async () => {
      const r = await api<{ created: boolean }>('PUT', `environments/${seg(name)}`);
      setName('');
      list.reload();
      return r.created ? `Environment ${name} created.` : `Environment ${name} already exists.`;
    });
  }

  async function remove(env: Environment, comment: string): Promise<void> {
    await outcome.attempt(async () => {
      await apiWrite('DELETE', `environments/${seg(env.id)}${env.contentCount > 0 ? '?force=true' : ''}`, comment);
      list.reload();
      return `Environment ${env.id} deleted.`;
    });
  }

  return (
    <section aria-labelledby="env-title">
      <h2 id="env-title">Environments</h2>
      <form onSubmit={(e) => void create(e)} class="row">
        <label>
          New environment id <input value={name} onInput={(e) => setName(e.currentTarget.value)} required pattern="[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}" />
        </label>
        <button type="submit">Create environment</button>
      </form>
      <OutcomeLines outcome={outcome} loadError={list.error} />
      {confirm.dialog}
      <Table caption="Environments" columns={['Id', 'Content items', 'Keys', 'Created', 'Actions']}>
        {(list.data?.environments ?? []).map((env) => (
          <tr key={env.id}>
            <th scope="row">
              <a href={`#/env/${seg(env.id)}`}>{env.id}</a>
            </th>
            <td>{env.contentCount}</td>
            <td>{env.keyCount}</td>
            <td>{when(env.createdAt)}</td>
            <td>
              <a href={`#/env/${seg(env.id)}/keys`} aria-label={`Keys of ${env.id}`}>
                Keys
              </a>{' '}
              <a href={`#/env/${seg(env.id)}/experiments`} aria-label={`Experiments of ${env.id}`}>
                Experiments
              </a>{' '}
              <DeleteButton
                confirm={confirm}
                question={{
                  question: `Delete environment ${env.id}? ${env.contentCount} content items and ${env.keyCount} keys go with it.`,
                  yes: `Yes, delete ${env.id}`,
                  run: (c) => remove(env, c),
                }}
                what={`environment ${env.id}`}
              />
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
