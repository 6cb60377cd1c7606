// Opens the database named by config: PostgreSQL when DATABASE_URL is set, else embedded PGlite,
// loaded only then (PGlite is a devDependency: the container image, which needs DATABASE_URL,
// does not install it).
import { openPostgres } from "./postgres.ts";
import { migrate } from "./migrate.ts";
import { loadQueries } from "./queries.ts";
import type { Db, DbTimeouts } from "./types.ts";

export async function openDatabase(
  options: { databaseUrl?: string; dataDir?: string; max?: number; timeouts?: DbTimeouts; lane?: boolean },
): Promise<Db> {
  loadQueries();
  const db = options.databaseUrl
    ? openPostgres(options.databaseUrl, { max: options.max, timeouts: options.timeouts, lane: options.lane })
    : await (await import("./pglite.ts")).openPglite(options.dataDir, options.timeouts);
  await migrate(db);
  return db;
}
