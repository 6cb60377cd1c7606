// The PostgreSQL driver (postgres.js), used when DATABASE_URL is set.
import postgres from "postgres";
import type { Db, Row } from "./types.ts";

type Sql = postgres.Sql | postgres.TransactionSql;

// postgres.js types a parameter from its JavaScript value, and sends an array of Dates,
// numbers or booleans as a scalar. Sending arrays as array literals (and Dates as ISO text)
// lets the statement's own casts decide, exactly as PGlite does.
function literalElement(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  const text = value instanceof Date ? value.toISOString() : typeof value === "object" ? JSON.stringify(value) : String(value);
  return `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

function toWire(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return `{${value.map(literalElement).join(",")}}`;
  return value;
}

function wrap(sql: Sql, close: () => Promise<void>): Db {
  return {
    driver: "postgres",
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const rows = await sql.unsafe(text, params.map(toWire) as postgres.ParameterOrJSON<never>[], { prepare: true });
      // a plain array, as PGlite returns, rather than postgres.js's Result subclass
      return Array.from(rows) as unknown as T[];
    },
    async exec(text: string) {
      await sql.unsafe(text);
    },
    async transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
      if (!("begin" in sql)) throw new Error("Cannot open a transaction: already inside one");
      return (await sql.begin((tx) => fn(wrap(tx, close)))) as T;
    },
    close,
  };
}

export function openPostgres(url: string, options: { max?: number } = {}): Db {
  const sql = postgres(url, {
    // Few connections suit few cores: calls of one account queue on its rate-window row, and
    // more backends waiting on it only add lock hand-offs (DATABASE_POOL_SIZE, default 4).
    max: options.max ?? 4,
    onnotice: () => {},
    // Our statements are point lookups by key: a generic plan is right for all of them, and
    // re-planning `= ANY($1)` on every execution cost more than running it. JIT compiling
    // never pays for itself on statements this short.
    connection: { TimeZone: "UTC", plan_cache_mode: "force_generic_plan", jit: "off" },
    transform: { undefined: null },
  });
  return wrap(sql, () => sql.end({ timeout: 5 }));
}
