/**
 * The zod schemas of what the delivery and admin APIs take and answer: the one source the OpenAPI
 * documents (documents.ts) are generated from, and the test oracle of the answers. Where the server
 * validates input itself (bundles in the store), the schema it already keeps is reused here, not
 * restated; the user context's schema is stated here, beside the hot path's own check.
 *
 * Answers are strict objects (a member the document does not name fails the contract test); the
 * documents are generated in zod's input mode, so request bodies keep their own rule (the user
 * context is a plain object schema: unknown members are ignored, as the server does).
 */
import { z } from 'zod';
import { APP_VERSION_PATTERN } from '../shared/app-version.js';
import { MAX_JSON_DEPTH, exceedsDepth } from '../shared/json-limits.js';
import { WEBHOOK_EVENTS } from '../admin/server/state.js';
import { TOKEN_ROLES } from '../admin/server/access.js';
import { ERROR_STATUS, type ErrorCode } from '../runtime/errors.js';
import { BundleSchema } from '../store/bundle/bundle.js';
import { ENV_ID } from '../store/ids.js';
import { MAX_OPS } from '../store/schedule/changes.js';
import { ChangeOpSchema } from '../store/schedule/change-op.js';
import { MAX_ROLLOUT_STEPS, SCHEDULE_STATUSES } from '../store/schedule/rows.js';

/** Every schema named in the documents' components, by component name. */
export const registry = z.registry<{ id: string }>();

export function named<T extends z.ZodType>(id: string, schema: T, description?: string): T {
  const described = description === undefined ? schema : schema.describe(description);
  registry.add(described, { id });
  return described;
}

export const HASH = z.string().regex(/^[0-9a-f]{32}$/);
export const TIME = z.string().describe('ISO-8601 time');

export const ErrorEnvelope = named(
  'Error',
  z.strictObject({
    error: z.strictObject({
      status: z.number().int(),
      code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
      message: z.string(),
      details: z.unknown().optional(),
    }),
  }),
  'Every error: a stable code (match on it), the status, a message for people',
);

// ---- delivery ----

/**
 * The user context as a schema: the readable statement of what src/delivery/context.ts
 * (parseUserContext, the hot path's own check) accepts; a unit test checks both agree.
 */
export const userContextSchema = z.object({
  u: z.string().optional(),
  // The delivery's MAX_P_DEPTH (src/delivery/context.ts) is this limit.
  p: z
    .record(z.string(), z.unknown())
    .refine((p) => !exceedsDepth(p, MAX_JSON_DEPTH), `p nests at most ${MAX_JSON_DEPTH} levels of arrays and objects (p itself is the first)`)
    .optional(),
  v: z.string().regex(APP_VERSION_PATTERN).optional(),
});

export const UserContext = named('UserContext', userContextSchema, 'The request body of content requests');
/** A preview's body (an admin body: no member the user context does not name). */
export const PreviewContext = named('PreviewContext', z.strictObject(userContextSchema.shape), 'A user context (UserContext) with no other member');

export const Segment = named(
  'Segment',
  z.strictObject({ n: z.string(), v: z.string().nullable(), i: z.string().optional() }),
  'One applied mapping rule: segment name, variant (null for a plain patch), info',
);

export const Meta = named('Meta', z.strictObject({ uid: z.number().int().min(0), mod: z.number().int().min(0).max(999), seg: z.array(Segment) }));

export const Wrapped = named('Wrapped', z.strictObject({ data: z.unknown(), hash: HASH, meta: Meta }), 'A wrapped answer (data is the content JSON)');

export const WrappedSerialized = named(
  'WrappedSerialized',
  z.strictObject({ data: z.string(), hash: HASH, meta: Meta }),
  'responseType=serialized: data is the minified JSON text',
);

export const Content = named('Content', z.unknown(), 'The content JSON, minified, without mutations');

export const Combine = named(
  'Combine',
  z.record(z.string(), z.unknown()),
  'Keyed by the ids as requested: each entry is what the single request would answer (Wrapped or WrappedSerialized with dynamic=true)',
);

export const Catalog = named(
  'Catalog',
  z.strictObject({ catalog: z.record(z.string(), z.strictObject({ h: HASH, d: z.boolean() })) }),
  'Every content id of the key\'s environment: h, the newest revision\'s hash; d, whether it has a mapping with rules',
);

export const Health = named(
  'Health',
  z.strictObject({
    status: z.enum(['ok', 'degraded', 'shutting_down']),
    seq: z.number().int().optional(),
    store: z.literal('unavailable').optional(),
    loop: z.number().int().min(0).optional().describe('Which of the process\'s delivery loops (--http-threads) answered'),
  }),
);

