/** The OpenAPI document of the delivery API (docs/api.md is the full contract). */
import type { ErrorCode } from '../runtime/errors.js';
import { JSON_TYPE, REF, operation, pathParam, pick, queryParam, type Json } from './operation.js';

const ETAG = { ETag: { schema: { type: 'string' }, description: 'strong tag; send it back in If-None-Match' } };
const IF_NONE_MATCH: Json = { name: 'If-None-Match', in: 'header', required: false, schema: { type: 'string' }, description: 'a tag of a previous answer: 304 when it is still current' };
/** `starting`: an unknown key (or content) while the server is still starting (docs/api.md, errors). */
const KEY_ERRORS: readonly ErrorCode[] = ['missing_api_key', 'invalid_api_key', 'starting'];
const BODY_ERRORS: readonly ErrorCode[] = [...KEY_ERRORS, 'unsupported_content_type', 'invalid_json', 'invalid_body', 'payload_too_large'];
const CONTENT_ID = pathParam('contentId', 'content id (caseless under the id rule, docs/api.md)');
const NOT_MODIFIED: [string, null, Json] = ['Not Modified: the If-None-Match tag names the current answer', null, ETAG];

export function deliveryDocument(schemas: Record<string, Json>): Json {
  const ctx = { schema: REF('UserContext') };
  const paths: Record<string, Json> = {
    '/api/v1/config/{contentId}/dynamic': {
      post: operation({
        summary: 'Wrapped content for a user: data, hash and meta (mapping rules applied)',
        params: [CONTENT_ID, queryParam('responseType', { type: 'string', enum: ['serialized'] }, 'serialized: data is the minified JSON text'), IF_NONE_MATCH],
        body: ctx,
        ok: { '200': ['the wrapped answer (WrappedSerialized with responseType=serialized)', 'Wrapped', ETAG], '304': NOT_MODIFIED },
        errors: [...BODY_ERRORS, 'invalid_query', 'content_not_found', 'overloaded', 'internal'],
      }, 'content'),
    },
    '/api/v1/config/{contentId}': {
      post: operation({
        summary: 'The content JSON, without mutations',
        params: [CONTENT_ID, IF_NONE_MATCH],
        body: ctx,
        ok: { '200': ['the content JSON', 'Content', ETAG], '304': NOT_MODIFIED },
        errors: [...BODY_ERRORS, 'invalid_query', 'content_not_found', 'overloaded', 'internal'],
      }, 'content'),
    },
    '/api/v1/combine': {
      post: operation({
        summary: 'Several content items in one answer, keyed by id',
        params: [
          queryParam('c', { type: 'string' }, 'a URL-encoded JSON array of 1..--max-combine-ids content ids', true),
          queryParam('dynamic', { type: 'string', enum: ['true', 'false'] }, 'true: each entry is the wrapped answer'),
          queryParam('responseType', { type: 'string', enum: ['serialized'] }, 'with dynamic=true: data as text'),
          IF_NONE_MATCH,
        ],
        body: ctx,
        ok: {
          '200': ['the items found; missing ids are named in X-Missing-Content', 'Combine', { ...ETAG, 'X-Missing-Content': { schema: { type: 'string' }, description: 'ids not found, comma-separated, each percent-encoded' } }],
          '304': NOT_MODIFIED,
        },
        errors: [...BODY_ERRORS, 'invalid_query', 'overloaded', 'internal'],
      }, 'content'),
    },
    '/api/v1/env/catalog': {
      get: operation({
        summary: "Every content id of the key's environment with its hash and mapping flag",
        params: [{ name: 'Content-Type', in: 'header', required: true, schema: { type: 'string', enum: ['application/json'] } }, IF_NONE_MATCH],
        ok: { '200': ['the catalog', 'Catalog', ETAG], '304': NOT_MODIFIED },
        errors: [...KEY_ERRORS, 'unsupported_content_type'],
      }, 'catalog'),
    },
    '/api/v1/env/events': {
      get: operation({
        summary: "The environment's change stream (server-sent events: ready, change; heartbeats)",
        params: [
          queryParam('token', { type: 'string' }, 'a stream token instead of X-Api-Key (EventSource sends no headers)'),
          queryParam('format', { type: 'string', enum: ['ofrep'] }, "ofrep: OFREP's events (message, data {\"type\":\"refetchEvaluation\"}), the URL an OFREP bulk evaluation names"),
          queryParam('lastEventId', { type: 'string' }, 'resume after this event id'),
          { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' }, description: 'resume after this event id (sent by a reconnecting EventSource)' },
        ],
        ok: { '200': ['text/event-stream: events ready and change, data {seq, changed | all, catalog, jitterMs}', 'EventStream'] },
        errors: [...KEY_ERRORS, 'invalid_stream_token', 'too_many_streams'],
        security: [{ apiKey: [] }, { streamToken: [] }],
      }, 'catalog'),
    },
    '/api/v1/env/events/token': {
      post: operation({
        summary: 'A short-lived stream token for EventSource',
        ok: { '200': ['the token and its lifetime in seconds', 'StreamToken'] },
        errors: [...KEY_ERRORS, 'unsupported_content_type'],
      }, 'catalog'),
    },
    '/ofrep/v1/evaluate/flags/{key}': {
      post: operation({
        summary: 'OpenFeature (OFREP 0.3.0): one flag, the content item `key`, evaluated for the context (docs/openfeature.md)',
        params: [pathParam('key', 'the flag key: a content id (caseless under the id rule); may hold `/` unencoded'), IF_NONE_MATCH],
        body: { schema: REF('OfrepRequest') },
        ok: { '200': ['the evaluation', 'OfrepEvaluation', ETAG], '304': NOT_MODIFIED },
        errors: [...BODY_ERRORS, 'targeting_key_missing', 'content_not_found', 'too_many_requests', 'internal'],
        errorSchema: 'OfrepError',
        security: [{ apiKey: [] }, { bearer: [] }],
      }, 'openfeature'),
    },
    '/ofrep/v1/evaluate/flags': {
      post: operation({
        summary: "OpenFeature (OFREP 0.3.0): every content item of the key's environment evaluated for the context",
        params: [
          IF_NONE_MATCH,
          queryParam('flagConfigEtag', { type: 'string' }, 'sent by OFREP providers after a change event; accepted and not needed (the answer is always current)'),
          queryParam('flagConfigLastModified', { type: 'string' }, 'as flagConfigEtag'),
        ],
        body: { schema: REF('OfrepRequest') },
        ok: { '200': ['every flag (failures per flag), and the change stream to listen to', 'OfrepBulk', ETAG], '304': NOT_MODIFIED },
        errors: [...BODY_ERRORS, 'ofrep_bulk_too_large', 'too_many_requests', 'internal'],
        errorSchema: 'OfrepError',
        security: [{ apiKey: [] }, { bearer: [] }],
      }, 'openfeature'),
    },
    '/healthz': {
      get: operation({
        summary: 'Health and the change-log sequence this process serves (no key)',
        ok: { '200': ['ok or degraded', 'Health'] },
        errors: [],
        security: [],
      }, 'health'),
    },
  };
  // Shutting down: a documented answer with the Health body, not the error envelope.
  ((paths['/healthz'] as Json).get as Json & { responses: Json }).responses['503'] = { description: 'shutting down', content: { [JSON_TYPE]: { schema: REF('Health') } } };
  return {
    openapi: '3.1.0',
    info: { title: 'rcd delivery API', version: '1', description: 'Remote configuration delivery (docs/api.md is the full contract).' },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
    tags: [{ name: 'content' }, { name: 'catalog' }, { name: 'openfeature', description: 'The OpenFeature Remote Evaluation Protocol, 0.3.0 (docs/openfeature.md)' }, { name: 'health' }],
    paths,
    components: {
      schemas: pick(schemas, [
        'Error',
        'UserContext',
        'Segment',
        'Meta',
        'Wrapped',
        'WrappedSerialized',
        'Content',
        'Combine',
        'Catalog',
        'Health',
        'StreamToken',
        'OfrepRequest',
        'OfrepEvaluation',
        'OfrepFailure',
        'OfrepBulk',
        'OfrepError',
      ]),
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
        bearer: { type: 'http', scheme: 'bearer', description: 'OFREP routes only: the API key as a bearer token' },
        streamToken: { type: 'apiKey', in: 'query', name: 'token' },
      },
    },
  };
}
