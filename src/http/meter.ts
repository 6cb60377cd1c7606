// Authenticates a caller and meters its call in one database round trip (meter_calls, grouped with
// the calls in flight; meter_call for idempotent calls), and shapes the rate-limit headers and usage
// of every metered call. No hono here: a REST request meters through src/http/request-meter.ts.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { sha256Hex } from "../ledger/keys.ts";
import type { UsageRecorder } from "../ledger/usage.ts";
import type { IdentityRow } from "../index/records.ts";
import { ApiError } from "./errors.ts";
import { meterGrouped } from "./meter-group.ts";
import { uuidv7 } from "../ledger/call-keys.ts";
import { metrics } from "../observe/metrics.ts";

export interface Window {
  name: "minute" | "day" | "month";
  limit: number | null;
  used: number;
  resetAt: Date;
}

export interface Metered {
  keyId: string;
  accountId: string;
  accountBound: boolean;
  plan: string;
  maxBatchSize: number | null;
  windows: Window[];
  /** Balance before this call's debit; null when the account is unmetered. */
  available: number | null;
  unmetered: boolean;
  matched: number;
  /** Rate-limit units this call spent (0 when it was refused). */
  units: number;
  wallets: number;
  route: string;
  replay?: { requestHash: string; status: number; body: string };
  /** The Idempotency-Key claim this call holds: store the response under it, or release it. */
  claim?: { idempotencyKey: string; token: string };
  /** Identity rows of the addresses asked for with `lookup`, read in the same round trip. */
  identities: IdentityRow[];
}

export interface MeterOptions {
  /** Route template for usage, e.g. /v1/wallet/{address}. */
  route: string;
  weight: number;
  needsCredits: boolean;
  /** Checked against the plan's max_batch_size before anything is counted. */
  listSize?: number;
  /** Deduplicated addresses to bill for x_or_farcaster matches. */
  billWallets?: string[];
  /**
   * How many of `billWallets` hold a twitter or farcaster link, when the caller has read their
   * identity rows itself (a reverse page): billed as counted, without probing the links again.
   * Bounded by `billWallets`; calls metered one by one (an Idempotency-Key, an account at its
   * limits) count them in the metering statement instead.
   */
  billMatches?: number;
  callKey?: string;
  /** The Idempotency-Key and the hash of the request's canonical form. */
  idempotency?: { key: string; requestHash: string };
  wallets?: number;
  /** Addresses whose identity rows to read when the call is let through. */
  lookup?: string[];
}

export interface MeterDeps {
  db: Db;
  now: () => Date;
  publicUrl: string;
}

type MeterRow = {
  outcome: "unauthorized" | "replay" | "in_flight" | "batch_too_large" | "rate_limited" | "no_credits" | "ok";
  key_id: string;
  account_id: string;
  account_bound: boolean;
  plan: string;
  limit_minute: number | null;
  limit_day: number | null;
  limit_month: number | null;
  max_batch_size: number | null;
  used_minute: number;
  used_day: number;
  used_month: number;
  available: number | null;
  unmetered: boolean;
  matched: number;
  idem_request_hash: string | null;
  idem_status: number | null;
  idem_body: string | null;
} & Partial<IdentityRow>;

/**
 * RFC 6750's challenge on every REST 401: `error="invalid_token"` when a credential was sent and
 * is not a working key, none when the request carried no credential at all.
 */
export const UNAUTHORIZED = (sent: boolean) =>
  new ApiError(401, "UNAUTHORIZED", "Missing or invalid API key: send Authorization: Bearer <API_KEY>", {
    "WWW-Authenticate": sent
      ? 'Bearer realm="walletid", error="invalid_token", error_description="The API key is invalid or revoked"'
      : 'Bearer realm="walletid"',
  });

/** The credential of a request: `Bearer <key>` or the bare key. */
export function credentialOf(req: Request): string | undefined {
  const header = req.headers.get("authorization")?.trim();
  if (!header) return undefined;
  const match = /^bearer\s+(.+)$/i.exec(header);
  return (match ? match[1] : header).trim();
}

// Digests of recently seen keys: hashing costs more than the rest of the request's own work,
// and the same few keys call again and again. Bounded; cleared whole when full.
const digests = new Map<string, string>();

export async function keyDigest(credential: string): Promise<string> {
  let digest = digests.get(credential);
  if (digest === undefined) {
    digest = await sha256Hex(credential);
    if (digests.size >= 10_000) digests.clear();
    digests.set(credential, digest);
  }
  return digest;
}

export function windowsAt(now: Date): { minute: Date; day: Date; month: Date } {
  const t = now.getTime();
  const minute = new Date(t - (t % 60_000) + 60_000);
  const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { minute, day, month };
}

/**
 * How long an Idempotency-Key claim holds without an answer: a request that died holding it
 * (its process killed) blocks the key this long, then the next request with the key runs.
 */
export const IDEMPOTENCY_CLAIM_SECONDS = 15;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The same metering for a caller known by its key digest (the MCP server: API keys and OAuth
 * connections). `onMetered` receives the result once the key is known, refused calls included.
 */
