// Reads and validates the environment once; a bad value stops the start with one clear line.
import * as v from "valibot";
import { DEFAULT_DB_TIMEOUTS, type DbTimeouts } from "./db/types.ts";

const Int = (min: number, max: number) =>
  v.pipe(v.string(), v.regex(/^\d+$/, "must be a whole number"), v.transform(Number), v.minValue(min), v.maxValue(max));

const Url = v.pipe(v.string(), v.url("must be a URL"));

const EnvSchema = v.object({
  PORT: v.optional(Int(0, 65535), "8787"),
  HOST: v.optional(v.string(), "0.0.0.0"),
  PUBLIC_URL: v.optional(Url),
  DATABASE_URL: v.optional(v.pipe(v.string(), v.regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL"))),
  DATABASE_POOL_SIZE: v.optional(Int(1, 100), "4"),
  DATABASE_POOLER: v.optional(v.picklist(["auto", "none", "transaction"], "must be auto, none or transaction"), "auto"),
  DATABASE_DIRECT_URL: v.optional(v.pipe(v.string(), v.regex(/^postgres(ql)?:\/\//, "must be a postgres:// URL"))),
  DB_CONNECT_TIMEOUT_MS: v.optional(Int(100, 600_000), String(DEFAULT_DB_TIMEOUTS.connectMs)),
  DB_STATEMENT_TIMEOUT_MS: v.optional(Int(100, 3_600_000), String(DEFAULT_DB_TIMEOUTS.statementMs)),
  DB_IDLE_TIMEOUT_MS: v.optional(Int(100, 3_600_000), String(DEFAULT_DB_TIMEOUTS.idleMs)),
  DATA_DIR: v.optional(v.string(), ".data"),
  STALE_AFTER_DAYS: v.optional(Int(1, 3650), "30"),
  LOG_LEVEL: v.optional(v.picklist(["debug", "info", "warn", "error", "silent"]), "info"),
  LOG_FORMAT: v.optional(v.picklist(["json", "pretty"]), "json"),
  SHUTDOWN_GRACE_MS: v.optional(Int(0, 600_000), "10000"),
  METRICS: v.optional(v.picklist(["on", "off"]), "on"),
  METRICS_TOKEN: v.optional(v.pipe(v.string(), v.minLength(16, "must be at least 16 characters"))),
  NEYNAR_API_URL: v.optional(Url),
  NEYNAR_API_KEY: v.optional(v.string()),
  ETH_RPC_URL: v.optional(Url),
  X_API_URL: v.optional(Url),
  X_BEARER_TOKEN: v.optional(v.string()),
  X402_FACILITATOR_URL: v.optional(Url),
  CURSOR_SECRET: v.optional(v.pipe(v.string(), v.minLength(32, "must be at least 32 characters"))),
  X402_PAY_TO: v.optional(v.pipe(v.string(), v.regex(/^0x[0-9a-fA-F]{40}$/, "must be an address"))),
  REACHABILITY_DAILY_LIMIT: v.optional(Int(0, 10_000_000), "10000"),
  MAINTENANCE_AT: v.optional(v.pipe(v.string(), v.regex(/^(off|([01]\d|2[0-3]):[0-5]\d)$/, "must be HH:MM (UTC) or off")), "03:00"),
  WORKER: v.optional(v.picklist(["0", "1"], "must be 0 or 1"), "1"),
  JOB_LEASE_SECONDS: v.optional(Int(1, 3600), "60"),
  JOB_CHUNK_SIZE: v.optional(Int(1, 100000), "1000"),
  LIVE_CACHE_HOURS: v.optional(Int(0, 100000), "168"),
  UPSTREAM_TIMEOUT_MS: v.optional(Int(1, 600000), "10000"),
  OAUTH_TRUSTED_CALLBACK_HOST: v.optional(v.pipe(v.string(), v.regex(/^[a-z0-9.-]+$/i, "must be a hostname (no scheme, port or path)"))),
  TRUST_PROXY: v.optional(Int(0, 10), "0"),
});

export interface Config {
  port: number;
  host: string;
  publicUrl: string;
  databaseUrl?: string;
  databasePoolSize: number;
  /**
   * transaction: DATABASE_URL is a pooler in transaction mode (PgBouncer); auto (default) detects
   * one at the first connection; none: PostgreSQL itself.
   */
  databasePooler: "auto" | "none" | "transaction";
  /** PostgreSQL itself, when DATABASE_URL is a pooler: job workers LISTEN there (without it they poll). */
  databaseDirectUrl?: string;
  databaseTimeouts: DbTimeouts;
  dataDir: string;
  staleAfterDays: number;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** json: one object per line (default); pretty: a readable line for a terminal. */
  logFormat: "json" | "pretty";
  /** On SIGTERM, how long requests in flight may take before their connections are cut. */
  shutdownGraceMs: number;
  /** METRICS=off: requests are not counted or timed (GET /metrics still answers, with the rest). */
  metrics: boolean;
  /** Bearer token for GET /metrics; when unset, /metrics answers loopback callers only. */
  metricsToken?: string;
  /**
   * Proxies in front of the server whose X-Forwarded-For entries are trusted: 0 takes the
   * connection's peer as the client address, N the address N hops back through the header.
   */
  trustProxy: number;
  /** Signs reverse-lookup cursors; when unset, a secret generated on first start is kept in the database. */
  cursorSecret?: string;
  upstreams: {
    neynarApiUrl?: string;
    neynarApiKey?: string;
    ethRpcUrl?: string;
    xApiUrl?: string;
    xBearerToken?: string;
    x402FacilitatorUrl?: string;
    x402PayTo?: string;
  };
  maintenance: {
    /** daily UTC time of the maintenance tasks; undefined when MAINTENANCE_AT=off (run them by `admin maintain`) */
    at?: { hour: number; minute: number };
    /** twitter handles re-checked against the X API per UTC day */
    reachabilityDailyLimit: number;
  };
  jobs: {
    /** Run a job worker inside the server process. */
    worker: boolean;
    leaseSeconds: number;
    chunkSize: number;
    cacheTtlHours: number;
    upstreamTimeoutMs: number;
  };
  oauth: {
    /** The one hosted-client domain whose callback receives OAuth errors and declines. */
    trustedCallbackHost?: string;
  };
}

export function readConfig(env: Record<string, string | undefined>): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ""));
  const result = v.safeParse(EnvSchema, present);
  if (!result.success) {
    const issue = result.issues[0];
    const key = issue.path?.map((p) => String(p.key)).join(".") ?? "environment";
    throw new Error(`Cannot start: ${key} ${issue.message}`);
  }
  const e = result.output;
  return {
    port: e.PORT,
    host: e.HOST,
    publicUrl: (e.PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, ""),
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    databasePooler: e.DATABASE_POOLER,
    databaseDirectUrl: e.DATABASE_DIRECT_URL,
    databaseTimeouts: { connectMs: e.DB_CONNECT_TIMEOUT_MS, statementMs: e.DB_STATEMENT_TIMEOUT_MS, idleMs: e.DB_IDLE_TIMEOUT_MS },
    dataDir: e.DATA_DIR,
    staleAfterDays: e.STALE_AFTER_DAYS,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    metricsToken: e.METRICS_TOKEN,
    metrics: e.METRICS === "on",
    cursorSecret: e.CURSOR_SECRET,
    trustProxy: e.TRUST_PROXY,
    upstreams: {
      neynarApiUrl: e.NEYNAR_API_URL,
      neynarApiKey: e.NEYNAR_API_KEY,
      ethRpcUrl: e.ETH_RPC_URL,
      xApiUrl: e.X_API_URL,
      xBearerToken: e.X_BEARER_TOKEN,
      x402FacilitatorUrl: e.X402_FACILITATOR_URL,
      x402PayTo: e.X402_PAY_TO,
    },
    maintenance: {
      at: e.MAINTENANCE_AT === "off" ? undefined : { hour: Number(e.MAINTENANCE_AT.slice(0, 2)), minute: Number(e.MAINTENANCE_AT.slice(3)) },
      reachabilityDailyLimit: e.REACHABILITY_DAILY_LIMIT,
    },
    jobs: {
      worker: e.WORKER === "1",
      leaseSeconds: e.JOB_LEASE_SECONDS,
      chunkSize: e.JOB_CHUNK_SIZE,
      cacheTtlHours: e.LIVE_CACHE_HOURS,
      upstreamTimeoutMs: e.UPSTREAM_TIMEOUT_MS,
    },
    oauth: { trustedCallbackHost: e.OAUTH_TRUSTED_CALLBACK_HOST?.toLowerCase() },
  };
}
