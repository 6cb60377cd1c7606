// What every route group is handed: built once in createApp, passed explicitly.
import type { Config } from "../config.ts";
import type { Db } from "../db/types.ts";
import type { UsageRecorder } from "../ledger/usage.ts";
import type { CursorSigner } from "../http/cursor.ts";

export interface RouteDeps {
  db: Db;
  config: Config;
  now: () => Date;
  usage: UsageRecorder;
  log: (line: string) => void;
  cursors: CursorSigner;
}

export function meterDeps(deps: RouteDeps) {
  return { db: deps.db, now: deps.now, publicUrl: deps.config.publicUrl };
}
