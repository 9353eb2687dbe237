/** API keys of one environment: create (the key is shown once), list, revoke. */
import { useState } from 'preact/hooks';
import { api, seg, type Key } from '../api.js';
import { ErrorBox, Status, useLoad, when } from '../ui.js';
import { EnvNav } from './env-nav.js';

export function Keys({ env }: { env: string }): preact.JSX.Element {
  const list = useLoad(() => api<{ keys: Key[] }>('GET', `environments/${seg(env)}/keys`), [env]);
  const [created, setCreated] = useState<{ id: string; key: string } | null>(null);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<unknown>(null);

  async function create(): Promise<void> {
    try {
      setCreated(await api<{ id: string; key: string }>('POST', `environments/${seg(env)}/keys`));
      setError(null);
      list.reload();
    } catch (err) {
      setError(err);
    }
  }

  async function revoke(id: string): Promise<void> {
    try {
      await api('DELETE', `environments/${seg(env)}/keys/${seg(id)}`);
      setStatus(`Key ${id} revoked.`);
      setError(null);
      list.reload();
    } catch (err) {
      setError(err);
    }
  }

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys of {env}</h2>
      <EnvNav env={env} current="keys" />
      <button type="button" onClick={() => void create()}>
        Create key
      </button>
      {created !== null && (
        <div role="status" class="once">
          <p>
            New key {created.id}. Copy it now: it is shown only once.
          </p>
          <label>
            New API key <input readOnly value={created.key} onFocus={(e) => e.currentTarget.select()} />
          </label>
        </div>
      )}
      {status !== '' && <Status>{status}</Status>}
      <ErrorBox error={error ?? list.error} />
      <table>
        <caption>Keys</caption>
        <thead>
          <tr>
            <th scope="col">Key id</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Revoked</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {(list.data?.keys ?? []).map((k) => (
            <tr key={k.id}>
              <th scope="row">{k.id}</th>
              <td>{when(k.createdAt)}</td>
              <td>{when(k.lastUsedAt)}</td>
              <td>{when(k.revokedAt)}</td>
              <td>
                {k.revokedAt === null && (
                  <button type="button" onClick={() => void revoke(k.id)} aria-label={`Revoke key ${k.id}`}>
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
