// The PostgreSQL driver (postgres.js), used when DATABASE_URL is set.
import { metrics } from "../observe/metrics.ts";
import postgres from "postgres";
import { boundedTransaction, withDeadline } from "./deadline.ts";
import { DEADLINE_MARGIN_MS, DEFAULT_DB_TIMEOUTS, type ArrayRows, type Db, type DbTimeouts, type Row, type TransactionOptions } from "./types.ts";

type Sql = postgres.Sql | postgres.TransactionSql;

// postgres.js types a parameter from its JavaScript value, and sends an array of Dates,
// numbers or booleans as a scalar. Sending arrays as array literals (and Dates as ISO text)
// lets the statement's own casts decide, exactly as PGlite does.
function literalElement(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  const text = value instanceof Date ? value.toISOString() : typeof value === "object" ? JSON.stringify(value) : String(value);
  // most elements (addresses, times, numbers) need no escaping: a job's chunk sends thousands
  return NEEDS_ESCAPE.test(text) ? `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"` : `"${text}"`;
}

const NEEDS_ESCAPE = /[\\"]/;

function toWire(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return `{${value.map(literalElement).join(",")}}`;
  return value;
}

/** A pool or a transaction, with the client's deadline for any one answer (0: none, bulk work). */
interface Conn {
  sql: Sql;
  deadlineMs: number;
  /** Called when a deadline passes: the connection may be stuck for good. */
  onStuck: () => void;
}

/**
 * Runs one statement and collects its rows: keyed objects, or arrays in column order (`arrays`)
 * with the column names. The rows are collected by forEach into a box emptied once they are
 * handed over, not taken as the value the statement resolves with: V8 keeps a settled postgres.js
 * Query (a Promise subclass with fields of its own) alive through minor GCs when the process had
 * idled before it, and everything it holds with it, so every row it resolved with was promoted to
 * the old generation: scavenges of 5-8 ms instead of under 1 (docs/performance.md,
 * "Kept, and why").
 */
async function collect(conn: Conn, text: string, params: readonly unknown[], arrays: boolean): Promise<ArrayRows & { rows: never[] }> {
  const box: { rows: unknown[] | null } = { rows: [] };
  let statement = conn.sql.unsafe(text, params.map(toWire) as postgres.ParameterOrJSON<never>[], { prepare: true });
  // values() before forEach: forEach starts the statement
  if (arrays) statement = statement.values() as unknown as typeof statement;
  // a row arriving after the deadline gave the statement up finds the box gone: dropped, not a
  // TypeError inside the driver's message loop
  const running = statement.forEach((row) => void box.rows?.push(row));
  metrics.dbInFlight.value++;
  try {
    // the statement resolves with its (empty) result, which carries the column descriptions
    const result = await withDeadline(running, conn.deadlineMs, conn.onStuck);
    const columns = arrays ? (result.columns ?? []).map((c) => c.name) : [];
    return { columns, rows: box.rows as never[] };
  } finally {
    box.rows = null;
    metrics.dbInFlight.value--;
  }
}

function wrap(current: () => Conn, close: () => Promise<void>, listen: NonNullable<Db["listen"]>): Db {
  return {
    driver: "postgres",
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      return (await collect(current(), text, params, false)).rows as T[];
    },
    async queryArrays(text: string, params: readonly unknown[] = []) {
      return await collect(current(), text, params, true);
    },
    async exec(text: string) {
      await current().sql.unsafe(text);
    },
    async transaction<T>(fn: (tx: Db) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
      const conn = current();
      const sql = conn.sql;
      if (!("begin" in sql)) throw new Error("Cannot open a transaction: already inside one");
      if (options.bulk) {
        return (await sql.begin(async (tx) => {
          await tx.unsafe("SET LOCAL statement_timeout = 0");
          return await fn(wrap(() => ({ ...conn, sql: tx, deadlineMs: 0 }), close, listen));
        })) as T;
      }
      const begin = (body: (tx: postgres.TransactionSql) => Promise<T>) => sql.begin(body) as Promise<T>;
      return await boundedTransaction(begin, (tx) => fn(wrap(() => ({ ...conn, sql: tx }), close, listen)), conn.deadlineMs, conn.onStuck);
    },
    listen,
    close,
  };
}

