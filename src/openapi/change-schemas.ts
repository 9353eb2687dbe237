/**
 * The schemas of reading and editing what scheduled changes write (docs/schedule.md, "What a
 * change writes", "Conflicts"): a change's writes item by item, the edit of its ops, the conflict
 * check of a write, and the preview at a time with the changes it folded in. Registered with the
 * other named schemas (schemas.ts), which the documents are generated from.
 */
import { z } from 'zod';
import { MAX_OPS } from '../store/schedule/changes.js';
import { ChangeOp, HASH, INSTANT, Preview, SCHEDULE_ERROR, TIME, named, scheduleShape } from './schemas.js';

export const ChangeRef = named(
  'ChangeRef',
  z.strictObject({
    id: z.string(),
    at: TIME,
    note: z.string(),
    ops: z.array(z.string()).describe('the op of each of its ops'),
    rollout: z.string().nullable(),
    error: SCHEDULE_ERROR.describe('what it is (or would be) refused with; null: it applies'),
  }),
  'A pending change named in an answer',
);

export const PreviewAt = named(
  'PreviewAt',
  Preview.extend({
    changes: z.array(ChangeRef).optional().describe('at= only: the pending changes folded in, in their order (error: it would be refused, and is skipped)'),
    now: z.strictObject({ answer: z.unknown(), revision: z.number().int(), hash: HASH }).nullable().optional().describe('at= only: the answer now, to compare with (null: nothing answers it now)'),
  }),
  'A preview (Preview); with at=, also the pending changes folded in and the answer now (docs/schedule.md, "Previews")',
);

const ITEM_STATE = z
  .strictObject({ revision: z.number().int(), hash: HASH, text: z.string(), minAppVersion: z.string().nullable(), mapping: z.unknown() })
  .nullable()
  .describe('the newest revision and the mapping; null: the item does not exist (or, before and after, not known: see the change\'s status and error)');

export const ScheduleWrites = named(
  'ScheduleWrites',
  z.strictObject({
    schedule: z.strictObject(scheduleShape),
    items: z.array(z.strictObject({ env: z.string(), id: z.string(), now: ITEM_STATE, before: ITEM_STATE, after: ITEM_STATE })),
    earlier: z.array(ChangeRef).describe('the pending changes due before it, folded into before'),
    error: SCHEDULE_ERROR.describe('what it would be refused with at its time as things stand (after is then null)'),
  }),
  'What a scheduled change writes, item by item: now, just before its time, after it (docs/schedule.md, "What a change writes")',
);

export const ScheduleEdit = named(
  'ScheduleEdit',
  z.strictObject({ ops: z.array(ChangeOp).min(1).max(MAX_OPS), note: z.string().max(1000).optional() }),
  'The new ops (and note) of a pending change, checked as when it is scheduled',
);

export const ConflictCheckBody = named(
  'ConflictCheckBody',
  z.strictObject({ ops: z.array(ChangeOp).min(1).max(MAX_OPS), at: INSTANT.optional(), schedule: z.string().optional() }),
  'A write to check: made now (ops), scheduled (ops and at), or the new ops of a pending change (ops and schedule)',
);

export const ConflictCheck = named(
  'ConflictCheck',
  z.strictObject({
    refused: z.strictObject({ code: z.string(), message: z.string(), details: z.unknown().optional() }).nullable().describe('what the write itself would be refused with'),
    conflicts: z.array(ChangeRef).describe('pending changes that apply without the write and would be refused with it'),
    checked: z.number().int().min(0).describe('how many pending changes of its items were tried'),
  }),
  'The pending changes a write would make fail later (docs/schedule.md, "Conflicts")',
);