export const StreamToken = named('StreamToken', z.strictObject({ token: z.string(), expiresIn: z.number().int() }));

// ---- OpenFeature (OFREP 0.3.0, docs/openfeature.md) ----

/** The evaluation request: src/delivery/ofrep/context.ts is the check the server runs. */
export const OfrepRequest = named(
  'OfrepRequest',
  z.object({
    context: z
      .looseObject({
        targetingKey: z.string().optional().describe('rcd\'s u: the A/B group follows it'),
        appVersion: z.string().regex(APP_VERSION_PATTERN).optional().describe('rcd\'s v (X.Y.Z)'),
      })
      .optional()
      .describe('Every other attribute is rcd\'s p'),
  }),
  'An OFREP evaluation request: the evaluation context',
);

const OFREP_ERROR_CODE = z.enum(['FLAG_NOT_FOUND', 'PARSE_ERROR', 'TARGETING_KEY_MISSING', 'INVALID_CONTEXT', 'GENERAL']);

export const OfrepEvaluation = named(
  'OfrepEvaluation',
  z.strictObject({
    key: z.string().describe('the content id as created'),
    value: z.unknown().describe('byte for byte the data of the wrapped answer (endpoint 1) for the same context'),
    reason: z.enum(['STATIC', 'TARGETING_MATCH', 'SPLIT']),
    variant: z.string().describe('"default", or the applied rules in rule order: segment or segment:variant, joined by ","'),
    metadata: z.strictObject({ hash: HASH, seg: z.string().describe('meta.seg as JSON text'), uid: z.number().int().min(0), mod: z.number().int().min(0).max(999) }),
  }),
  'One flag evaluated',
);

export const OfrepFailure = named(
  'OfrepFailure',
  z.strictObject({ key: z.string(), errorCode: OFREP_ERROR_CODE, errorDetails: z.string() }),
  'One flag of a bulk evaluation that could not be evaluated',
);

export const OfrepBulk = named(
  'OfrepBulk',
  z.strictObject({
    flags: z.array(z.union([OfrepEvaluation, OfrepFailure])).describe('every content item of the key\'s environment, ordered by the caseless id'),
    eventStreams: z
      .array(z.strictObject({ type: z.literal('sse'), endpoint: z.strictObject({ requestUri: z.string().describe('/api/v1/env/events?format=ofrep&token=…') }) }))
      .optional()
      .describe('absent with --max-streams 0'),
  }),
  'Every flag of the environment evaluated for one context',
);

export const OfrepError = named(
  'OfrepError',
  z.strictObject({
    key: z.string().optional().describe('single-flag evaluations: the key as sent'),
    errorCode: OFREP_ERROR_CODE,
    errorDetails: z.string(),
    error: ErrorEnvelope.shape.error,
  }),
  'An OFREP error answer: OFREP\'s errorCode beside rcd\'s stable code',
);

// ---- admin ----

const Propagation = named(
  'Propagation',
  z.strictObject({ seq: z.number().int(), nodes: z.number().int(), applied: z.number().int(), missed: z.array(z.string()) }),
  'How far a write that changed routing data reached',
);

/** An admin answer to a write: its members, plus `propagation` when routing data changed. */
function written<T extends z.ZodRawShape>(shape: T) {
  return z.strictObject({ ...shape, propagation: Propagation.optional() });
}

export const EnvironmentList = named(
  'EnvironmentList',
  z.strictObject({ environments: z.array(z.strictObject({ id: z.string(), createdAt: TIME, contentCount: z.number().int(), keyCount: z.number().int() })) }),
);
export const EnvironmentPut = named('EnvironmentPut', written({ id: z.string(), created: z.boolean() }));
export const EnvironmentDeleted = named('EnvironmentDeleted', written({ id: z.string(), deleted: z.literal(true), contentDeleted: z.number().int() }));

// Admin request bodies: the handlers validate them by hand (src/admin/server/handlers.ts) and refuse
// members they do not know (400 invalid_body), so these are strict objects (additionalProperties:
// false); test/e2e/openapi.test.ts checks that the server and these schemas accept and refuse the
// same bodies.
export const KeyCreateBody = named('KeyCreateBody', z.strictObject({ key: z.string().regex(/^[!-~]{8,256}$/).optional() }), 'Optional: a key you chose (8-256 visible ASCII)');
export const KeyCreated = named('KeyCreated', written({ id: z.string(), key: z.string() }), 'The only time the key is shown');
export const KeyList = named(
  'KeyList',
  z.strictObject({ keys: z.array(z.strictObject({ id: z.string(), createdAt: TIME, lastUsedAt: TIME.nullable(), revokedAt: TIME.nullable() })) }),
);
export const KeyRevoked = named('KeyRevoked', written({ id: z.string(), revoked: z.literal(true) }));

