/** A fieldset of checkboxes, one for each option, each labelled with the option itself. */
export function CheckGroup<T extends string>({ legend, options, isChecked, onToggle }: { legend: string; options: readonly T[]; isChecked: (option: T) => boolean; onToggle: (option: T, checked: boolean) => void }): preact.JSX.Element {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {options.map((o) => (
        <label key={o}>
          <input type="checkbox" checked={isChecked(o)} onChange={(e) => onToggle(o, e.currentTarget.checked)} /> {o}
        </label>
      ))}
    </fieldset>
  );
}
