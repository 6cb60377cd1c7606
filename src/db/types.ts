// The one small query interface every domain function uses; two drivers implement it.

export type Row = Record<string, unknown>;

/** Rows as arrays in the order of `columns`. */
export interface ArrayRows {
  columns: string[];
  rows: unknown[][];
}

export interface QueryOptions {
  /**
   * On the connection kept for the metering lane (PostgreSQL opened with `lane`; otherwise the
   * pool, and PGlite's one session): statements sent one after another, never two at once, run
   * on one backend that runs nothing else, whose caches stay warm between them.
   */
  lane?: boolean;
}

export interface TransactionOptions {
  /**
   * Long work (migrations, imports, the stats count): no statement timeout and no deadline, so
   * it may take as long as it needs. Everything else is bounded by DbTimeouts.
   */
  bulk?: boolean;
}

export interface Db {
  readonly driver: "postgres" | "pglite";
  /** One parameterised statement ($1, $2, ...). */
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /**
   * The same, each row an array in column order, with the column names once: for a statement of
   * many columns read on every request (the metering statement), where setting a row's columns
   * on an object one name at a time costs more than reading them (2 µs a row of 35 columns).
   */
  queryArrays(text: string, params?: readonly unknown[], options?: QueryOptions): Promise<ArrayRows>;
  /** Several statements without parameters (migrations only; not bounded by a deadline). */
  exec(text: string): Promise<void>;
  transaction<T>(fn: (tx: Db) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * Calls `onNotify` at every NOTIFY on `channel` (PostgreSQL: on a connection of its own; PGlite:
   * its one session, which hears its own). Resolves once listening, with what stops it. Optional:
   * a wrapper (the tests' failing databases) may leave it out, and a listener then polls.
   */
  listen?(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/** How long the drivers wait (DB_CONNECT_TIMEOUT_MS, DB_STATEMENT_TIMEOUT_MS, DB_IDLE_TIMEOUT_MS). */
export interface DbTimeouts {
  /** Opening a PostgreSQL connection, up to its first ReadyForQuery. */
  connectMs: number;
  /** PostgreSQL's statement_timeout; the client waits this plus DEADLINE_MARGIN_MS for any answer. */
  statementMs: number;
  /** An unused PostgreSQL connection is closed after this long. */
  idleMs: number;
}

/**
 * An unused connection is kept 5 minutes: one opened afresh after a lull runs its first statements
 * on a new backend with cold caches and plans (reverse pages right after a minute's idle: about 20 ms
 * of PostgreSQL CPU a page against 12 with the connections kept; docs/performance.md,
 * "Kept, and why").
 */
export const DEFAULT_DB_TIMEOUTS: DbTimeouts = { connectMs: 3000, statementMs: 3000, idleMs: 300_000 };

/** Time for the server's own statement_timeout error to arrive before the client stops waiting. */
export const DEADLINE_MARGIN_MS = 1000;
