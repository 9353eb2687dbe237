/**
 * An API error shown beside the form field it concerns (field-errors.ts places it and words it):
 * an alert, so a screen reader announces it, with an id the field names in aria-describedby.
 */
import { errorOf, placeError, type FormName } from '../field-errors.js';

/** The error of `field` on `form`, if `error` is one; nothing otherwise. */
export function FieldError({ id, form, field, error }: { id: string; form: FormName; field: string; error: unknown }): preact.JSX.Element | null {
  const text = errorOf(form, error, field);
  if (text === null) return null;
  return (
    <p role="alert" class="error field-error" id={id}>
      {text}
    </p>
  );
}

/** The attributes that tie a field to its error: aria-invalid and aria-describedby while it has one. */
export function fieldAttrs(id: string, form: FormName, field: string, error: unknown): { 'aria-invalid'?: 'true'; 'aria-describedby'?: string } {
  return errorOf(form, error, field) === null ? {} : { 'aria-invalid': 'true', 'aria-describedby': id };
}

/** The error when no field of `form` takes it (shown with the form's other messages), else null. */
export function unplaced(form: FormName, error: unknown): unknown {
  return placeError(form, error) === null ? error : null;
}
