// The PostgreSQL driver (postgres.js), used when DATABASE_URL is set.
import { metrics } from "../observe/metrics.ts";
import postgres from "postgres";
import { boundedTransaction, DatabaseTimeoutError, withDeadline } from "./deadline.ts";
import { sql as queryText } from "./queries.ts";
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
  /** Named prepared statements; off behind a pooler in transaction mode, which cannot keep them. */
  prepare: boolean;
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
  let statement = conn.sql.unsafe(text, params.map(toWire) as postgres.ParameterOrJSON<never>[], { prepare: conn.prepare });
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

function wrap(current: () => Conn, close: () => Promise<void>, listen: Db["listen"]): Db {
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
    ...(listen && { listen }),
    close,
  };
}

export interface PostgresOptions {
  max?: number;
  timeouts?: DbTimeouts;
  lane?: boolean;
  /**
   * "transaction": DATABASE_URL is a pooler in transaction mode (PgBouncer), where consecutive
   * transactions of one client connection run on different server connections. See openPooled.
   */
  pooler?: "transaction";
  /** PostgreSQL itself, for LISTEN behind a pooler; without it, listeners poll. */
  directUrl?: string;
}

/**
 * A pool of `max` connections (DATABASE_POOL_SIZE, default 4). With `lane` and two or more, one of
 * them is kept for the metering lane's statements (QueryOptions.lane), which the pool would
 * otherwise spread over all its connections in turn. One backend running them all, and nothing
 * else, keeps its caches warm: side by side, the metered lookup served 1.16 times as many requests
 * a second, and PostgreSQL spent 52 µs a request against 64 (docs/performance.md,
 * "Kept, and why"). It shows in pg_stat_activity as `walletid meter lane`. Behind a pooler the
 * lane is one client connection like the others: the pooler picks the backend.
 */
export function openPostgres(url: string, options: PostgresOptions = {}): Db {
  const max = options.max ?? 4;
  const timeouts = options.timeouts ?? DEFAULT_DB_TIMEOUTS;
  const pooled = options.pooler === "transaction";
  const openOne = (connections: number, applicationName?: string) =>
    pooled ? openPooled(url, connections, timeouts, options.directUrl) : openPool(url, connections, timeouts, { applicationName });
  if (!options.lane || max < 2) return openOne(max);
  const pool = openOne(max - 1);
  // postgres.js connects on the first statement: a process that never meters never opens it
  const lane = pooled ? openPooled(url, 1, timeouts) : openPool(url, 1, timeouts, { applicationName: "walletid meter lane" });
  return {
    ...pool,
    queryArrays: (text, params, queryOptions) => (queryOptions?.lane ? lane : pool).queryArrays(text, params),
    async close() {
      await Promise.all([pool.close(), lane.close()]);
    },
  };
}

/**
 * Whether `url` is a pooler in transaction mode: PgBouncer refuses a startup parameter it does not
 * know (`unsupported startup parameter: plan_cache_mode`) before any statement. One connection,
 * closed at once; any other failure answers no, and the open that follows reports it as usual.
 */
export async function detectPooler(url: string, timeouts: DbTimeouts = DEFAULT_DB_TIMEOUTS): Promise<"transaction" | undefined> {
  const probe = postgres(url, {
    max: 1,
    onnotice: () => {},
    connect_timeout: timeouts.connectMs / 1000,
    fetch_types: false,
    connection: { plan_cache_mode: "force_generic_plan" },
  });
  try {
    await withDeadline(probe.unsafe("SELECT 1"), timeouts.connectMs + DEADLINE_MARGIN_MS, () => {});
    return undefined;
  } catch (err) {
    return /unsupported startup parameter/i.test((err as Error).message) ? "transaction" : undefined;
  } finally {
    await probe.end({ timeout: 0 }).catch(() => {});
  }
}

