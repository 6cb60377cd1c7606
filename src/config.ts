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
  /** A Base JSON-RPC endpoint: a replay that took over an orphaned purchase looks there whether the transfer happened. */
  X402_RPC_URL: v.optional(Url),
  /** Atomic USDC units a paid call costs per match it bills (83334: the Agent pack's price of a match, rounded up). */
  X402_MATCH_PRICE: v.optional(v.pipe(v.string(), v.regex(/^[1-9]\d{0,14}$/, "must be a whole number of atomic units, at least 1")), "83334"),
  REACHABILITY_DAILY_LIMIT: v.optional(Int(0, 10_000_000), "10000"),
  MAINTENANCE_AT: v.optional(v.pipe(v.string(), v.regex(/^(off|([01]\d|2[0-3]):[0-5]\d)$/, "must be HH:MM (UTC) or off")), "03:00"),
  WORKER: v.optional(v.picklist(["0", "1"], "must be 0 or 1"), "1"),
  JOB_LEASE_SECONDS: v.optional(Int(1, 3600), "60"),
  JOB_CHUNK_SIZE: v.optional(Int(1, 100000), "1000"),
  LIVE_CACHE_HOURS: v.optional(Int(0, 100000), "168"),
  UPSTREAM_TIMEOUT_MS: v.optional(Int(1, 600000), "10000"),
  OAUTH_TRUSTED_CALLBACK_HOST: v.optional(v.pipe(v.string(), v.regex(/^[a-z0-9.-]+$/i, "must be a hostname (no scheme, port or path)"))),
  TRUST_PROXY: v.optional(Int(0, 10), "0"),
  WEBHOOK_ALLOW_HOSTS: v.optional(
    v.pipe(v.string(), v.regex(/^\s*[\w.:[\]-]+(\s*,\s*[\w.:[\]-]+)*\s*,?\s*$/, "must be comma-separated host names or IP addresses")),
  ),
  OUTBOUND_PROXY: v.optional(v.pipe(v.string(), v.url("must be a URL"), v.regex(/^https?:\/\//, "must be an http:// or https:// URL"))),
  WEBHOOK_RETRY_SCHEDULE: v.optional(
    v.pipe(v.string(), v.regex(/^\s*\d+(ms|s|m|h|d)\s*(,\s*\d+(ms|s|m|h|d)\s*)*$/, "must be comma-separated delays such as 0s,5s,5m,2h")),
    "0s,5s,5m,30m,2h,5h,10h,14h,20h,24h",
  ),
  WEBHOOK_TIMEOUT_MS: v.optional(Int(100, 600_000), "15000"),
  WEBHOOK_SECRET_KEY: v.optional(v.pipe(v.string(), v.minLength(32, "must be at least 32 characters"))),
  FARCASTER_HUB_URL: v.optional(Url),
  FARCASTER_HUB_API_KEY: v.optional(v.string()),
  HUB_CONCURRENCY: v.optional(Int(1, 256), "16"),
  HUB_LEASE_SECONDS: v.optional(Int(1, 3600), "30"),
  HUB_POLL_MS: v.optional(Int(10, 600_000), "250"),
});

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "0s,5s,5m" as milliseconds. */
function delays(text: string): number[] {
  return text.split(",").map((part) => {
    const [, n, unit] = /^(\d+)(ms|s|m|h|d)$/.exec(part.trim())!;
    return Number(n) * UNIT_MS[unit];
  });
}

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
    x402RpcUrl?: string;
    /** Atomic units a call paid over x402 costs per match it bills. */
    x402MatchPrice: bigint;
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
  /** Requests to URLs users gave us (docs/operating.md, "Outbound requests"). */
  outbound: {
    /** WEBHOOK_ALLOW_HOSTS: hosts exempt from the address rules that may also use http (development and tests only). */
    allowHosts: string[];
    /** OUTBOUND_PROXY: the egress proxy every such request goes through. */
    proxyUrl?: string;
  };
  webhooks: {
    /** Delay before each attempt of a delivery, the first one included (WEBHOOK_RETRY_SCHEDULE). */
    retryScheduleMs: number[];
    /** A receiver's whole answer must arrive within this (WEBHOOK_TIMEOUT_MS). */
    timeoutMs: number;
    /** Encrypts endpoint secrets at rest; when unset, a key generated on first start is kept in the database. */
    secretKey?: string;
  };
  /** FARCASTER_HUB_URL set: the server backfills from this Farcaster hub once, then follows it (src/hub/). */
  hub?: {
    url: string;
    /** Sent as x-api-key (a provider's hub). */
    apiKey?: string;
    /** Hub requests in flight at once. */
    concurrency: number;
    /** The hub lease: one process at a time syncs; a dead one's lease frees after this. */
    leaseMs: number;
    /** How long the follower waits once it has caught up with the hub. */
    pollMs: number;
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
      x402RpcUrl: e.X402_RPC_URL,
      x402MatchPrice: BigInt(e.X402_MATCH_PRICE),
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
    outbound: {
      allowHosts: (e.WEBHOOK_ALLOW_HOSTS ?? "").split(",").map((h) => h.trim()).filter((h) => h !== ""),
      proxyUrl: e.OUTBOUND_PROXY,
    },
    webhooks: { retryScheduleMs: delays(e.WEBHOOK_RETRY_SCHEDULE), timeoutMs: e.WEBHOOK_TIMEOUT_MS, secretKey: e.WEBHOOK_SECRET_KEY },
    hub: e.FARCASTER_HUB_URL
      ? {
          url: e.FARCASTER_HUB_URL.replace(/\/+$/, ""),
          apiKey: e.FARCASTER_HUB_API_KEY,
          concurrency: e.HUB_CONCURRENCY,
          leaseMs: e.HUB_LEASE_SECONDS * 1000,
          pollMs: e.HUB_POLL_MS,
        }
      : undefined,
  };
}
