/**
 * The OpenAPI document of the admin API (docs/admin.md, docs/schedule.md), checked against the
 * route table: every route is documented, with the 403 answers its role and scope give it.
 */
import type { ErrorCode } from '../runtime/errors.js';
import { ADMIN_ROUTES } from '../admin/server/handlers.js';
import './change-schemas.js';
import { JSON_TYPE, REF, errorResponse, operation, pathParam, pick, queryParam, type Json, type Op } from './operation.js';

const ADMIN_COMMON: readonly ErrorCode[] = ['unauthorized', 'internal'];
const WRITE_ERRORS: readonly ErrorCode[] = [...ADMIN_COMMON, 'payload_too_large', 'store_busy', 'store_unavailable', 'invalid_request'];
/** Every write takes a person's comment, stored in its audit entries (src/admin/server/audit-comment.ts). */
const COMMENT_PARAM: Json = {
  name: 'X-Rcd-Comment',
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description: 'why: stored in the audit entry as detail.comment; percent-encoded UTF-8 (encodeURIComponent), at most 500 characters, no control characters (else 400 invalid_request)',
};
const ENV_PARAM = pathParam('env', 'environment id');
const ID_PARAM = pathParam('id', 'content id');
const JSON_BODY_ERRORS: readonly ErrorCode[] = ['invalid_json', 'invalid_body'];
/** What scheduling a change can be refused with: the write itself, rehearsed (docs/schedule.md). */
const REHEARSAL_ERRORS: readonly ErrorCode[] = [
  'invalid_content',
  'invalid_mapping',
  'invalid_request',
  'not_found',
  'content_not_found',
  'base_revision_changed',
  'target_changed',
  'too_many_schedules',
];
const ROLLOUT_PARAM = pathParam('rid', 'rollout id (ro_ + 20 hex)');
const SCHEDULE_PARAM = pathParam('sid', 'schedule id (sch_ + 20 hex)');

function SCHEDULE_FILTERS(acrossEnvironments: boolean): Json[] {
  return [
    ...(acrossEnvironments ? [queryParam('env', { type: 'string' }, 'comma-separated environments (within the token\'s scope)')] : []),
    queryParam('id', { type: 'string' }, acrossEnvironments ? 'only changes naming this content id (with one env)' : 'only changes naming this content id'),
    queryParam('status', { type: 'string' }, 'comma-separated: pending, paused, applied, failed, cancelled'),
    queryParam('from', { type: 'string' }, 'due at or after (RFC 3339)'),
    queryParam('to', { type: 'string' }, 'due before (RFC 3339)'),
    queryParam('rollout', { type: 'string' }, 'only the steps of this rollout'),
    queryParam('limit', { type: 'integer', minimum: 1, maximum: 1000 }, 'default 100'),
  ];
}

