// The wire shapes as valibot schemas: the routes validate requests with them, the OpenAPI document
// is generated from them, and the tests check real responses against them.
import * as v from "valibot";
import { Address } from "../index/address.ts";
import { EVIDENCE_CLASSES } from "../index/records.ts";

const Timestamp = v.pipe(v.string(), v.isoTimestamp(), v.description("ISO 8601 timestamp in UTC"));
const Count = v.pipe(v.number(), v.integer(), v.minValue(0));
const Unlimited = v.literal("unlimited");

// ---- requests ----

export const WalletParams = v.object({ address: Address });

/** POST /batch (and other list endpoints): a non-empty array of addresses. */
export const WalletListBody = v.object({
  wallets: v.pipe(
    v.array(Address),
    v.minLength(1, "wallets must not be empty"),
    v.description("Addresses to resolve; duplicates are removed (case-insensitively) before lookup and billing"),
  ),
});

export const TwitterHandle = v.pipe(
  v.string(),
  v.regex(/^@?[A-Za-z0-9_]{1,15}$/, "Invalid twitter handle: expected 1 to 15 alphanumeric characters or underscores, with or without a leading @"),
  v.description("1 to 15 letters, digits or underscores; a leading @ is stripped; case-insensitive"),
);

export const ReverseTwitterParams = v.object({ handle: TwitterHandle });

export const FarcasterUsername = v.pipe(
  v.string(),
  v.regex(
    /^[A-Za-z0-9][A-Za-z0-9.-]{0,31}$/,
    "Invalid farcaster username: expected 1 to 32 letters, digits, dots or hyphens, starting with a letter or digit",
  ),
  v.description("1 to 32 letters, digits, dots or hyphens, starting with a letter or digit; lowercased before matching; .eth names work unchanged"),
);

export const ReverseFarcasterParams = v.object({ username: FarcasterUsername });

export const ReverseQuery = v.object({
  cursor: v.optional(
    v.pipe(v.string(), v.description("meta.next_cursor of the previous page, passed back unmodified; omitted for the first page")),
  ),
});

export const JobParams = v.object({
  id: v.pipe(v.string(), v.uuid("Job not found"), v.description("The job_id returned at submission")),
});

export const JobQuery = v.object({
  offset: v.optional(
    v.pipe(v.string(), v.regex(/^\d{1,10}$/, "must be a whole number"), v.description("First result row of the page (default 0)")),
  ),
  limit: v.optional(
    v.pipe(v.string(), v.regex(/^\d{1,4}$/, "must be a whole number"), v.description("Rows a page, 1 to 1000 (default and maximum 1000)")),
  ),
});

export const IdempotencyKey = v.pipe(
  v.string(),
  v.regex(/^[\x21-\x7e]{1,255}$/, "Idempotency-Key must be 1 to 255 visible ASCII characters"),
  v.description(
    "Optional. 1 to 255 visible ASCII characters, kept 24 hours per account: a retry with the same key and body (compared as canonical JSON: whitespace and key order do not matter) replays the stored response unbilled; the same key with another body is 409 IDEMPOTENCY_KEY_REUSED. While a request with the key is still running, another waits for its answer and then replays it or is refused; it never runs",
  ),
);

export const UsageQuery = v.object({
  period: v.optional(
    v.pipe(v.picklist(["day", "week", "month"]), v.description("Rolling period: day = 24 hours, week = 7 days, month = 30 days")),
    "month",
  ),
});

// ---- responses ----

export const EvidenceClass = v.picklist(EVIDENCE_CLASSES);

const Twitter = v.strictObject({
  handle: v.pipe(v.string(), v.description("Handle without a leading @")),
  url: v.string(),
  verified: v.optional(v.boolean()),
  self_declared: v.optional(v.pipe(v.literal(true), v.description("Present only when the handle rests on text the owner typed into their own record"))),
  reachable: v.optional(v.boolean()),
  reachability: v.optional(v.picklist(["live", "suspended", "deactivated", "unchecked"])),
  reachability_checked_at: v.optional(Timestamp),
  also: v.optional(v.strictObject({ handle: v.string(), url: v.string(), source: EvidenceClass })),
});

const Farcaster = v.strictObject({
  username: v.string(),
  url: v.string(),
  followers: v.optional(Count),
  fid: Count,
  verified: v.optional(v.boolean()),
});

