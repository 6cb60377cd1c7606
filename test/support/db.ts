// Runs a suite once against embedded PGlite and once against a fresh database on the
// machine's PostgreSQL (TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres, the
// maintenance database every server has; the suites only create and drop their own databases there).
import { after, before, describe } from "node:test";
import postgres from "postgres";
import { openDatabase } from "../../src/db/open.ts";
import { sql } from "../../src/db/queries.ts";
import type { Db, DbTimeouts } from "../../src/db/types.ts";

export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/**
 * The suites test behaviour, not the machine's speed: they run with long database timeouts, so
 * a loaded machine (several suites at once on two cores) does not turn slow statements into
 * 503s. The timeouts themselves are tested with short ones (test/db/timeouts.test.ts) and with
 * the defaults in a real server (npm run test:faults).
 */
export const TEST_TIMEOUTS: DbTimeouts = { connectMs: 30_000, statementMs: 60_000, idleMs: 60_000 };

export interface TestDatabase {
  db: Db;
  /** Set for PostgreSQL: a URL other processes (a second server, the admin CLI) can open. */
  url?: string;
}

/** Creates an empty PostgreSQL database and returns its URL and a drop function. */
export async function createPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `walletid_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const conn = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
      await conn.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await conn.end();
    },
  };
}

export async function openTestDatabase(kind: "pglite" | "postgres"): Promise<TestDatabase & { close(): Promise<void> }> {
  if (kind === "pglite") {
    const db = await openDatabase({ timeouts: TEST_TIMEOUTS });
    return { db, close: () => db.close() };
  }
  const created = await createPostgresDatabase();
  // as the server opens it: one of the four connections kept for the metering lane
  const db = await openDatabase({ databaseUrl: created.url, max: 4, timeouts: TEST_TIMEOUTS, lane: true });
  return {
    db,
    url: created.url,
    close: async () => {
      await db.close();
      await created.drop();
    },
  };
}

/** describe(title) twice, once per driver; `get()` returns the open database inside tests. */
export function eachDatabase(title: string, body: (get: () => TestDatabase) => void): void {
  for (const kind of ["pglite", "postgres"] as const) {
    describe(`${title} [${kind}]`, () => {
      let current: (TestDatabase & { close(): Promise<void> }) | undefined;
      before(async () => {
        current = await openTestDatabase(kind);
      });
      after(async () => {
        await current?.close();
      });
      body(() => {
        if (!current) throw new Error("Cannot use the test database: it is not open yet");
        return current;
      });
    });
  }
}

/** `db`, with every run of the named statement (sql/queries) held `ms` before it is sent. */
export function slowStatement(db: Db, name: Parameters<typeof sql>[0], ms: number): Db {
  const text = sql(name);
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "query") {
        return async (query: string, params?: readonly unknown[]) => {
          if (query === text) await new Promise((resolve) => setTimeout(resolve, ms));
          return await target.query(query, params);
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