export async function meterKey(
  deps: MeterDeps,
  digest: string,
  options: MeterOptions,
  onMetered: (m: Metered) => void,
): Promise<Metered> {
  const bill = options.billWallets && options.billWallets.length > 0 ? options.billWallets : null;
  const lookup = options.lookup && options.lookup.length > 0 ? options.lookup : null;
  let now: Date;
  let row: MeterRow | undefined;
  let identities: IdentityRow[];
  let claimToken: string | null = null;
  if (!options.idempotency && !options.callKey) {
    // the common call: metered with the others in flight on this process (group commit)
    ({ outcome: row, identities, now } = await meterGrouped<MeterRow>(deps.db, deps.now, {
      digest,
      weight: options.weight,
      needsCredits: options.needsCredits,
      listSize: options.listSize ?? null,
      bill,
      matched: bill ? (options.billMatches ?? null) : null,
      lookup,
    }));
  } else {
    claimToken = options.idempotency ? crypto.randomUUID() : null;
    let rows: MeterRow[];
    ({ rows, now } = await meterClaimed(deps, digest, options, { bill, lookup, claimToken }));
    row = rows[0];
    identities = rows[0]?.address ? (rows as IdentityRow[]) : [];
  }
  // meter_call and meter_calls answer a row for every call; none was seen under a
  // pg_terminate_backend storm (an answer cut short): the database is unavailable, not the request
  if (!row) throw Object.assign(new Error("Cannot meter the call: the database's answer was cut short"), { code: "CONNECTION_CLOSED" });
  if (row.outcome === "unauthorized") {
    metrics.metering.inc({ outcome: "unauthorized" });
    throw UNAUTHORIZED(true);
  }

  const resets = windowsAt(now);
  const metered: Metered = {
    keyId: row.key_id,
    accountId: row.account_id,
    accountBound: row.account_bound,
    plan: row.plan,
    maxBatchSize: row.max_batch_size,
    windows: [
      { name: "minute", limit: row.limit_minute, used: row.used_minute, resetAt: resets.minute },
      { name: "day", limit: row.limit_day, used: row.used_day, resetAt: resets.day },
      { name: "month", limit: row.limit_month, used: row.used_month, resetAt: resets.month },
    ],
    available: row.available,
    unmetered: row.unmetered,
    matched: row.matched,
    units: row.outcome === "ok" ? options.weight : 0,
    wallets: options.wallets ?? 0,
    route: options.route,
    identities: row.outcome === "ok" ? identities : [],
  };
  onMetered(metered);
  metrics.metering.inc({ outcome: row.outcome });
  if (row.outcome === "ok" && row.matched > 0) metrics.billed.inc({}, row.matched);

  switch (row.outcome) {
    case "replay":
      metered.replay = { requestHash: row.idem_request_hash!, status: row.idem_status!, body: row.idem_body! };
      return metered;
    case "ok":
      if (options.idempotency && claimToken) metered.claim = { idempotencyKey: options.idempotency.key, token: claimToken };
      return metered;
    case "batch_too_large":
      throw new ApiError(
        400,
        "BATCH_SIZE_EXCEEDED",
        `Too many addresses: ${options.listSize} sent, the per-request maximum on the ${row.plan} plan is ${row.max_batch_size}; split the list into requests of at most ${row.max_batch_size}`,
      );
    case "rate_limited": {
      const blocking = metered.windows.filter((w) => w.limit !== null && w.used + options.weight > w.limit);
      const until = Math.max(...blocking.map((w) => w.resetAt.getTime()));
      const names = blocking.map((w) => w.name).join(" and ");
      const left = blocking.map((w) => `${Math.max(0, w.limit! - w.used)} of ${w.limit} remain in the ${w.name} window`).join(", ");
      const weighs = `this request weighs ${options.weight} unit${options.weight === 1 ? "" : "s"}`;
      throw new ApiError(429, "RATE_LIMITED", `Rate limit reached on the ${names} window: ${weighs} and ${left}; retry after it resets`, {
        "Retry-After": String(Math.max(1, Math.ceil((until - now.getTime()) / 1000))),
      });
    }
    case "no_credits":
      throw new ApiError(
        402,
        "NO_CREDITS",
        `No match credits left: buy a pack at ${deps.publicUrl}/api/x402/buy or add credits to the account`,
      );
    default:
      return metered;
  }
}

/**
 * A call holding an Idempotency-Key (or a caller's own debit key) is metered alone by meter_call:
 * its claim is per call. While another request holds the key, asks again until it answers (then
 * this one replays it or is refused as another body) or its claim expires (then this one runs).
 */
