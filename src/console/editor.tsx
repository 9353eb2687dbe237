/**
 * A CodeMirror 6 editor for JSON and JSONC: syntax highlighting, and the server's own JSONC check
 * (jsonc-check.ts) as a lint marker at the problem's line and column. The editor is a text box
 * with an accessible name; Tab is not captured, so keyboard users can leave it.
 *
 * It lives in a shadow root: CodeMirror then installs its styles as constructed style sheets
 * (adoptedStyleSheets) instead of a <style> element, which the console's Content-Security-Policy
 * (style-src 'self', no inline styles, no nonce) would block.
 */
import { useEffect, useRef } from 'preact/hooks';
import { EditorState } from '@codemirror/state';
import { EditorView, lineNumbers, highlightActiveLine } from '@codemirror/view';
import { defaultHighlightStyle, syntaxHighlighting } from '@codemirror/language';
import { json } from '@codemirror/lang-json';
import { linter, lintGutter, type Diagnostic } from '@codemirror/lint';
import { jsoncProblem } from './jsonc-check.js';

export interface EditorProps {
  /** The accessible name of the text box. */
  label: string;
  /** The text shown when the editor is created, and again whenever `resetKey` changes. */
  initial: string;
  /** Changing it replaces the text with `initial` (e.g. a newly saved or rolled-back revision). */
  resetKey: string | number;
  onChange: (text: string) => void;
  /** Check the text as JSONC (content) or leave checking to the caller (mappings: plain JSON). */
  check: (text: string) => Diagnostic[];
}

export function jsoncDiagnostics(text: string): Diagnostic[] {
  const p = jsoncProblem(text);
  if (p === null) return [];
  const from = Math.min(p.offset, text.length);
  return [{ from, to: Math.min(from + 1, text.length), severity: 'error', message: `line ${p.line}, column ${p.column}: ${p.reason}` }];
}

const EDITOR_THEME = EditorView.theme({
  '&': { minHeight: '8rem', maxHeight: '28rem', border: '1px solid #d1d5db', borderRadius: '4px' },
  '&.cm-focused': { outline: '3px solid #2563eb', outlineOffset: '2px' },
  '.cm-scroller': { fontFamily: 'ui-monospace, monospace', overflow: 'auto' },
});

export function Editor({ label, initial, resetKey, onChange, check }: EditorProps): preact.JSX.Element {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const changed = useRef(onChange);
  changed.current = onChange;

  useEffect(() => {
    const state = EditorState.create({
      doc: initial,
      extensions: [
        lineNumbers(),
        highlightActiveLine(),
        json(),
        syntaxHighlighting(defaultHighlightStyle),
        lintGutter(),
        linter((v) => check(v.state.doc.toString()), { delay: 150 }),
        EDITOR_THEME,
        EditorView.contentAttributes.of({ 'aria-label': label, 'aria-multiline': 'true' }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) changed.current(u.state.doc.toString());
        }),
      ],
    });
    const root = host.current!.attachShadow({ mode: 'open' });
    view.current = new EditorView({ state, parent: root, root });
    return () => view.current?.destroy();
    // Created once per mounted component; the text is replaced only when resetKey changes (below).
  }, []);

  // The editor owns its text while the user types: the parent's copy (from onChange) may lag a
  // render behind fast typing, so writing it back would undo keys typed since. Only a new resetKey
  // replaces the text.
  const firstKey = useRef(resetKey);
  useEffect(() => {
    const v = view.current;
    if (v === null || firstKey.current === resetKey) return;
    firstKey.current = resetKey;
    if (v.state.doc.toString() !== initial) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: initial } });
  }, [resetKey]);

  return <div class="editor" ref={host} />;
}
