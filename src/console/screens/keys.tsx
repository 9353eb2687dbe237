/** API keys of one environment: create (the key is shown once), list, revoke. */
import { useState } from 'preact/hooks';
import { api, apiWrite, seg, type Key } from '../api.js';
import { ConfirmButton, useConfirmWrite } from '../parts/confirm-write.js';
import { useFollow } from '../parts/use-follow.js';
import { OutcomeLines, useOutcome } from '../parts/outcome.js';
import { Table } from '../parts/table.js';
import { useLoad } from '../parts/use-load.js';
import { when } from '../parts/when.js';
import { EnvNav } from './env-nav.js';

export function Keys({ env }: { env: string }): preact.JSX.Element {
  const list = useLoad(() => api<{ keys: Key[] }>('GET', `environments/${seg(env)}/keys`), [env]);
  useFollow(list.reload, env);
  const confirm = useConfirmWrite();
  const [created, setCreated] = useState<{ id: string; key: string } | null>(null);
  const outcome = useOutcome();

  async function create(): Promise<void> {
    await outcome.attempt(async () => {
      setCreated(await api<{ id: string; key: string }>('POST', `environments/${seg(env)}/keys`));
      list.reload();
    });
  }

  async function revoke(id: string, comment: string): Promise<void> {
    await outcome.attempt(async () => {
      await apiWrite('DELETE', `environments/${seg(env)}/keys/${seg(id)}`, comment);
      list.reload();
      return `Key ${id} revoked.`;
    });
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
      {confirm.dialog}
      <OutcomeLines outcome={outcome} loadError={list.error} />
      <Table caption="Keys" columns={['Key id', 'Created', 'Last used', 'Revoked', 'Actions']}>
        {(list.data?.keys ?? []).map((k) => (
          <tr key={k.id}>
            <th scope="row">{k.id}</th>
            <td>{when(k.createdAt)}</td>
            <td>{when(k.lastUsedAt)}</td>
            <td>{when(k.revokedAt)}</td>
            <td>
              {k.revokedAt === null && (
                <ConfirmButton
                  confirm={confirm}
                  question={{ question: `Revoke key ${k.id} of ${env}? Every client using it is refused from its next request.`, yes: `Yes, revoke ${k.id}`, run: (c) => revoke(k.id, c) }}
                  label={`Revoke key ${k.id}`}
                >
                  Revoke
                </ConfirmButton>
              )}
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
