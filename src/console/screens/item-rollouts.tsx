/** An item's staged rollouts on its page: the form that creates one, and its rollouts as cards. */
import { useState } from 'preact/hooks';
import type { ContentDetail } from '../api.js';
import { RolloutForm } from '../parts/rollout-form.js';
import { RolloutList } from '../parts/rollout-list.js';

export function ItemRollouts({ env, item, onChange }: { env: string; item: ContentDetail; onChange: () => void }): preact.JSX.Element {
  const [refresh, setRefresh] = useState(0);
  const changed = (): void => {
    setRefresh((n) => n + 1);
    onChange();
  };
  return (
    <section aria-labelledby="item-rollouts-title">
      <h3 id="item-rollouts-title">Staged rollouts</h3>
      <RolloutForm env={env} item={item} onCreated={changed} />
      <RolloutList env={env} id={item.id} refresh={refresh} onChange={changed} />
    </section>
  );
}
