// Opens PostgreSQL for a process and migrates it: directly, or behind a pooler in transaction mode.
// Apart from open.ts so that the bundled worker (scripts/worker.mjs) never takes in PGlite.
import { migrate } from "./migrate.ts";
import { applyPooledSettings, detectPooler, openPostgres, type PostgresOptions } from "./postgres.ts";
import { loadQueries } from "./queries.ts";
import type { Db } from "./types.ts";

/** DATABASE_POOLER: auto detects a pooler in transaction mode at the first connection. */
export type PoolerSetting = "auto" | "none" | "transaction";

/**
 * PostgreSQL, migrated: directly, or behind a pooler in transaction mode (stated, or detected when
 * `pooler` is auto), where the service's session settings are then kept as its role's defaults.
 */
export async function openPostgresDatabase(url: string, options: Omit<PostgresOptions, "pooler">, pooler: PoolerSetting = "auto"): Promise<Db> {
  loadQueries();
  const mode = pooler === "auto" ? await detectPooler(url, options.timeouts) : pooler === "transaction" ? "transaction" : undefined;
  const db = openPostgres(url, { ...options, pooler: mode });
  try {
    await migrate(db);
    if (mode) await applyPooledSettings(db, options.timeouts);
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
  return db;
}
