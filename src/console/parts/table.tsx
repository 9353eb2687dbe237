/** A data table: its caption (its accessible name), a header row of column names, and the body rows the caller gives. */
import type { ComponentChildren } from 'preact';

export function Table({ caption, columns, children }: { caption: string; columns: readonly string[]; children: ComponentChildren }): preact.JSX.Element {
  return (
    <table>
      <caption>{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c} scope="col">
              {c}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}
