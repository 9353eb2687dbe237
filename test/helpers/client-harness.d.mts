// Types of client-harness.mjs (a plain module so that Chromium loads the very same file).
export interface HarnessRequest {
  kind: 'catalog' | 'combine' | 'events' | 'other';
  ids: string[] | null;
  tag: string | null;
  at: number;
  /** -1 when no answer arrived. */
  status: number;
  bytes: number;
}

export interface HarnessResult {
  changed: string[];
  fromCache: boolean;
  error?: { code: string; status: number; retryAfterMs: number | null; retryAt: number | null };
}

export interface HarnessClientOptions {
  baseUrl: string;
  apiKey: string;
  storage: string;
  context?: { u?: string; p?: Record<string, unknown>; v?: string };
  defaults?: unknown;
  maxCombineIds?: number;
  backoff?: { baseMs?: number; maxMs?: number };
  burstBeforeCombine?: { url: string; key: string; delayMs: number };
}

export interface Harness {
  create(options: HarnessClientOptions): number;
  refresh(id: number): Promise<HarnessResult>;
  refreshTwice(id: number): Promise<[HarnessResult, HarnessResult]>;
  subscribe(id: number): void;
  values(id: number, ids: string[]): Record<string, { data: unknown; meta: { hash: string | null; seg: unknown[]; h: string; source: string } | null }>;
  log(id: number): HarnessRequest[];
  results(id: number): HarnessResult[];
  close(id: number): void;
}

export function createHarness(sdk: unknown, makeStorage: (name: string) => unknown): Harness;