async function meterClaimed(
  deps: MeterDeps,
  digest: string,
  options: MeterOptions,
  call: { bill: string[] | null; lookup: string[] | null; claimToken: string | null },
): Promise<{ rows: MeterRow[]; now: Date }> {
  const callKey = options.callKey ?? (call.bill ? `call:${uuidv7()}` : null);
  const giveUpAt = performance.now() + (IDEMPOTENCY_CLAIM_SECONDS + 5) * 1000;
  let pause = 20;
  for (;;) {
    const now = deps.now();
    const rows = await deps.db.query<MeterRow>(sql("meter_call"), [
      digest,
      now,
      options.weight,
      options.needsCredits,
      options.listSize ?? null,
      callKey,
      call.bill,
      options.idempotency?.key ?? null,
      options.idempotency?.requestHash ?? null,
      call.claimToken,
      IDEMPOTENCY_CLAIM_SECONDS,
      call.lookup,
    ]);
    if (rows[0]?.outcome !== "in_flight") return { rows, now };
    if (performance.now() > giveUpAt) {
      throw new ApiError(
        409,
        "IDEMPOTENCY_KEY_REUSED",
        "Idempotency-Key is in use by a request still in progress: retry once it has been answered",
        { "Retry-After": "1" },
      );
    }
    await sleep(pause);
    pause = Math.min(250, pause * 1.5);
  }
}

/** Stores the response of a call holding an Idempotency-Key claim: later calls replay it. */
export async function storeIdempotentResponse(
  deps: MeterDeps,
  metered: Metered,
  response: { status: number; body: string },
): Promise<void> {
  if (!metered.claim) return;
  await deps.db.query(sql("idempotent_responses_complete"), [
    metered.accountId,
    metered.claim.idempotencyKey,
    metered.claim.token,
    response.status,
    response.body,
    deps.now(),
  ]);
}

/** Gives back the claim of a call that failed after metering; a failure to do so is only logged by the caller. */
export async function releaseIdempotencyClaim(deps: MeterDeps, metered: Metered): Promise<void> {
  if (!metered.claim) return;
  await deps.db.query(sql("idempotent_responses_release"), [metered.accountId, metered.claim.idempotencyKey, metered.claim.token]);
}

/** How a domain function meters its caller: a REST request, or an MCP caller (src/mcp/). */
export interface Meterer {
  /** The caller's key digest, or null when it sent nothing that can be a key. */
  digest(): Promise<string | null>;
  meter(options: MeterOptions): Promise<Metered>;
}

/**
 * Bad input refused after the key is known: authenticated at no cost, so the refusal carries
 * the rate-limit headers and spends nothing. Returns the error for the caller to throw.
 */
export async function refusal(meterer: Meterer, route: string, error: ApiError): Promise<ApiError> {
  await meterer.meter({ route, weight: 0, needsCredits: false });
  return error;
}

/** A window's length in seconds: a calendar month is as long as the month it counts. */
function windowSeconds(w: Window): number {
  if (w.name === "minute") return 60;
  if (w.name === "day") return 86_400;
  const end = w.resetAt;
  return (end.getTime() - Date.UTC(end.getUTCFullYear(), end.getUTCMonth() - 1, 1)) / 1000;
}

/**
 * The IETF fields of draft-ietf-httpapi-ratelimit-headers-11 (structured-field lists, one named
 * policy per limited window): `RateLimit-Policy` gives quota `q` and window `w` in seconds,
 * `RateLimit` the units remaining `r` and the seconds `t` until that window resets.
 */
function ietfRateLimitHeaders(limited: Window[], nowMs: number): Record<string, string> {
  return {
    "RateLimit-Policy": limited.map((w) => `"${w.name}";q=${w.limit};w=${windowSeconds(w)}`).join(", "),
    RateLimit: limited
      .map((w) => `"${w.name}";r=${Math.max(0, w.limit! - w.used)};t=${Math.max(0, Math.ceil((w.resetAt.getTime() - nowMs) / 1000))}`)
      .join(", "),
  };
}

/**
 * The window closest to exhaustion (lowest remaining, the shortest window on a tie) as
 * `X-RateLimit-*` (the interface), and every limited window in the IETF `RateLimit-Policy` and `RateLimit`.
 */
export function rateLimitHeaders(m: Metered, now: Date): Record<string, string> | undefined {
  let chosen: { w: Window; remaining: number } | undefined;
  for (const w of m.windows) {
    if (w.limit === null) continue;
    const remaining = Math.max(0, w.limit - w.used);
    if (!chosen || remaining < chosen.remaining) chosen = { w, remaining };
  }
  if (!chosen) return undefined;
  return {
    ...ietfRateLimitHeaders(m.windows.filter((w) => w.limit !== null), now.getTime()),
    "X-RateLimit-Limit": String(chosen.w.limit),
    "X-RateLimit-Remaining": String(chosen.remaining),
    "X-RateLimit-Reset": String(Math.floor(chosen.w.resetAt.getTime() / 1000)),
  };
}

/** The usage event of a metered call (REST request or MCP tool call), under its route template. */
export function recordUsage(usage: UsageRecorder, m: Metered, outcome: { status: number; latencyMs: number; at: Date }): void {
  usage.record({
    accountId: m.accountId,
    keyId: m.keyId,
    route: m.route,
    status: outcome.status,
    latencyMs: outcome.latencyMs,
    units: m.units,
    wallets: m.wallets,
    matches: outcome.status < 400 ? m.matched : 0,
    at: outcome.at,
  });
}