export function adminDocument(schemas: Record<string, Json>): Json {
  const read = (summary: string, schema: string, errors: readonly ErrorCode[] = [], params?: Json[]): Json =>
    operation({ summary, params, ok: { '200': ['OK', schema] }, errors: [...ADMIN_COMMON, ...errors] }, 'admin');
  const write = (summary: string, ok: Op['ok'], errors: readonly ErrorCode[], params?: Json[], body?: Op['body']): Json =>
    operation({ summary, params: [...(params ?? []), COMMENT_PARAM], body, ok, errors: [...new Set([...WRITE_ERRORS, ...errors])] }, 'admin');
  const PROPAGATION_HEADER = { 'rcd-propagation': { schema: { type: 'string' }, description: 'APPLIED/NODES, when routing data changed' } };
  const paths: Record<string, Json> = {
    '/admin/v1/environments': { get: read('List environments', 'EnvironmentList') },
    '/admin/v1/environments/{env}': {
      parameters: [ENV_PARAM],
      put: write('Create an environment', { '201': ['created', 'EnvironmentPut', PROPAGATION_HEADER], '200': ['already there', 'EnvironmentPut'] }, ['invalid_request']),
      delete: write('Delete an environment', { '200': ['deleted', 'EnvironmentDeleted', PROPAGATION_HEADER] }, ['not_found', 'conflict', 'invalid_query'], [queryParam('force', { type: 'string', enum: ['true', 'false'] }, 'also delete its content and keys')]),
    },
    '/admin/v1/environments/{env}/keys': {
      parameters: [ENV_PARAM],
      post: write('Create an API key (shown once)', { '201': ['created', 'KeyCreated', PROPAGATION_HEADER] }, [...JSON_BODY_ERRORS, 'not_found', 'conflict'], undefined, { schema: REF('KeyCreateBody'), required: false }),
      get: read('List API keys (never the keys)', 'KeyList', ['not_found']),
    },
    '/admin/v1/environments/{env}/keys/{keyId}': {
      parameters: [ENV_PARAM, pathParam('keyId', 'key id (key_ + 16 hex)')],
      delete: write('Revoke an API key', { '200': ['revoked', 'KeyRevoked', PROPAGATION_HEADER] }, ['not_found']),
    },
    '/admin/v1/environments/{env}/content': {
      parameters: [ENV_PARAM],
      get: read('List content', 'ContentList', ['not_found']),
    },
    '/admin/v1/environments/{env}/content/{id}': {
      parameters: [ENV_PARAM, ID_PARAM],
      put: write(
        'Create content or add a revision (the body is the JSONC text)',
        { '200': ['stored (changed false: the newest revision already had this text)', 'ContentPut', PROPAGATION_HEADER] },
        ['invalid_content', 'invalid_query', 'invalid_request', 'not_found'],
        [queryParam('minAppVersion', { type: 'string' }, 'X.Y.Z')],
        { schema: { type: 'string' }, type: 'text/plain', extraTypes: { [JSON_TYPE]: { schema: {} } } },
      ),
      get: read('Content with every revision and the mapping', 'ContentDetail', ['not_found', 'content_not_found']),
      delete: write('Delete content', { '200': ['deleted', 'ContentDeleted', PROPAGATION_HEADER] }, ['not_found', 'content_not_found']),
    },
    '/admin/v1/environments/{env}/content/{id}/rollback': {
      parameters: [ENV_PARAM, ID_PARAM],
      post: write('Copy revision N as the newest', { '200': ['rolled back', 'ContentPut', PROPAGATION_HEADER] }, ['invalid_query', 'not_found', 'content_not_found'], [queryParam('to', { type: 'integer', minimum: 1 }, 'revision number', true)]),
    },
    '/admin/v1/environments/{env}/content/{id}/mapping': {
      parameters: [ENV_PARAM, ID_PARAM],
      put: write('Set the mapping', { '200': ['stored', 'MappingPut', PROPAGATION_HEADER] }, [...JSON_BODY_ERRORS, 'invalid_mapping', 'not_found', 'content_not_found'], undefined, { schema: REF('Mapping') }),
      delete: write('Remove the mapping', { '200': ['removed', 'MappingDeleted', PROPAGATION_HEADER] }, ['not_found', 'content_not_found']),
    },
    '/admin/v1/environments/{env}/content/{id}/preview': {
      parameters: [ENV_PARAM, ID_PARAM],
      post: operation({
        summary: 'What the delivery API answers a user context, now or as the item will be at a time (a read: nothing written or audited)',
        params: [queryParam('at', { type: 'string' }, 'RFC 3339 time with an offset: the item with its pending scheduled changes due by then applied (docs/schedule.md)')],
        body: { schema: REF('PreviewContext') },
        ok: { '200': ['the answer and the rules as this user meets them (with at=, the changes folded in and the answer now)', 'PreviewAt'] },
        errors: [...ADMIN_COMMON, 'invalid_json', 'invalid_body', 'invalid_query', 'not_found', 'content_not_found', 'preview_too_large', 'store_unavailable'],
      }, 'admin'),
    },
    '/admin/v1/environments/{env}/content/{id}/kill': {
      parameters: [ENV_PARAM, ID_PARAM],
      post: write(
        'The kill switch: disable a rule (or every rule) of the mapping and cancel the item\'s scheduled changes, at once',
        { '200': ['disabled', 'Killed', PROPAGATION_HEADER] },
        [...JSON_BODY_ERRORS, 'not_found', 'content_not_found', 'target_changed'],
        undefined,
        { schema: REF('KillBody'), required: false },
      ),
    },
    '/admin/v1/schedules': {
      get: read('Scheduled changes of every environment in the token\'s scope, oldest due first', 'ScheduleList', ['invalid_query'], SCHEDULE_FILTERS(true)),
    },
    '/admin/v1/environments/{env}/schedules': {
      parameters: [ENV_PARAM],
      post: write('Schedule a change (checked now as the write itself would be)', { '201': ['scheduled', 'Schedule'] }, [...JSON_BODY_ERRORS, ...REHEARSAL_ERRORS], undefined, { schema: REF('ScheduleBody') }),
      get: read('Scheduled changes of the environment, oldest due first', 'ScheduleList', ['invalid_query'], SCHEDULE_FILTERS(false)),
    },
    // Before {sid}: a literal segment is matched before a parameter.
    '/admin/v1/environments/{env}/schedules/check': {
      parameters: [ENV_PARAM],
      post: operation({
        summary: 'Which pending changes a write would make fail later (a dry run: nothing written or audited)',
        body: { schema: REF('ConflictCheckBody') },
        ok: { '200': ['the conflicts', 'ConflictCheck'] },
        errors: [...ADMIN_COMMON, ...JSON_BODY_ERRORS, 'invalid_content', 'invalid_request', 'not_found', 'conflict', 'preview_too_large', 'store_unavailable'],
      }, 'admin'),
    },
    '/admin/v1/environments/{env}/schedules/{sid}': {
      parameters: [ENV_PARAM, SCHEDULE_PARAM],
      get: read('One scheduled change, with its texts and mappings', 'Schedule', ['not_found']),
      patch: write('Move a pending or paused change (checked again at its new time)', { '200': ['moved', 'Schedule'] }, [...JSON_BODY_ERRORS, ...REHEARSAL_ERRORS, 'conflict', 'rollout_step_order'], undefined, { schema: REF('ScheduleMove') }),
      delete: write('Cancel a pending or paused change', { '200': ['cancelled', 'Schedule'] }, ['not_found', 'conflict']),
    },
    '/admin/v1/environments/{env}/schedules/{sid}/writes': {
      parameters: [ENV_PARAM, SCHEDULE_PARAM],
      get: read('What a change writes, item by item: now, just before its time and after it (a read in memory: nothing written)', 'ScheduleWrites', ['not_found', 'preview_too_large', 'store_unavailable']),
    },
    '/admin/v1/environments/{env}/schedules/{sid}/ops': {
      parameters: [ENV_PARAM, SCHEDULE_PARAM],
      put: write('Replace the ops (and note) of a pending or paused change, checked as when it is scheduled', { '200': ['edited', 'Schedule'] }, [...JSON_BODY_ERRORS, ...REHEARSAL_ERRORS, 'conflict'], undefined, { schema: REF('ScheduleEdit') }),
    },
    '/admin/v1/environments/{env}/rollouts': {
      parameters: [ENV_PARAM],
      post: write('Create a staged rollout (its steps are scheduled changes)', { '201': ['created', 'Rollout'] }, [...JSON_BODY_ERRORS, ...REHEARSAL_ERRORS, 'rollout_shrinks'], undefined, { schema: REF('RolloutBody') }),
      get: read('Rollouts of the environment, newest first', 'RolloutList', ['invalid_query'], [
        queryParam('id', { type: 'string' }, 'only the rollouts of this content id'),
        queryParam('limit', { type: 'integer', minimum: 1, maximum: 1000 }, 'default 100'),
      ]),
    },
    '/admin/v1/environments/{env}/rollouts/{rid}': {
      parameters: [ENV_PARAM, ROLLOUT_PARAM],
      get: read('One rollout and its steps', 'Rollout', ['not_found']),
    },
    '/admin/v1/environments/{env}/rollouts/{rid}/resume': {
      parameters: [ENV_PARAM, ROLLOUT_PARAM],
      post: write(
        'Make its held steps pending again; without a body a step whose time passed while paused applies at once, "overdue" says otherwise',
        { '200': ['done', 'Rollout', PROPAGATION_HEADER] },
        [...JSON_BODY_ERRORS, 'not_found', 'conflict', 'rollout_step_overdue', 'content_not_found', 'target_changed', 'invalid_mapping'],
        undefined,
        { schema: REF('RolloutResume'), required: false },
      ),
    },
    ...Object.fromEntries(
      (
        [
          ['pause', 'Hold its pending steps'],
          ['advance', 'Apply its next step now'],
          ['rollback', 'Cancel its open steps and restore the rule as it was before the rollout, now'],
        ] as const
      ).map(([action, summary]) => [
        `/admin/v1/environments/{env}/rollouts/{rid}/${action}`,
        {
          parameters: [ENV_PARAM, ROLLOUT_PARAM],
          post: write(summary, { '200': ['done', 'Rollout', PROPAGATION_HEADER] }, ['not_found', 'conflict', ...(action === 'rollback' ? (['target_changed', 'invalid_mapping'] as const) : [])]),
        },
      ]),
    ),
    '/admin/v1/environments/{env}/experiments': {
      parameters: [ENV_PARAM],
      get: read('The experiments of the environment\'s current mappings, each with its players per variant and the sample ratio check', 'ExperimentList', ['not_found', 'store_unavailable']),
    },
    '/admin/v1/environments/{env}/experiments/{name}': {
      parameters: [ENV_PARAM, pathParam('name', 'experiment name (the rule\'s experiment, else ITEM:SEGMENT)')],
      get: read('One experiment, with its players per hour', 'Experiment', ['not_found', 'experiment_not_found', 'store_unavailable']),
    },
    '/admin/v1/environments/{env}/sync': {
      parameters: [ENV_PARAM],
      post: write('Copy newest revisions and mappings to another environment', { '200': ['report', 'SyncReport', PROPAGATION_HEADER] }, [...JSON_BODY_ERRORS, 'not_found', 'content_not_found'], undefined, { schema: REF('SyncBody') }),
    },
    '/admin/v1/import': {
      post: write('Import a bundle (validated whole first)', { '200': ['report', 'ImportReport', PROPAGATION_HEADER] }, ['invalid_json', 'invalid_bundle'], undefined, { schema: REF('Bundle') }),
    },
    '/admin/v1/export': { get: read('Export everything but API keys', 'Bundle') },
    '/admin/v1/webhooks': {
      post: write('Register a webhook (secret shown once)', { '201': ['registered', 'WebhookCreated'] }, [...JSON_BODY_ERRORS, 'webhook_target_refused'], undefined, { schema: REF('WebhookBody') }),
      get: read('List webhooks (never the secrets)', 'WebhookList'),
    },
    '/admin/v1/webhooks/dead-letters': {
      get: read('Dead-lettered webhook deliveries, newest first, and the pending count', 'DeadLetters', ['invalid_query'], [
        queryParam('limit', { type: 'integer', minimum: 1, maximum: 1000 }, 'default 100'),
      ]),
    },
    '/admin/v1/webhooks/{id}': {
      parameters: [pathParam('id', 'webhook id')],
      delete: write('Delete a webhook', { '200': ['deleted', 'WebhookDeleted'] }, ['not_found']),
    },
    '/admin/v1/tokens': {
      post: write('Create a named admin token (shown once)', { '201': ['created', 'TokenCreated'] }, [...JSON_BODY_ERRORS, 'conflict'], undefined, { schema: REF('TokenBody') }),
      get: read('List named admin tokens (never the tokens)', 'TokenList'),
    },
    '/admin/v1/tokens/{name}': {
      parameters: [pathParam('name', 'token name')],
      delete: write('Revoke a named admin token', { '200': ['revoked', 'TokenRevoked'] }, ['not_found']),
    },
    '/admin/v1/events': {
      get: operation({
        summary: 'Live events (server-sent events): `ready` first, then one `change` event per audit entry as it is written (its id the entry\'s id, its data the entry as GET /admin/v1/audit lists it), `reset` when more changed than one read holds (re-read everything), `closing` at shutdown, `: heartbeat` comments. Filtered to the token\'s scope; entries of no environment only for a token of every environment',
        params: [queryParam('env', { type: 'string' }, 'comma-separated: only these environments (entries of no environment still come)')],
        ok: { '200': ['the stream (text/event-stream), open until the client or the server ends it', 'EventStream'] },
        errors: [...ADMIN_COMMON, 'invalid_query', 'too_many_streams'],
      }, 'admin'),
    },
    '/admin/v1/audit': {
      get: read('The audit log, newest first', 'AuditList', ['invalid_query'], [
        queryParam('limit', { type: 'integer', minimum: 1, maximum: 1000 }, 'default 100'),
        queryParam('before', { type: 'integer' }, 'entries older than this id'),
      ]),
    },
  };
  addAccessErrors(paths);
  return {
    openapi: '3.1.0',
    info: {
      title: 'rcd admin API',
      version: '1',
      description: 'Management of environments, keys, content, mappings, sync, bundles, webhooks, the audit log, the readout of experiments (docs/admin.md), and scheduled changes, rollouts and the kill switch (docs/schedule.md).',
    },
    servers: [{ url: '/' }],
    security: [{ adminToken: [] }],
    tags: [{ name: 'admin' }],
    paths,
    components: {
      schemas: pick(schemas, [
        'Error', 'Propagation', 'EnvironmentList', 'EnvironmentPut', 'EnvironmentDeleted', 'KeyCreateBody', 'KeyCreated', 'KeyList', 'KeyRevoked',
        'ContentList', 'ContentPut', 'ContentDetail', 'ContentDeleted', 'Mapping', 'MappingPut', 'MappingDeleted', 'SyncBody', 'SyncReport',
        'Bundle', 'ImportReport', 'WebhookBody', 'WebhookCreated', 'WebhookList', 'WebhookDeleted', 'DeadLetters', 'AuditList',
        'TokenBody', 'TokenCreated', 'TokenList', 'TokenRevoked', 'Preview', 'PreviewContext', 'UserContext', 'Segment',
        'ChangeOp', 'ScheduleBody', 'ScheduleMove', 'Schedule', 'ScheduleList', 'ChangeRef', 'PreviewAt', 'ScheduleWrites', 'ScheduleEdit', 'ConflictCheckBody', 'ConflictCheck', 'RolloutBody', 'RolloutResume', 'Rollout', 'RolloutList', 'KillBody', 'Killed',
        'ExperimentList', 'Experiment',
      ]),
      securitySchemes: { adminToken: { type: 'http', scheme: 'bearer' } },
    },
  };
}

/**
 * The 403 answers of each admin operation, from the route table itself (its least role and its
 * scope, src/admin/server/access.ts): forbidden_role unless any token may call it, forbidden_scope
 * unless it answers within the caller's scope. Every route must be documented.
 */
function addAccessErrors(paths: Record<string, Json>): void {
  for (const route of ADMIN_ROUTES) {
    const template = '/admin/v1/' + route.pattern.replace(/:([A-Za-z]+)/g, '{$1}');
    const op = (paths[template] as Record<string, Json> | undefined)?.[route.method.toLowerCase()] as { responses: Record<string, Json> } | undefined;
    if (op === undefined) throw new Error(`admin route ${route.method} ${route.pattern} is not documented`);
    const codes: ErrorCode[] = [];
    if (route.role !== 'read') codes.push('forbidden_role');
    if (route.scope !== 'own') codes.push('forbidden_scope');
    if (codes.length > 0) Object.assign(op.responses, errorResponse(codes, 'Error'));
  }
}
