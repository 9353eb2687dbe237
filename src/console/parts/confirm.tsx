/**
 * A confirmation asked in place before an action that cannot be undone: the question as an alert
 * dialog (announced when it appears), the button that goes ahead focused first, and one that backs out.
 */
export function Confirm({ id, question, yes, no, onYes, onNo }: { id: string; question: string; yes: string; no: string; onYes: () => void; onNo: () => void }): preact.JSX.Element {
  return (
    <div role="alertdialog" aria-labelledby={id} class="confirm">
      <p id={id}>{question}</p>
      <button type="button" onClick={onYes} autoFocus>
        {yes}
      </button>
      <button type="button" onClick={onNo}>
        {no}
      </button>
    </div>
  );
}