export const ContentList = named(
  'ContentList',
  z.strictObject({ content: z.array(z.strictObject({ id: z.string(), hash: HASH, revisionCount: z.number().int(), hasMapping: z.boolean(), updatedAt: TIME })) }),
);
export const ContentPut = named('ContentPut', written({ id: z.string(), hash: HASH, revision: z.number().int(), changed: z.boolean() }));
export const ContentDetail = named(
  'ContentDetail',
  z.strictObject({
    id: z.string(),
    envId: z.string(),
    revisions: z.array(z.strictObject({ revId: z.number().int(), number: z.number().int(), hash: HASH, minAppVersion: z.string().nullable(), createdAt: TIME, text: z.string() })),
    mapping: z.unknown(),
    createdAt: TIME,
    updatedAt: TIME,
  }),
);
export const ContentDeleted = named('ContentDeleted', written({ id: z.string(), deleted: z.literal(true) }));

export const Mapping = named(
  'Mapping',
  z.strictObject({ rules: z.array(z.record(z.string(), z.unknown())) }),
  'A mapping: rules of segment, when, appVersion, info, disabled and patch (with mod) or variants (with experiment) (docs/api.md, "Dynamic mappings"); validated by the server',
);
export const MappingPut = named('MappingPut', written({ id: z.string(), mappingId: z.number().int(), ruleCount: z.number().int() }));
export const MappingDeleted = named('MappingDeleted', written({ id: z.string(), mappingDeleted: z.literal(true) }));

export const SyncBody = named(
  'SyncBody',
  z.strictObject({ to: z.string().min(1), ids: z.array(z.string().min(1)).nullable().optional(), dryRun: z.boolean().optional() }),
  'ids absent or null: all content; dryRun: what it would do, nothing written',
);
export const SyncReport = named(
  'SyncReport',
  written({ from: z.string(), to: z.string(), items: z.array(z.strictObject({ id: z.string(), action: z.enum(['created', 'updated', 'unchanged']), hash: HASH })) }),
);

export const Bundle = named('Bundle', BundleSchema, 'A bundle (docs/api.md, "Bundles")');
export const ImportReport = named(
  'ImportReport',
  written({
    environmentsCreated: z.number().int(),
    keysAdded: z.number().int(),
    revisionsAdded: z.number().int(),
    mappingsChanged: z.number().int(),
    schedulesAdded: z.number().int(),
    rolloutsAdded: z.number().int(),
  }),
);

const WebhookEvent = z.enum(WEBHOOK_EVENTS);
/** `whsec_` + base64 (Standard Webhooks), or any other text used as the key's UTF-8 bytes. */
const WEBHOOK_SECRET = /^(?:whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)|(?!whsec_)[\s\S]+)$/;
/** A webhook URL holds no user or password: it is listed and audited (src/admin/server/webhook-target.ts). */
function withoutCredentials(url: string): boolean {
  if (!URL.canParse(url)) return true; // not a URL: z.url says so
  const parsed = new URL(url);
  return parsed.username === '' && parsed.password === '';
}

export const WebhookBody = named(
  'WebhookBody',
  z.strictObject({ url: z.url({ protocol: /^https?$/ }).refine(withoutCredentials, 'no credentials (user:password@)'), events: z.array(WebhookEvent).min(1), secret: z.string().min(1).max(512).regex(WEBHOOK_SECRET).optional() }),
);
const webhookShape = { id: z.string(), url: z.string(), events: z.array(WebhookEvent), createdAt: TIME };
export const WebhookCreated = named('WebhookCreated', written({ ...webhookShape, secret: z.string() }), 'The only time the secret is shown');
export const WebhookList = named('WebhookList', z.strictObject({ webhooks: z.array(z.strictObject(webhookShape)) }));
export const WebhookDeleted = named('WebhookDeleted', written({ id: z.string(), deleted: z.literal(true) }));
export const DeadLetters = named(
  'DeadLetters',
  z.strictObject({
    pending: z.number().int().min(0),
    dead: z.number().int().min(0),
    deadLetters: z.array(
      z.strictObject({
        id: z.string().regex(/^msg_[0-9a-f]{32}$/),
        hookId: z.string(),
        event: WebhookEvent,
        payload: z.unknown(),
        attempts: z.number().int().min(0),
        lastError: z.string().nullable(),
        createdAt: TIME,
        deadAt: TIME,
      }),
    ),
  }),
  'Webhook deliveries that failed every attempt (newest first), and how many are still pending (docs/admin.md, "Webhooks")',
);

