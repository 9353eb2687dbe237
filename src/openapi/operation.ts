/**
 * The building blocks of both OpenAPI documents: an operation (its parameters, body, answers and
 * the error codes it answers with, grouped by status), references to component schemas, and the
 * components a document lists.
 */
import { ERROR_STATUS, type ErrorCode } from '../runtime/errors.js';

export type Json = Record<string, unknown>;

export const REF = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
export const JSON_TYPE = 'application/json';

export interface Op {
  summary: string;
  params?: Json[];
  body?: { schema: Json; type?: string; required?: boolean; extraTypes?: Record<string, Json> };
  /** status -> [description, schema name or null (no body), headers] */
  ok: Record<string, [string, string | null, Json?]>;
  errors: readonly ErrorCode[];
  /** The schema of its error bodies (default: Error). */
  errorSchema?: string;
  security?: Json[];
}

export function errorResponse(codes: readonly ErrorCode[], schema: string): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(ERROR_STATUS[c], [...(byStatus.get(ERROR_STATUS[c]) ?? []), c]);
  const out: Record<string, Json> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const headers: Json = {};
    if (status === 503 || status === 429) headers['Retry-After'] = { schema: { type: 'integer' }, description: 'seconds' };
    if (list.includes('method_not_allowed')) headers.Allow = { schema: { type: 'string' } };
    out[String(status)] = {
      description: list.map((c) => `\`${c}\``).join(', '),
      // The error codes this operation answers with this status (the Error schema lists every code).
      'x-error-codes': list,
      headers,
      content: { [JSON_TYPE]: { schema: REF(schema) } },
    };
  }
  return out;
}

export function operation(op: Op, tag: string): Json {
  const responses: Record<string, Json> = {};
  for (const [status, [description, schema, headers]] of Object.entries(op.ok)) {
    responses[status] = { description, ...(headers === undefined ? {} : { headers }), ...(schema === null ? {} : { content: { [schema === 'EventStream' ? 'text/event-stream' : JSON_TYPE]: { schema: schema === 'EventStream' ? { type: 'string' } : REF(schema) } } }) };
  }
  Object.assign(responses, errorResponse(op.errors, op.errorSchema ?? 'Error'));
  const out: Json = { tags: [tag], summary: op.summary, responses };
  if (op.params !== undefined) out.parameters = op.params;
  if (op.body !== undefined) {
    out.requestBody = { required: op.body.required ?? true, content: { [op.body.type ?? JSON_TYPE]: { schema: op.body.schema }, ...op.body.extraTypes } };
  }
  if (op.security !== undefined) out.security = op.security;
  return out;
}

export const pathParam = (name: string, description: string): Json => ({ name, in: 'path', required: true, schema: { type: 'string' }, description });
export const queryParam = (name: string, schema: Json, description: string, required = false): Json => ({ name, in: 'query', required, schema, description });

/** The named component schemas a document lists; throws on a name that is not there. */
export function pick(schemas: Record<string, Json>, names: readonly string[]): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const n of names) {
    const s = schemas[n];
    if (s === undefined) throw new Error(`no schema named ${n}`);
    out[n] = s;
  }
  return out;
}
