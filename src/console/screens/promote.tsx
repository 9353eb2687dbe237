/** Promote: plan a sync from one environment to another, see each item's diff, then confirm (with a comment for the audit log). */
import { useState } from 'preact/hooks';
import { api, apiWrite, seg, type Environment, type PlanItem } from '../api.js';
import { Choice } from '../parts/choice.js';
import { MAX_COMMENT } from '../parts/confirm-write.js';
import { Diff } from '../parts/diff.js';
import { ErrorBox, Status } from '../parts/messages.js';
import { useOutcome } from '../parts/outcome.js';
import { useLoad } from '../parts/use-load.js';

function describeSide(text: string, minAppVersion: string | null, mapping: unknown): string {
  const head = minAppVersion === null ? '' : `// minAppVersion ${minAppVersion}\n`;
  return `${head}${text.replace(/\n?$/, '\n')}// mapping\n${mapping === null ? 'none' : JSON.stringify(mapping, null, 2)}\n`;
}

export function Promote(): preact.JSX.Element {
  const envs = useLoad(() => api<{ environments: Environment[] }>('GET', 'environments'), []);
  const names = (envs.data?.environments ?? []).map((e) => e.id);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [ids, setIds] = useState('');
  const [plan, setPlan] = useState<PlanItem[] | null>(null);
  const [comment, setComment] = useState('');
  const outcome = useOutcome();
  const source = from || names[0] || '';
  const target = to || names.find((n) => n !== source) || '';

  function body(dryRun: boolean): object {
    const list = ids
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    return list.length === 0 ? { to: target, dryRun } : { to: target, ids: list, dryRun };
  }

  async function planIt(e: Event): Promise<void> {
    e.preventDefault();
    const planned = await outcome.attempt(async () => {
      const r = await api<{ items: PlanItem[] }>('POST', `environments/${seg(source)}/sync`, body(true));
      setPlan(r.items);
      return ''; // a new plan clears the sentence of the last promotion
    });
    if (!planned) setPlan(null);
  }

  async function confirm(): Promise<void> {
    await outcome.attempt(async () => {
      const r = await apiWrite<{ items: { action: string }[] }>('POST', `environments/${seg(source)}/sync`, comment, body(false));
      setComment('');
      const moved = r.items.filter((i) => i.action !== 'unchanged').length;
      setPlan(null);
      return `Promoted ${source} to ${target}: ${moved} items created or updated.`;
    });
  }

  const changes = plan?.filter((i) => i.action !== 'unchanged') ?? [];
  return (
    <section aria-labelledby="promote-title">
      <h2 id="promote-title">Promote</h2>
      <form class="row" onSubmit={(e) => void planIt(e)}>
        <Choice label="From environment" value={source} choices={names} onChoose={setFrom} />
        <Choice label="To environment" value={target} choices={names} onChoose={setTo} />
        <label>
          Content ids (comma-separated, empty for all) <input value={ids} onInput={(e) => setIds(e.currentTarget.value)} />
        </label>
        <button type="submit">Show changes</button>
      </form>
      <ErrorBox error={outcome.error ?? envs.error} />
      {outcome.status !== '' && <Status>{outcome.status}</Status>}
      {plan !== null && (
        <div role="region" aria-label="Planned changes">
          <p>
            {changes.length} of {plan.length} items would change in {target}.
          </p>
          {plan.map((item) => (
            <section key={item.id} aria-label={`${item.id}: ${item.action}`}>
              <h3>
                {item.id}: {item.action}
              </h3>
              {item.action !== 'unchanged' && (
                <Diff
                  before={item.to === null ? '' : describeSide(item.to.text, item.to.minAppVersion, item.to.mapping)}
                  after={describeSide(item.from.text, item.from.minAppVersion, item.from.mapping)}
                  label={`Diff of ${item.id}`}
                />
              )}
            </section>
          ))}
          <label>
            Comment for the audit log (optional){' '}
            <input value={comment} maxLength={MAX_COMMENT} onInput={(e) => setComment(e.currentTarget.value)} placeholder="why, e.g. release 1.4 content" />
          </label>{' '}
          <button type="button" onClick={() => void confirm()} disabled={changes.length === 0}>
            Confirm promotion to {target}
          </button>
        </div>
      )}
    </section>
  );
}
