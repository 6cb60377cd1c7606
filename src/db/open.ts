// Opens the database named by config: PostgreSQL when DATABASE_URL is set, else embedded PGlite,
// loaded only then (PGlite is a devDependency: the container image, which needs DATABASE_URL,
// does not install it).
import { migrate } from "./migrate.ts";
import { openPostgresDatabase, type PoolerSetting } from "./open-postgres.ts";
import { loadQueries } from "./queries.ts";
import type { Db, DbTimeouts } from "./types.ts";

export async function openDatabase(
  options: {
    databaseUrl?: string;
    dataDir?: string;
    max?: number;
    timeouts?: DbTimeouts;
    lane?: boolean;
    /** DATABASE_POOLER (default auto) and DATABASE_DIRECT_URL: see src/db/postgres.ts */
    pooler?: PoolerSetting;
    directUrl?: string;
  },
): Promise<Db> {
  loadQueries();
  if (options.databaseUrl) {
    return await openPostgresDatabase(
      options.databaseUrl,
      { max: options.max, timeouts: options.timeouts, lane: options.lane, directUrl: options.directUrl },
      options.pooler,
    );
  }
  const db = await (await import("./pglite.ts")).openPglite(options.dataDir, options.timeouts);
  await migrate(db);
  return db;
}
