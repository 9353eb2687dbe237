/** Environments: the list with item and key counts, create, delete (confirmed; forced when it holds content). */
import { useState } from 'preact/hooks';
import { api, seg, type Environment } from '../api.js';
import { ErrorBox, Status, useLoad, when } from '../ui.js';

export function Environments(): preact.JSX.Element {
  const list = useLoad(() => api<{ environments: Environment[] }>('GET', 'environments'), []);
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [status, setStatus] = useState('');
  const [confirming, setConfirming] = useState<Environment | null>(null);

  async function create(e: Event): Promise<void> {
    e.preventDefault();
    try {
      const r = await api<{ created: boolean }>('PUT', `environments/${seg(name)}`);
      setStatus(r.created ? `Environment ${name} created.` : `Environment ${name} already exists.`);
      setError(null);
      setName('');
      list.reload();
    } catch (err) {
      setError(err);
    }
  }

  async function remove(env: Environment): Promise<void> {
    try {
      await api('DELETE', `environments/${seg(env.id)}${env.contentCount > 0 ? '?force=true' : ''}`);
      setStatus(`Environment ${env.id} deleted.`);
      setConfirming(null);
      setError(null);
      list.reload();
    } catch (err) {
      setError(err);
    }
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
      {status !== '' && <Status>{status}</Status>}
      <ErrorBox error={error ?? list.error} />
      {confirming !== null && (
        <div role="alertdialog" aria-labelledby="confirm-title" class="confirm">
          <p id="confirm-title">
            Delete environment {confirming.id}? {confirming.contentCount} content items and {confirming.keyCount} keys go with it.
          </p>
          <button type="button" onClick={() => void remove(confirming)} autoFocus>
            Yes, delete {confirming.id}
          </button>
          <button type="button" onClick={() => setConfirming(null)}>
            Cancel
          </button>
        </div>
      )}
      <table>
        <caption>Environments</caption>
        <thead>
          <tr>
            <th scope="col">Id</th>
            <th scope="col">Content items</th>
            <th scope="col">Keys</th>
            <th scope="col">Created</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
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
                <button type="button" onClick={() => setConfirming(env)} aria-label={`Delete environment ${env.id}`}>
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
