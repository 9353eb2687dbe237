/**
 * A labelled drop-down of strings, each option its own value. `anyOption` names a first option with
 * the empty value (for a filter: no filter). `named` also gives the select the label as its own
 * accessible name, which then leaves out the text of the chosen option.
 */
export function Choice({ label, value, choices, onChoose, anyOption, named = false }: { label: string; value: string; choices: readonly string[]; onChoose: (value: string) => void; anyOption?: string; named?: boolean }): preact.JSX.Element {
  return (
    <label>
      {label}{' '}
      <select aria-label={named ? label : undefined} value={value} onChange={(e) => onChoose(e.currentTarget.value)}>
        {anyOption !== undefined && <option value="">{anyOption}</option>}
        {choices.map((c) => (
          <option key={c}>{c}</option>
        ))}
      </select>
    </label>
  );
}
