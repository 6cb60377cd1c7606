// What every operation is handed, whichever face calls it: built once per process (createApp, the
// MCP stdio entry) and passed explicitly.
import type { Log } from "../observe/log.ts";
import type { Config } from "../config.ts";
import type { Db } from "../db/types.ts";
import type { UsageRecorder } from "../ledger/usage.ts";
import { createCursorSigner, type CursorSigner } from "../http/cursor.ts";
import { createUsageRecorder } from "../ledger/usage.ts";
import { jobRunDeps } from "../jobs/deps.ts";
import type { JobRunDeps } from "../jobs/run.ts";
import type { LiveSource, RetryOptions } from "../sources/types.ts";
import type { Outbound } from "../http/outbound.ts";
import { secretBox, type SecretBox } from "../webhooks/secrets.ts";

export interface OperationDeps {
  db: Db;
  config: Config;
  now: () => Date;
  usage: UsageRecorder;
  log: Log;
  cursors: CursorSigner;
  /** What running a job needs: small jobs run inline at submission. */
  jobs: JobRunDeps;
  /** Requests to user-given URLs (webhook endpoints); absent: webhooks cannot be registered. */
  outbound?: Outbound;
  /** Seals and opens webhook endpoint secrets. */
  webhookSecrets: SecretBox;
}

export function meterDeps(deps: OperationDeps) {
  return { db: deps.db, now: deps.now, publicUrl: deps.config.publicUrl };
}

/** The operation dependencies of a process: one usage recorder, cursor signer and set of live sources. */
export function createOperationDeps(params: {
  db: Db;
  config: Config;
  now?: () => Date;
  log?: Log;
  usage?: UsageRecorder;
  /** Live sources for jobs; by default those the configuration turns on. */
  sources?: LiveSource[];
  retry?: RetryOptions;
  outbound?: Outbound;
}): OperationDeps {
  const log = params.log ?? ((line: string) => console.error(line));
  const now = params.now ?? (() => new Date());
  return {
    db: params.db,
    config: params.config,
    now,
    usage: params.usage ?? createUsageRecorder(params.db, { log }),
    log,
    cursors: createCursorSigner(params.db, params.config.cursorSecret),
    jobs: jobRunDeps(params.config, { db: params.db, now, log, sources: params.sources, retry: params.retry }),
    outbound: params.outbound,
    webhookSecrets: secretBox(params.db, params.config.webhooks.secretKey),
  };
}