export const Preview = named(
  'Preview',
  z.strictObject({
    answerText: z.string(),
    answer: z.unknown(),
    uid: z.number().int().min(0),
    mod: z.number().int().min(0).max(999),
    revision: z.number().int(),
    hash: HASH,
    seg: z.array(Segment),
    rules: z.array(z.strictObject({ index: z.number().int(), segment: z.string(), applied: z.boolean(), variant: z.string().nullable(), disabled: z.boolean() })),
  }),
  'What the delivery API answers this user context right now (docs/admin.md, "Preview")',
);

const TokenRoleSchema = z.enum(TOKEN_ROLES);
const TokenScopeSchema = z.union([z.literal('*'), z.array(z.string().regex(ENV_ID)).min(1)]);
export const TokenBody = named(
  'TokenBody',
  z.strictObject({ name: z.string().regex(/^[A-Za-z0-9_.@:-]{1,64}$/), role: TokenRoleSchema, environments: TokenScopeSchema }),
  'A named admin token: role read, editor or admin; environments "*" (all) or a list (docs/admin.md, "Admin tokens")',
);
const tokenShape = {
  id: z.string(), name: z.string(), role: TokenRoleSchema, environments: TokenScopeSchema, createdAt: TIME, createdBy: z.string(), revokedAt: TIME.nullable(),
};
export const TokenCreated = named('TokenCreated', written({ ...tokenShape, token: z.string() }), 'The only time the token is shown: the store keeps its SHA-256 digest');
export const TokenList = named('TokenList', z.strictObject({ tokens: z.array(z.strictObject(tokenShape)) }));
export const TokenRevoked = named('TokenRevoked', written({ id: z.string(), name: z.string(), revoked: z.literal(true) }));

export const AuditList = named(
  'AuditList',
  z.strictObject({
    entries: z.array(
      z.strictObject({ id: z.number().int(), at: TIME, actor: z.string(), tokenId: z.string(), action: z.string(), env: z.string().nullable(), target: z.string().nullable(), detail: z.unknown() }),
    ),
  }),
);

// ---- scheduled changes, rollouts, the kill switch (docs/schedule.md) ----

export const INSTANT = z.string().describe('RFC 3339 time with an offset, e.g. 2026-10-31T00:00:00Z');
export const SCHEDULE_ERROR = z.strictObject({ code: z.string(), message: z.string() }).nullable();