/**
 * A pool of `max` connections (DATABASE_POOL_SIZE, default 4). With `lane` and two or more, one of
 * them is kept for the metering lane's statements (QueryOptions.lane), which the pool would
 * otherwise spread over all its connections in turn. One backend running them all, and nothing
 * else, keeps its caches warm: side by side, the metered lookup served 1.16 times as many requests
 * a second, and PostgreSQL spent 52 µs a request against 64 (docs/performance.md,
 * "Kept, and why"). It shows in pg_stat_activity as `walletid meter lane`.
 */
export function openPostgres(url: string, options: { max?: number; timeouts?: DbTimeouts; lane?: boolean } = {}): Db {
  const max = options.max ?? 4;
  const timeouts = options.timeouts ?? DEFAULT_DB_TIMEOUTS;
  if (!options.lane || max < 2) return openPool(url, max, timeouts);
  const pool = openPool(url, max - 1, timeouts);
  // postgres.js connects on the first statement: a process that never meters never opens it
  const lane = openPool(url, 1, timeouts, "walletid meter lane");
  return {
    ...pool,
    queryArrays: (text, params, queryOptions) => (queryOptions?.lane ? lane : pool).queryArrays(text, params),
    async close() {
      await Promise.all([pool.close(), lane.close()]);
    },
  };
}

function openPool(url: string, max: number, timeouts: DbTimeouts, applicationName?: string): Db {
  const connect = () =>
    postgres(url, {
      // Few connections suit few cores: calls of one account queue on its rate-window row, and
      // more backends waiting on it only add lock hand-offs.
      max,
      onnotice: () => {},
      connect_timeout: timeouts.connectMs / 1000,
      idle_timeout: timeouts.idleMs / 1000,
      // postgres.js waits up to 20 s before reconnecting after repeated failures; a short wait
      // lets the service answer again within a second of the database's return.
      backoff: (retries: number) => Math.min(0.1, 0.01 * 2 ** retries),
      // The array types are not fetched on connect: statements take arrays as literals (toWire)
      // and return none, and a connection cut during that fetch would reject a promise nobody
      // awaits inside postgres.js (an unhandled rejection).
      fetch_types: false,
      // Our statements are point lookups by key: a generic plan is right for all of them, and
      // re-planning `= ANY($1)` on every execution cost more than running it. JIT compiling
      // never pays for itself on statements this short.
      connection: {
        ...(applicationName ? { application_name: applicationName } : {}),
        TimeZone: "UTC",
        plan_cache_mode: "force_generic_plan",
        jit: "off",
        statement_timeout: timeouts.statementMs,
      },
      transform: { undefined: null },
    });
  // A statement with no answer by its deadline leaves its connection in an unknown state (a
  // partition can hold it for minutes): its pool is replaced, which ends that pool's connections
  // and fails every statement waiting on them at once; the next statements connect afresh.
  let closing = false;
  let pool: postgres.Sql;
  // postgres.js listens on a connection of its own and reconnects it; a replaced pool takes its
  // listeners along, so each one is attached again to the pool that replaces it.
  const listeners = new Set<Listener>();
  const attach = (sql: postgres.Sql, listener: Listener) =>
    sql.listen(listener.channel, () => listener.onNotify()).then((meta) => {
      listener.unlisten = () => meta.unlisten();
    });
  const open = (): Conn => {
    const sql = (pool = connect());
    for (const listener of listeners) attach(sql, listener).catch(() => {});
    const conn: Conn = {
      sql,
      deadlineMs: timeouts.statementMs + DEADLINE_MARGIN_MS,
      onStuck: () => {
        if (conn !== current || closing) return;
        current = open();
        sql.end({ timeout: 0 }).catch(() => {});
      },
    };
    return conn;
  };
  let current = open();
  return wrap(
    () => current,
    async () => {
      closing = true;
      await pool.end({ timeout: 5 });
    },
    async (channel, onNotify) => {
      const listener: Listener = { channel, onNotify, unlisten: async () => {} };
      await attach(current.sql as postgres.Sql, listener);
      listeners.add(listener);
      return async () => {
        listeners.delete(listener);
        await listener.unlisten();
      };
    },
  );
}

interface Listener {
  channel: string;
  onNotify: () => void;
  /** Stops it on the pool it is attached to. */
  unlisten: () => Promise<void>;
}