const Agent = v.strictObject({
  is_agent: v.optional(v.boolean()),
  name: v.optional(v.string()),
  framework: v.optional(v.string()),
  type: v.optional(v.string()),
  token_symbol: v.optional(v.string()),
  verified: v.optional(v.boolean()),
});

const identityEntries = {
  wallet: v.pipe(v.string(), v.description("Lowercased address")),
  ens_name: v.optional(v.string()),
  twitter: v.optional(Twitter),
  farcaster: v.optional(Farcaster),
  lens: v.optional(v.string()),
  github: v.optional(v.string()),
  sources: v.optional(v.pipe(v.array(EvidenceClass), v.description("Evidence classes; omitted where nothing classifiable backs the record"))),
};

export const WalletRecord = v.strictObject({
  ...identityEntries,
  agent: v.optional(Agent),
  quality: v.strictObject({ score: v.pipe(v.number(), v.minValue(0), v.maxValue(100)), last_verified: v.optional(Timestamp) }),
});

export const BatchRow = v.strictObject(identityEntries);

export const WalletLookupResponse = v.strictObject({
  data: v.nullable(WalletRecord),
  meta: v.strictObject({
    wallet: v.string(),
    found: v.boolean(),
    last_updated: v.optional(Timestamp),
    stale: v.optional(v.boolean()),
    checked_at: v.optional(
      v.pipe(v.nullable(Timestamp), v.description("Only when found is false: when the wallet was checked and found empty, or null when never seen")),
    ),
  }),
});

export const BatchResponse = v.strictObject({
  data: v.array(v.nullable(BatchRow)),
  meta: v.strictObject({ requested: Count, found: Count, not_found: Count, matched: Count }),
});

export const ReverseRow = v.strictObject({
  ...identityEntries,
  quality_score: v.pipe(v.number(), v.minValue(0), v.maxValue(100), v.description("Same scale as quality.score")),
});

const reverseMeta = {
  total_count: v.pipe(Count, v.description("All matches in the index")),
  returned_count: Count,
  truncated: v.pipe(v.boolean(), v.description("True when more pages exist")),
  next_cursor: v.pipe(v.nullable(v.string()), v.description("Opaque; null on the last page")),
};

export const ReverseTwitterResponse = v.strictObject({
  data: v.array(ReverseRow),
  meta: v.strictObject({ handle: v.pipe(v.string(), v.description("Lowercased, without @")), ...reverseMeta }),
});

export const ReverseFarcasterResponse = v.strictObject({
  data: v.array(ReverseRow),
  meta: v.strictObject({ username: v.pipe(v.string(), v.description("Lowercased")), ...reverseMeta }),
});

export const EstimateResponse = v.strictObject({
  data: v.strictObject({
    requested: v.pipe(Count, v.description("Distinct addresses")),
    in_index: v.pipe(Count, v.description("Holding at least one identity of any kind")),
    previously_checked_empty: Count,
    never_checked: Count,
    would_bill_estimate: v.strictObject({
      low: v.pipe(Count, v.description("Exactly what a batch of this list would bill now")),
      high: v.pipe(Count, v.description("low plus the never-checked wallets at the measured overall match rate: the job-shaped ceiling")),
      note: v.string(),
    }),
  }),
  meta: v.strictObject({ generated_at: Timestamp, billable_predicate: v.literal("x_or_farcaster") }),
});

const JobStatus = v.picklist(["pending", "processing", "completed", "failed"]);

export const JobSubmitResponse = v.strictObject({
  data: v.strictObject({
    job_id: v.pipe(v.string(), v.uuid()),
    status: v.pipe(JobStatus, v.description("pending, or completed (or failed) when 10 addresses or fewer ran inline")),
    wallets: v.pipe(Count, v.description("Unique accepted addresses")),
    status_url: v.pipe(v.string(), v.url(), v.description("Absolute URL of GET /jobs/{id}, the authority on the job")),
  }),
  meta: v.strictObject({ submitted_at: Timestamp }),
});

export const JobResultRow = v.strictObject({
  ...identityEntries,
  farcaster: v.optional(
    v.strictObject({
      username: v.string(),
      url: v.string(),
      followers: v.optional(v.pipe(v.nullable(Count), v.description("null for accounts running on the free allowance"))),
      fid: Count,
      verified: v.optional(v.boolean()),
    }),
  ),
});

