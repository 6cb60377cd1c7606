// The tools' input and output schemas (valibot), converted once per process to the Standard
// Schema with JSON Schema that the MCP SDK takes.
import { toStandardJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { FarcasterUsername, TwitterHandle, WalletListBody } from "../http/schemas.ts";
import { BilledMatches, Quota, TrimmedRecord } from "./results.ts";

type StandardSchema = ReturnType<typeof toStandardJsonSchema>;

/**
 * A valibot schema as the Standard Schema the SDK takes, with its JSON Schema converted once per
 * process: servers are built per request, and converting on every tools/list would cost more
 * than the listing.
 */
function schema<T extends v.GenericSchema>(valibot: T) {
  const standard = toStandardJsonSchema(valibot);
  const json = standard["~standard"].jsonSchema;
  const cache = new Map<string, Record<string, unknown>>();
  const memo = (io: "input" | "output") => (options: { target: string }) => {
    const key = `${io}:${options.target}`;
    let hit = cache.get(key);
    if (!hit) cache.set(key, (hit = json[io](options as Parameters<typeof json.input>[0])));
    return hit;
  };
  return {
    "~standard": { ...standard["~standard"], jsonSchema: { input: memo("input"), output: memo("output") } },
  } as unknown as StandardSchema & { "~standard": { types?: { input: v.InferInput<T>; output: v.InferOutput<T> } } };
}

const Wallets = WalletListBody;
const NoArguments = v.object({});

const ResolveOutput = v.object({
  records: v.pipe(v.array(TrimmedRecord), v.description("One record per distinct address, in the order sent")),
  requested: v.number(),
  found: v.number(),
  billed_matches: BilledMatches,
  quota: Quota,
});

const EstimateOutput = v.object({
  requested: v.number(),
  in_index: v.number(),
  previously_checked_empty: v.number(),
  never_checked: v.number(),
  would_bill_estimate: v.object({ low: v.number(), high: v.number(), note: v.string() }),
  billed_matches: BilledMatches,
  quota: Quota,
});

const JobOutput = v.object({
  job: v.object({ job_id: v.string(), status: v.string(), wallets: v.number(), status_url: v.string() }),
  billed_matches: BilledMatches,
  quota: Quota,
});

const JobStatusInput = v.object({
  job_id: v.pipe(v.string(), v.description("The job_id walletid_submit_job returned")),
  offset: v.optional(
    v.pipe(v.number(), v.integer(), v.minValue(0), v.description("First result row to return (default 0); pass next_offset")),
  ),
});

const JobStatusOutput = v.object({
  job: v.looseObject({ job_id: v.string(), status: v.string() }),
  requested: v.number(),
  matched: v.pipe(v.number(), v.description("Match credits the job billed at completion")),
  results: v.optional(v.array(TrimmedRecord)),
  found: v.optional(v.number()),
  not_found: v.optional(v.number()),
  offset: v.optional(v.number()),
  limit: v.optional(v.number()),
  next_offset: v.optional(v.pipe(v.nullable(v.number()), v.description("Pass as offset for the next rows; null at the end"))),
  billed_matches: BilledMatches,
  quota: Quota,
});

const ReverseTwitterInput = v.object({
  handle: TwitterHandle,
  cursor: v.optional(v.pipe(v.string(), v.description("next_cursor of the previous page, unmodified"))),
});

const ReverseFarcasterInput = v.object({
  username: FarcasterUsername,
  cursor: v.optional(v.pipe(v.string(), v.description("next_cursor of the previous page, unmodified"))),
});

const ReverseOutput = v.object({
  records: v.array(TrimmedRecord),
  handle: v.optional(v.string()),
  username: v.optional(v.string()),
  total_count: v.number(),
  returned_count: v.number(),
  truncated: v.boolean(),
  next_cursor: v.pipe(v.nullable(v.string()), v.description("Pass back as cursor for the next page; null on the last page")),
  billed_matches: BilledMatches,
  quota: Quota,
});

const BalanceOutput = v.object({
  plan: v.string(),
  plan_limits: v.looseObject({}),
  credits: v.looseObject({}),
  rate_limits: v.looseObject({}),
  billed_matches: BilledMatches,
  quota: Quota,
});

const StatsOutput = v.object({
  total_wallets: v.number(),
  wallets_checked: v.number(),
  coverage: v.looseObject({}),
  farcaster_stats: v.looseObject({}),
  match_rates: v.looseObject({}),
  as_of: v.string(),
  billed_matches: BilledMatches,
  quota: Quota,
});

// schemas are converted once per process (see schema())
const WatchOutput = v.object({
  added: v.pipe(v.number(), v.description("Addresses newly on the watchlist")),
  already_watched: v.number(),
  total: v.pipe(v.number(), v.description("Wallets the account watches now (at most 100,000)")),
  billed_matches: BilledMatches,
  quota: Quota,
});

const UnwatchOutput = v.object({ removed: v.number(), total: v.number(), billed_matches: BilledMatches, quota: Quota });

export const SCHEMAS = {
  watch: schema(WatchOutput),
  unwatch: schema(UnwatchOutput),
  wallets: schema(Wallets),
  none: schema(NoArguments),
  resolve: schema(ResolveOutput),
  estimate: schema(EstimateOutput),
  job: schema(JobOutput),
  jobStatusIn: schema(JobStatusInput),
  jobStatus: schema(JobStatusOutput),
  reverseTwitterIn: schema(ReverseTwitterInput),
  reverseFarcasterIn: schema(ReverseFarcasterInput),
  reverse: schema(ReverseOutput),
  balance: schema(BalanceOutput),
  stats: schema(StatsOutput),
};