export const ChangeOp = named('ChangeOp', ChangeOpSchema, 'One admin write of a scheduled change (docs/schedule.md, "Ops")');
export const ScheduleBody = named(
  'ScheduleBody',
  z.strictObject({ at: INSTANT, ops: z.array(ChangeOp).min(1).max(MAX_OPS), note: z.string().max(1000).optional() }),
  'A change set and the time it takes effect',
);
export const ScheduleMove = named('ScheduleMove', z.strictObject({ at: INSTANT }), 'Only the time moves: a change\'s ops are not edited');
export const scheduleShape = {
  id: z.string().regex(/^sch_[0-9a-f]{20}$/),
  env: z.string(),
  at: TIME,
  status: z.enum(SCHEDULE_STATUSES),
  items: z.array(z.string()),
  allItems: z.boolean().describe('it holds a sync of every item (which names no id)'),
  into: z.array(z.string()).describe('the environments its syncs write into (besides its own): moving or cancelling it needs them in scope too'),
  ops: z.array(z.record(z.string(), z.unknown())).describe('In a listing, content texts and mappings are left out (bytes says how big)'),
  note: z.string(),
  rollout: z.strictObject({ id: z.string(), step: z.number().int().nullable() }).nullable(),
  createdAt: TIME,
  createdBy: z.string(),
  tokenId: z.string(),
  settledAt: TIME.nullable(),
  lateMs: z.number().int().nullable(),
  error: SCHEDULE_ERROR,
  cancelReason: z.string().nullable(),
  results: z.unknown().nullable(),
};
export const Schedule = named('Schedule', written(scheduleShape), 'A scheduled change');
export const ScheduleList = named('ScheduleList', z.strictObject({ schedules: z.array(z.strictObject(scheduleShape)) }));
export const RolloutBody = named(
  'RolloutBody',
  z.strictObject({
    id: z.string().min(1),
    rule: z.number().int().min(0),
    variant: z.string().min(1).nullable().optional(),
    start: z.number().int().min(0).max(999).nullable().optional(),
    steps: z.array(z.strictObject({ percent: z.number(), at: INSTANT })).min(1).max(MAX_ROLLOUT_STEPS),
    note: z.string().max(1000).optional(),
  }),
  'A staged rollout: each step widens the rule\'s (or the variant\'s) mod range from start',
);
export const RolloutResume = named(
  'RolloutResume',
  z.strictObject({
    overdue: z.enum(['apply', 'refuse', 'skip', 'reschedule']).optional().describe('held steps whose time passed while paused: apply at once (default), refuse (409 rollout_step_overdue, naming them), skip (cancel them), reschedule (the first held step at `at`, later ones moved by as much)'),
    at: INSTANT.optional().describe('with reschedule: the new time of the first held step'),
  }),
  'What a resume does with steps whose time passed while the rollout was paused',
);
const rolloutShape = {
  id: z.string().regex(/^ro_[0-9a-f]{20}$/),
  env: z.string(),
  contentId: z.string(),
  rule: z.number().int(),
  segment: z.string(),
  variant: z.string().nullable(),
  start: z.number().int(),
  status: z.enum(['active', 'paused', 'completed', 'rolled_back', 'cancelled']),
  killed: z.boolean().describe('the kill switch stopped it, or switched its rule off after its last step'),
  current: z
    .strictObject({ disabled: z.boolean(), mod: z.tuple([z.number().int(), z.number().int()]).nullable(), percent: z.number().describe('the share of players it serves now: 0 when disabled') })
    .nullable()
    .describe('the rule (or variant) in the item\'s mapping now; null when the item, its mapping or the rule is gone'),
  before: z.strictObject({ disabled: z.boolean(), mod: z.tuple([z.number().int(), z.number().int()]).nullable() }),
  note: z.string(),
  createdAt: TIME,
  createdBy: z.string(),
  steps: z.array(
    z.strictObject({
      percent: z.number(),
      at: TIME,
      mod: z.tuple([z.number().int(), z.number().int()]),
      scheduleId: z.string(),
      status: z.enum(SCHEDULE_STATUSES),
      dueAt: TIME,
      settledAt: TIME.nullable(),
      error: SCHEDULE_ERROR,
    }),
  ),
};
export const Rollout = named('Rollout', written({ ...rolloutShape, applied: z.record(z.string(), z.unknown()).nullable().optional().describe('advance: the step it applied') }), 'A staged rollout and its steps');
export const RolloutList = named('RolloutList', z.strictObject({ rollouts: z.array(z.strictObject(rolloutShape)) }));
export const KillBody = named('KillBody', z.strictObject({ rule: z.number().int().min(0).optional(), segment: z.string().min(1).optional() }), 'Without rule: every rule of the mapping');
export const Killed = named('Killed', written({ id: z.string(), rule: z.number().int().nullable(), mappingId: z.number().int(), ruleCount: z.number().int(), cancelled: z.array(z.string()) }));

// ---- the readout of experiments (docs/admin.md, "Experiments") ----

const experimentShape = {
  name: z.string(),
  item: z.string().describe('the first item (id order) whose mapping runs it'),
  items: z.array(z.string()),
  segment: z.string(),
  disabled: z.boolean().describe('every rule of the experiment is disabled'),
  variants: z.array(
    z.strictObject({
      name: z.string(),
      share: z.number().min(0).max(1).describe('the mod range\'s size / 1000; 0 for a variant with players that the mapping no longer has'),
      players: z.number().int().min(0),
      days: z.array(z.strictObject({ day: z.string().describe('UTC day, YYYY-MM-DD'), players: z.number().int().min(0) })),
    }),
  ),
  players: z.number().int().min(0),
  moved: z.number().int().min(0).describe('players later answered with another variant (their first one is kept)'),
  srm: z.strictObject({ chiSquare: z.number().min(0), pValue: z.number().min(0).max(1), mismatch: z.boolean() }).nullable().describe('null below two variants with a share, or without players'),
  firstExposure: TIME.nullable(),
  lastExposure: TIME.nullable().describe('the newest first exposure'),
};
export const ExperimentList = named(
  'ExperimentList',
  z.strictObject({ recording: z.boolean().describe('false: the server runs without --exposures (no players)'), experiments: z.array(z.strictObject(experimentShape)) }),
  'The experiments of the environment\'s current mappings, in name order',
);
export const Experiment = named(
  'Experiment',
  z.strictObject({ ...experimentShape, hours: z.array(z.strictObject({ hour: TIME, variants: z.record(z.string(), z.number().int().min(0)) })) }),
  'One experiment, with its players first exposed per hour and variant (oldest hour first)',
);
