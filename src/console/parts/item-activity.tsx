/**
 * An item's recent changes from the audit log, newest first: who, what, and the comment they gave
 * (the revision history says what changed; this says who and why). Read from the newest page of the
 * audit log, which needs a token that may read it (role read, every environment); for another token
 * the section says so instead.
 */
import { api, ApiError, type AuditEntry } from '../api.js';
import { commentOf } from './audit-comment.js';
import { ErrorBox } from './messages.js';
import { Table } from './table.js';
import { useFollow } from './use-follow.js';
import { useLoad } from './use-load.js';
import { when } from './when.js';

const PAGE = 200;

export function ItemActivity({ env, id }: { env: string; id: string }): preact.JSX.Element {
  const log = useLoad(async () => {
    try {
      return (await api<{ entries: AuditEntry[] }>('GET', `audit?limit=${PAGE}`)).entries;
    } catch (err) {
      if (err instanceof ApiError && (err.code === 'forbidden_scope' || err.code === 'forbidden_role')) return null;
      throw err;
    }
  }, []);
  useFollow(log.reload, env, id);
  const key = id.toLowerCase();
  const entries = (log.data ?? []).filter((e) => e.env === env && (e.target ?? '').toLowerCase() === key);
  return (
    <section aria-labelledby="activity-title">
      <h3 id="activity-title">Who changed {id}, and why</h3>
      <ErrorBox error={log.error} />
      {log.data === null ? (
        <p class="muted">The audit log needs a token that may read it (role read, every environment).</p>
      ) : (
        <Table caption={`${entries.length} change(s) among the newest ${PAGE} entries of the audit log`} columns={['When', 'Who', 'Action', 'Comment']}>
          {entries.map((e) => (
            <tr key={e.id}>
              <td>{when(e.at)}</td>
              <td>{e.actor}</td>
              <th scope="row">{e.action}</th>
              <td>{commentOf(e.detail)}</td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}

