/**
 * One op of a scheduled change set as the API takes it, stores, lists and exports it
 * (docs/schedule.md, "Ops"). Only the shape lives here, so a plan can name ChangeOp without importing
 * the code that applies it (changes.ts parses and applies ops).
 */
import { z } from 'zod';

const BASE = z.number().int().min(0).max(2_147_483_647).optional();
const MOD = z.tuple([z.number().int().min(0).max(999), z.number().int().min(0).max(999)]);

/** One op of a change set as the API takes it (the OpenAPI document reuses it). */
export const ChangeOpSchema = z.discriminatedUnion('op', [
  z.strictObject({
    op: z.literal('content.put'),
    id: z.string(),
    text: z.string().optional(),
    json: z.unknown().optional(),
    minAppVersion: z.string().nullable().optional(),
    baseRevision: BASE,
  }),
  z.strictObject({ op: z.literal('content.delete'), id: z.string(), baseRevision: BASE }),
  z.strictObject({ op: z.literal('content.rollback'), id: z.string(), to: z.number().int().min(1), baseRevision: BASE }),
  z.strictObject({ op: z.literal('mapping.put'), id: z.string(), mapping: z.unknown(), baseRevision: BASE }),
  z.strictObject({ op: z.literal('mapping.delete'), id: z.string(), baseRevision: BASE }),
  z.strictObject({ op: z.literal('sync'), to: z.string(), ids: z.array(z.string().min(1)).min(1).nullable().optional() }),
  z.strictObject({
    op: z.literal('rule.set'),
    id: z.string(),
    rule: z.number().int().min(0).max(999),
    segment: z.string().min(1),
    variant: z.string().min(1).nullable().optional(),
    disabled: z.boolean().optional(),
    mod: MOD.nullable().optional(),
    baseRevision: BASE,
  }),
]);

/** The API's form of an op (what is stored, listed and exported). */
export type ChangeOp = z.infer<typeof ChangeOpSchema>;