export const JobPollResponse = v.strictObject({
  data: v.strictObject({
    job_id: v.pipe(v.string(), v.uuid()),
    status: JobStatus,
    progress: v.strictObject({
      processed: Count,
      total: Count,
      stage: v.pipe(v.nullable(v.picklist(["index", "cache", "live", "onchain"])), v.description("null between stages")),
    }),
    created_at: Timestamp,
    started_at: v.nullable(Timestamp),
    completed_at: v.nullable(Timestamp),
    error: v.optional(v.pipe(v.string(), v.description("Failed jobs only: nothing was billed; submit again"))),
    wallets: v.optional(v.pipe(v.array(v.string()), v.description("Completed jobs: this page of the deduplicated, lowercased submission, in processing order"))),
    results: v.optional(v.pipe(v.array(v.nullable(JobResultRow)), v.description("Aligned by position with wallets; null where nothing is attached"))),
  }),
  meta: v.strictObject({
    requested: Count,
    matched: v.pipe(Count, v.description("Matches billed for the whole job, once, at completion")),
    found: v.optional(Count),
    not_found: v.optional(Count),
    offset: v.optional(Count),
    limit: v.optional(Count),
    next_offset: v.optional(v.pipe(v.nullable(Count), v.description("Offset of the next page; null on the last"))),
  }),
});

export const StatsResponse = v.strictObject({
  data: v.strictObject({
    total_wallets: Count,
    wallets_checked: Count,
    coverage: v.strictObject({ twitter: Count, farcaster: Count, ens: Count, lens: Count, github: Count }),
    farcaster_stats: v.strictObject({ avg_followers: v.number(), max_followers: v.number() }),
    match_rates: v.strictObject({
      measured_on: v.string(),
      basis: v.string(),
      overall_either_pct: v.number(),
      by_chain: v.record(
        v.string(),
        v.strictObject({ collections: Count, holders: Count, farcaster_pct: v.number(), x_pct: v.number(), either_pct: v.number() }),
      ),
    }),
  }),
  meta: v.strictObject({ generated_at: Timestamp, as_of: Timestamp }),
});

const Limit = v.union([Count, Unlimited]);
const RateWindow = v.nullable(v.strictObject({ limit: Limit, remaining: Limit, reset_at: Timestamp }));

export const UsageResponse = v.strictObject({
  data: v.strictObject({
    key: v.strictObject({
      id: v.string(),
      name: v.optional(v.string()),
      prefix: v.string(),
      plan: v.string(),
      created_at: Timestamp,
      last_used_at: Timestamp,
    }),
    plan_limits: v.strictObject({ requests_per_minute: Limit, requests_per_day: Limit, requests_per_month: Limit, max_batch_size: Limit }),
    rate_limits: v.strictObject({ minute: RateWindow, day: RateWindow, month: RateWindow }),
    credits: v.strictObject({
      available: v.nullable(v.number()),
      unmetered: v.boolean(),
      on_free_allowance: v.boolean(),
      free_window_resets_at: v.nullable(Timestamp),
    }),
    usage: v.strictObject({
      period: v.picklist(["day", "week", "month"]),
      total_requests: Count,
      total_credits: Count,
      total_wallets: Count,
      avg_latency_ms: v.number(),
      error_rate: v.pipe(v.number(), v.description("A percentage: 0.24 means 0.24%")),
      requests_by_endpoint: v.pipe(v.record(v.string(), Count), v.description("Keyed by route template, e.g. /v1/wallet/{address}")),
      requests_by_day: v.array(v.strictObject({ date: v.string(), count: Count, credits: Count })),
    }),
  }),
  meta: v.strictObject({ generated_at: Timestamp }),
});

export const HealthResponse = v.strictObject({ status: v.literal("ok") });

/** `{error, code}` where code is one of those the status can carry on this endpoint. */
/** RFC 6749 error responses of the OAuth endpoints. */
export function oauthErrorSchema(codes: string[]) {
  return v.looseObject({
    error: v.picklist(codes),
    error_description: v.pipe(v.string(), v.description("Human-readable message")),
    token_rotated: v.optional(v.pipe(v.literal(true), v.description("503 only: the refresh token was just rotated by a racing request; do not resend it"))),
  });
}

export function errorSchema(codes: string[]) {
  return v.strictObject({
    error: v.pipe(v.string(), v.description("Human-readable message: the thing, then the reason")),
    code: v.picklist(codes),
  });
}
