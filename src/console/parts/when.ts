/** An API timestamp as the console shows it: date and time in UTC, without the fraction of a second. */
export function when(iso: string | null): string {
  if (iso === null) return '';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}
