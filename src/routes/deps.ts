// What every route group is handed: built once in createApp, passed explicitly.
import type { Log } from "../observe/log.ts";
import type { Config } from "../config.ts";
import type { Db } from "../db/types.ts";
import type { UsageRecorder } from "../ledger/usage.ts";
import { createCursorSigner, type CursorSigner } from "../http/cursor.ts";
import { createUsageRecorder } from "../ledger/usage.ts";

export interface RouteDeps {
  db: Db;
  config: Config;
  now: () => Date;
  usage: UsageRecorder;
  log: Log;
  cursors: CursorSigner;
}

export function meterDeps(deps: RouteDeps) {
  return { db: deps.db, now: deps.now, publicUrl: deps.config.publicUrl };
}

/** The route dependencies of a process (the server, or the MCP stdio entry): one usage recorder and cursor signer. */
export function createRouteDeps(params: {
  db: Db;
  config: Config;
  now?: () => Date;
  log?: Log;
  usage?: UsageRecorder;
}): RouteDeps {
  const log = params.log ?? ((line: string) => console.error(line));
  return {
    db: params.db,
    config: params.config,
    now: params.now ?? (() => new Date()),
    usage: params.usage ?? createUsageRecorder(params.db, { log }),
    log,
    cursors: createCursorSigner(params.db, params.config.cursorSecret),
  };
}
