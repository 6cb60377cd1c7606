// The embedded default: PGlite stored under DATA_DIR, or in memory when no directory is given.
import { PGlite, type Transaction } from "@electric-sql/pglite";
import type { Db, Row } from "./types.ts";

type Conn = PGlite | Transaction;

function wrap(conn: Conn, close: () => Promise<void>): Db {
  return {
    driver: "pglite",
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const result = await conn.query<T>(text, params as unknown[]);
      return result.rows;
    },
    async exec(text: string) {
      await conn.exec(text);
    },
    async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      if (!("transaction" in conn)) throw new Error("Cannot open a transaction: already inside one");
      return await conn.transaction((tx) => fn(wrap(tx, close)));
    },
    close,
  };
}

export async function openPglite(dataDir?: string): Promise<Db> {
  const pg = new PGlite(dataDir);
  await pg.waitReady;
  await pg.exec("SET TIME ZONE 'UTC'");
  return wrap(pg, () => pg.close());
}
