/**
 * The Store methods that are the same on every backend: each makes the checks that need no store,
 * then runs one step (src/store/ops/) in the backend's write or read transaction (writeStep,
 * readStep). SqliteStore and PostgresStore extend this and define how a step runs.
 */
import { RcdError } from '../runtime/errors.js';
import { settle } from '../shared/settle.js';
import { prepareImport } from './bundle/bundle.js';
import type { ImportScheduler, PreparedImport } from './import-plan.js';
import { exportStep } from './bundle/export.js';
import { importStep } from './bundle/write.js';
import { apiKeyDigest, envIdProblem, generateKey, plainKeyProblem } from './ids.js';
import * as content from './ops/content.js';
import * as environments from './ops/environments.js';
import type { Step } from './ops/rows.js';
import { STORE_IMPORT } from './schedule/bundle.js';
import type { ScheduleRow } from './schedule/rows.js';
import type { ContentDetail, ContentRef, ImportReport, MappingResult, OutboxOf, PutContentResult, SyncReport } from './types.js';
import { checkContentWrite, checkRevisionNumber, checkSyncIds } from './write-checks.js';

export abstract class StepStore {
  /** Runs a step in one write transaction, then records the outbox entries it reports (types.ts, OutboxOf). */
  abstract writeStep<T>(step: () => Step<T>, outbox?: OutboxOf<T>): Promise<T>;
  /** Runs a step in one read transaction: its reads see one committed state. */
  abstract readStep<T>(step: () => Step<T>): Promise<T>;

  async putEnvironment(envId: string): Promise<boolean> {
    const problem = envIdProblem(envId);
    if (problem !== '') throw new RcdError('invalid_request', problem);
    return this.writeStep(() => environments.putEnvironment(envId));
  }

  deleteEnvironment(envId: string, force: boolean, outbox?: OutboxOf<readonly ScheduleRow[]>): Promise<readonly ScheduleRow[]> {
    return this.writeStep(() => environments.deleteEnvironment(envId, force), outbox);
  }

  async createKey(envId: string, plainKey?: string): Promise<{ id: string; key: string }> {
    if (plainKey !== undefined) {
      const problem = plainKeyProblem(plainKey);
      if (problem !== '') throw new RcdError('invalid_request', problem);
    }
    const key = plainKey ?? generateKey();
    const id = await this.writeStep(() => environments.createKey(envId, apiKeyDigest(key)));
    return { id, key };
  }

  revokeKey(envId: string, keyId: string): Promise<void> {
    return this.writeStep(() => environments.revokeKey(envId, keyId));
  }

  getContent(envId: string, id: string): Promise<ContentDetail | undefined> {
    if (typeof id !== 'string') return Promise.resolve(undefined);
    return this.readStep(() => content.contentDetailOf(envId, id));
  }

  async putContent(envId: string, id: string, text: string, minAppVersion: string | null, outbox?: OutboxOf<PutContentResult>): Promise<PutContentResult> {
    const compiled = checkContentWrite(id, text, minAppVersion);
    return this.writeStep(() => content.putContent(envId, id, text, compiled, minAppVersion), outbox);
  }

  deleteContent(envId: string, id: string, outbox?: OutboxOf<ContentRef>): Promise<ContentRef> {
    return this.writeStep(() => content.deleteContent(envId, id), outbox);
  }

  async rollback(envId: string, id: string, to: number, outbox?: OutboxOf<PutContentResult>): Promise<PutContentResult> {
    checkRevisionNumber(to);
    return this.writeStep(() => content.rollback(envId, id, to), outbox);
  }

  putMapping(envId: string, id: string, mapping: unknown, outbox?: OutboxOf<MappingResult>): Promise<MappingResult> {
    return this.writeStep(() => content.putMapping(envId, id, mapping), outbox);
  }

  deleteMapping(envId: string, id: string, outbox?: OutboxOf<ContentRef>): Promise<ContentRef> {
    return this.writeStep(() => content.deleteMapping(envId, id), outbox);
  }

  async sync(from: string, to: string, ids?: readonly string[], outbox?: OutboxOf<SyncReport>): Promise<SyncReport> {
    checkSyncIds(ids);
    return this.writeStep(() => content.sync(from, to, ids), outbox);
  }

  importBundle(bundle: unknown, outbox?: OutboxOf<ImportReport>, by: ImportScheduler = STORE_IMPORT): Promise<ImportReport> {
    // Prepared before the transaction: the checks that need no store do not hold the write lock.
    return settle(() => prepareImport(bundle)).then((prepared) => this.importPrepared(prepared, outbox, by));
  }

  importPrepared(prepared: PreparedImport, outbox?: OutboxOf<ImportReport>, by: ImportScheduler = STORE_IMPORT): Promise<ImportReport> {
    return this.writeStep(() => importStep(prepared, by), outbox);
  }

  exportBundle(): Promise<unknown> {
    return this.readStep(() => exportStep());
  }
}
