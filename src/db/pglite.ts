// The embedded default: PGlite stored under DATA_DIR, or in memory when no directory is given.
import { metrics } from "../observe/metrics.ts";
import { PGlite, type Transaction } from "@electric-sql/pglite";
import { boundedTransaction, withDeadline } from "./deadline.ts";
import { DEADLINE_MARGIN_MS, DEFAULT_DB_TIMEOUTS, type Db, type DbTimeouts, type Row, type TransactionOptions } from "./types.ts";

type Conn = PGlite | Transaction;

// PGlite runs statements one at a time in this process: the deadline bounds the wait behind
// others (a statement cannot be stopped once started, and may still run after its caller gave up).
function wrap(conn: Conn, deadlineMs: number, close: () => Promise<void>): Db {
  const listen = "listen" in conn ? (channel: string, onNotify: () => void) => conn.listen(channel, () => onNotify()) : undefined;
  return {
    driver: "pglite",
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      metrics.dbInFlight.value++;
      try {
        return (await withDeadline(conn.query<T>(text, params as unknown[]), deadlineMs)).rows;
      } finally {
        metrics.dbInFlight.value--;
      }
    },
    async queryArrays(text: string, params: readonly unknown[] = []) {
      metrics.dbInFlight.value++;
      try {
        const result = await withDeadline(conn.query<unknown[]>(text, params as unknown[], { rowMode: "array" }), deadlineMs);
        return { columns: result.fields.map((f) => f.name), rows: result.rows };
      } finally {
        metrics.dbInFlight.value--;
      }
    },
    async exec(text: string) {
      await conn.exec(text);
    },
    async transaction<T>(fn: (tx: Db) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
      if (!("transaction" in conn)) throw new Error("Cannot open a transaction: already inside one");
      if (options.bulk) return await conn.transaction((tx) => fn(wrap(tx, 0, close)));
      const begin = (body: (tx: Transaction) => Promise<T>) => conn.transaction(body);
      return await boundedTransaction(begin, (tx) => fn(wrap(tx, deadlineMs, close)), deadlineMs);
    },
    ...(listen && { listen }),
    close,
  };
}

export async function openPglite(dataDir?: string, timeouts: DbTimeouts = DEFAULT_DB_TIMEOUTS): Promise<Db> {
  const pg = new PGlite(dataDir);
  await pg.waitReady;
  await pg.exec("SET TIME ZONE 'UTC'");
  return wrap(pg, timeouts.statementMs + DEADLINE_MARGIN_MS, () => pg.close());
}