/**
 * Behind a pooler in transaction mode (PgBouncer 1.18) a client connection keeps nothing between
 * transactions, so: startup parameters only those PgBouncer tracks and sets again on whichever
 * server connection it hands out (TimeZone); the others are the role's defaults
 * (applyPooledSettings); no statement prepared under a name (postgres.js's own BEGIN and COMMIT
 * were, and a COMMIT sent to a server connection that never saw it left a job uncommitted: read as
 * missing right after its 202); and one statement or transaction at a time on each client
 * connection, never pipelined: PgBouncer before 1.21 tracks one request at a time and hands the
 * server connection to another client at the first ReadyForQuery outside a transaction, while a
 * statement pipelined behind it may still be on its way there. So `max` single-connection
 * clients, each lent to one caller at a time. LISTEN goes
 * to `directUrl` (through the pooler it would stay on a server connection lent to others);
 * without one there is none, and listeners poll.
 */
function openPooled(url: string, max: number, timeouts: DbTimeouts, directUrl?: string): Db {
  const clients = Array.from({ length: max }, () => openPool(url, 1, timeouts, { pooled: true }));
  const idle = [...clients];
  const waiting: Array<(client: Db) => void> = [];
  const waitMs = timeouts.statementMs + DEADLINE_MARGIN_MS;
  const lend = async <T>(fn: (client: Db) => Promise<T>): Promise<T> => {
    // a caller waits for a client as long as a statement may take, then fails as one timed out
    const client =
      idle.pop() ??
      (await new Promise<Db>((resolve, reject) => {
        const take = (lent: Db) => (clearTimeout(timer), resolve(lent));
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(take), 1);
          reject(new DatabaseTimeoutError(waitMs));
        }, waitMs);
        waiting.push(take);
      }));
    try {
      return await fn(client);
    } finally {
      const next = waiting.shift();
      if (next) next(client);
      else idle.push(client);
    }
  };
  const direct = directUrl ? openPool(directUrl, 1, timeouts, { applicationName: "walletid listener" }) : undefined;
  return {
    driver: "postgres",
    query: (text, params) => lend((client) => client.query(text, params)),
    queryArrays: (text, params) => lend((client) => client.queryArrays(text, params)),
    exec: (text) => lend((client) => client.exec(text)),
    transaction: (fn, options) => lend((client) => client.transaction(fn, options)),
    ...(direct?.listen && { listen: direct.listen }),
    async close() {
      await Promise.all([...clients.map((c) => c.close()), direct?.close()]);
    },
  };
}

function openPool(url: string, max: number, timeouts: DbTimeouts, mode: { applicationName?: string; pooled?: boolean }): Db {
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
      // behind a pooler no statement is prepared under a name, postgres.js's own BEGIN and COMMIT
      // included: the next transaction may run on a server connection that never saw it
      ...(mode.pooled ? { prepare: false } : {}),
      // Our statements are point lookups by key: a generic plan is right for all of them, and
      // re-planning `= ANY($1)` on every execution cost more than running it. JIT compiling
      // never pays for itself on statements this short. (Behind a pooler: the role's defaults.)
      connection: {
        ...(mode.applicationName ? { application_name: mode.applicationName } : {}),
        TimeZone: "UTC",
        ...(mode.pooled ? {} : { plan_cache_mode: "force_generic_plan", jit: "off", statement_timeout: timeouts.statementMs }),
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
      prepare: !mode.pooled,
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
    // never through a pooler (openPooled listens on a direct connection)
    mode.pooled
      ? undefined
      : async (channel, onNotify) => {
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

/**
 * Behind a pooler in transaction mode: the settings a direct connection sends at startup, stored
 * as the role's defaults in this database (every connection the pooler opens after it has them).
 */
export async function applyPooledSettings(db: Db, timeouts: DbTimeouts = DEFAULT_DB_TIMEOUTS): Promise<void> {
  await db.query(queryText("role_settings_apply"), [timeouts.statementMs]);
}

interface Listener {
  channel: string;
  onNotify: () => void;
  /** Stops it on the pool it is attached to. */
  unlisten: () => Promise<void>;
}
