/** The person's comment on a write (X-Rcd-Comment, kept in its audit entry as `detail.comment`), or nothing. */
export function commentOf(detail: unknown): string {
  const c = (detail as { comment?: unknown } | null)?.comment;
  return typeof c === 'string' ? c : '';
}
