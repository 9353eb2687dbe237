/** The content of one environment: searchable, with hash, revision count, mapping flag and last edit; new items. */
import { useState } from 'preact/hooks';
import { api, seg, type ContentSummary } from '../api.js';
import { ErrorBox } from '../parts/messages.js';
import { Table } from '../parts/table.js';
import { useLoad } from '../parts/use-load.js';
import { useFollow } from '../parts/use-follow.js';
import { when } from '../parts/when.js';
import { EnvNav } from './env-nav.js';

export function ContentList({ env }: { env: string }): preact.JSX.Element {
  const list = useLoad(() => api<{ content: ContentSummary[] }>('GET', `environments/${seg(env)}/content`), [env]);
  useFollow(list.reload, env);
  const [query, setQuery] = useState('');
  const [newId, setNewId] = useState('');
  const q = query.toLowerCase();
  const rows = (list.data?.content ?? []).filter((c) => q === '' || c.id.toLowerCase().includes(q) || c.hash.startsWith(q));

  return (
    <section aria-labelledby="content-title">
      <h2 id="content-title">Content of {env}</h2>
      <EnvNav env={env} current="content" />
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          location.hash = `#/env/${seg(env)}/content/${seg(newId.trim())}`;
        }}
      >
        <label>
          New content id <input value={newId} onInput={(e) => setNewId(e.currentTarget.value)} required />
        </label>
        <button type="submit">Add content</button>
      </form>
      <label class="row">
        Search content <input type="search" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
      </label>
      <ErrorBox error={list.error} />
      <Table caption={`${rows.length} of ${list.data?.content.length ?? 0} items`} columns={['Id', 'Hash', 'Revisions', 'Mapping', 'Last edit']}>
        {rows.map((c) => (
          <tr key={c.id}>
            <th scope="row">
              <a href={`#/env/${seg(env)}/content/${seg(c.id)}`}>{c.id}</a>
            </th>
            <td>
              <code>{c.hash.slice(0, 12)}</code>
            </td>
            <td>{c.revisionCount}</td>
            <td>{c.hasMapping ? 'yes' : 'no'}</td>
            <td>{when(c.updatedAt)}</td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
