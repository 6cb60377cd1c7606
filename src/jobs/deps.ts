// What running a job needs, built once from the configuration by the server, the worker
// script and the tests alike.
import type { Log } from "../observe/log.ts";
import type { Config } from "../config.ts";
import type { Db } from "../db/types.ts";
import { configuredSources } from "../sources/index.ts";
import type { LiveSource, RetryOptions } from "../sources/types.ts";
import type { JobRunDeps } from "./run.ts";

export const DEFAULT_RETRY: RetryOptions = { attempts: 4, baseDelayMs: 500, maxDelayMs: 15_000 };

export function jobRunDeps(
  config: Config,
  params: { db: Db; now: () => Date; log: Log; sources?: LiveSource[]; retry?: RetryOptions },
): JobRunDeps {
  return {
    db: params.db,
    now: params.now,
    log: params.log,
    sources: params.sources ?? configuredSources(config, params.log),
    baseUrl: `${config.publicUrl}/api/v1`,
    settings: {
      leaseSeconds: config.jobs.leaseSeconds,
      chunkSize: config.jobs.chunkSize,
      cacheTtlHours: config.jobs.cacheTtlHours,
      retry: params.retry ?? DEFAULT_RETRY,
    },
  };
}
