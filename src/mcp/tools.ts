// The eight walletid tools on a fresh McpServer per request: each calls the domain function its
// REST route calls, is metered and recorded under that route's template, and turns refusals into
// tool errors an agent can act on.
import { McpServer, type CallToolResult } from "@modelcontextprotocol/server";
import { toStandardJsonSchema } from "@valibot/to-json-schema";
import * as v from "valibot";
import { normalizeAddressList } from "../index/address.ts";
import { ApiError } from "../http/errors.ts";
import { isDatabaseUnavailable } from "../db/errors.ts";
import { meterKey, recordUsage, type Metered, type Meterer } from "../http/meter.ts";
import { FarcasterUsername, TwitterHandle, WalletListBody } from "../http/schemas.ts";
import { accountBalance, indexStats, rateLimitsJson } from "../routes/account.ts";
import { lookupBatch } from "../routes/batch.ts";
import { meterDeps, type RouteDeps } from "../routes/deps.ts";
import { estimateList } from "../routes/estimate.ts";
import { jobStatus, meterJobPoll, submitJob } from "../routes/jobs.ts";
import { reverseFarcaster, reverseTwitter, type ReversePage } from "../routes/reverse.ts";
import { lookupWallet } from "../routes/wallet.ts";
import type { JobRunDeps } from "../jobs/run.ts";
import { meteringKeyHash, type McpCaller } from "./credentials.ts";
import { BilledMatches, Quota, quotaOf, TrimmedRecord, trimmedRecord } from "./results.ts";

export const SERVER_INFO = { name: "walletid", version: "1.0.0" };

/** Rows of a job's results one walletid_job_status call returns. */
export const JOB_STATUS_ROWS = 100;

/** One pack: what an out-of-credits tool error quotes. */
const PACK_PRICE = "1.00 dollar (USDC) for 12 match credits, valid 12 months";

export interface McpDeps {
  routes: RouteDeps;
  jobs: JobRunDeps;
}

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
const SCHEMAS = {
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

const SPENDING = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } as const;
const FREE = { readOnlyHint: true, openWorldHint: false } as const;

/** What a refusal tells the agent to do. */
function toolErrorText(err: ApiError, publicUrl: string): string {
  switch (err.code) {
    case "UNAUTHORIZED":
      return "Invalid API key: the key sent is not a walletid key or has been revoked. Check the Authorization header (Bearer wid_live_…) in this MCP server's configuration.";
    case "NO_CREDITS":
      return `No match credits left (NO_CREDITS): buy a pack, ${PACK_PRICE}, at POST ${publicUrl}/api/x402/buy (x402, payable in USDC on Base), or add credits to the account. walletid_account_balance, walletid_job_status, walletid_estimate_list and walletid_index_stats keep working.`;
    case "RATE_LIMITED":
      return `${err.message} (RATE_LIMITED): wait ${err.headers["Retry-After"]} seconds before calling again.`;
    default:
      return `${err.message} (${err.code})`;
  }
}

function textResult(structured: Record<string, unknown>): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured };
}

/**
 * Runs one tool call: meters the caller through `meterer`, records the call's usage under the
 * REST route template it used, and turns every failure into a tool error.
 */
async function runTool(
  deps: McpDeps,
  caller: McpCaller,
  work: (meterer: Meterer) => Promise<Record<string, unknown>>,
): Promise<CallToolResult> {
  const { routes } = deps;
  const started = performance.now();
  let metered: Metered | undefined;
  const hash = meteringKeyHash(caller);
  const meterer: Meterer = {
    digest: async () => hash,
    meter: async (options) => {
      if (hash === null) throw new ApiError(401, "UNAUTHORIZED", "Missing or invalid API key");
      return await meterKey(meterDeps(routes), hash, options, (m) => (metered = m));
    },
  };
  let status = 200;
  try {
    return textResult(await work(meterer));
  } catch (err) {
    if (err instanceof ApiError) {
      status = err.status;
      return { content: [{ type: "text", text: toolErrorText(err, routes.config.publicUrl) }], isError: true };
    }
    if (isDatabaseUnavailable(err)) {
      status = 503;
      routes.log(`mcp tool call: service unavailable: ${(err as Error).message}`, "warn");
      return { content: [{ type: "text", text: "The service is temporarily unavailable: retry in a few seconds." }], isError: true };
    }
    status = 500;
    const id = crypto.randomUUID();
    routes.log(`mcp tool call ${id}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`, "error");
    return { content: [{ type: "text", text: `Internal error (request ${id}): nothing was billed for a failed lookup; retry later.` }], isError: true };
  } finally {
    if (metered) recordUsage(routes.usage, metered, { status, latencyMs: performance.now() - started, at: routes.now() });
  }
}

function reverseResult(page: ReversePage) {
  return {
    records: page.views.map((view) => trimmedRecord(view.wallet, view)),
    ...page.meta,
    billed_matches: page.metered.matched,
    quota: quotaOf(page.metered),
  };
}

const PAGING =
  "At most 100 wallets a page, most farcaster followers first; when next_cursor is not null, call again with cursor set to it (unmodified) for the next page. Each page is billed on its own.";

export const TOOL_NAMES = [
  "walletid_resolve_wallets",
  "walletid_estimate_list",
  "walletid_submit_job",
  "walletid_job_status",
  "walletid_reverse_twitter",
  "walletid_reverse_farcaster",
  "walletid_account_balance",
  "walletid_index_stats",
] as const;

/**
 * A fresh server with the eight tools, for one request of `caller`. `only`: the request is one
 * tools/call of that tool, so the server registers just it (a call answers the same either way,
 * and a per-request server need not build the seven others).
 */
export function buildMcpServer(deps: McpDeps, caller: McpCaller, only?: string): McpServer {
  const wanted = (name: (typeof TOOL_NAMES)[number]) =>
    only === undefined || !(TOOL_NAMES as readonly string[]).includes(only) || only === name;
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions:
      "walletid resolves wallet addresses (0x + 40 hex) to the X (twitter), farcaster, ENS, lens and github identities attached to them, and handles back to wallets. A match credit is billed only for a wallet that resolves to X or farcaster; everything else is free. Use walletid_estimate_list (free) before resolving a long list, and walletid_submit_job for lists longer than the plan's batch size.",
  });
  const run = (work: (meterer: Meterer) => Promise<Record<string, unknown>>) => runTool(deps, caller, work);
  const { routes } = deps;

  if (wanted("walletid_resolve_wallets")) server.registerTool(
    "walletid_resolve_wallets",
    {
      title: "Resolve wallets to identities",
      description:
        "Resolve 1 address up to the plan's batch size (50 on Developer, 200 on Startup) to the identities attached to each: X handle, farcaster account, ENS name, lens, github, with whether owner-attested evidence backs them (attested), whether the X handle still reaches someone, and staleness. Duplicates are removed. Cost: 1 match credit per wallet that resolves to X or farcaster (billed_matches); wallets with nothing attached, or only ENS/lens/github, are free. Rate units: 1 per address sent. Resending the call bills again. For a longer list, call walletid_estimate_list first, then walletid_submit_job.",
      inputSchema: SCHEMAS.wallets,
      outputSchema: SCHEMAS.resolve,
      annotations: { title: "Resolve wallets", ...SPENDING },
    },
    ({ wallets }) =>
      run(async (meterer) => {
        const { unique, invalid, invalidCount } = normalizeAddressList(wallets);
        let views;
        let metered: Metered;
        if (unique.length === 1 && invalid.length === 0) {
          // one distinct address: the single-lookup path, GET /wallet/{address}
          const one = await lookupWallet(routes, meterer, unique[0]);
          views = new Map(one.view ? [[one.address, one.view]] : []);
          metered = one.metered;
        } else {
          ({ views, metered } = await lookupBatch(routes, meterer, { entries: wallets, unique, invalid, invalidCount }));
        }
        const records = unique.map((address) => trimmedRecord(address, views.get(address)));
        return {
          records,
          requested: unique.length,
          found: records.filter((r) => r.found).length,
          billed_matches: metered.matched,
          quota: quotaOf(metered),
        };
      }),
  );

  if (wanted("walletid_estimate_list")) server.registerTool(
    "walletid_estimate_list",
    {
      title: "Estimate a list (free)",
      description:
        "Dry run over 10 up to the plan's batch size of distinct addresses: how many are in the index, checked empty or never checked, and a billing band (low is exactly what walletid_resolve_wallets would bill now; high is the ceiling for an async job). Returns counts only, never identities. Free at any balance; rate units: 1 per address sent. Use it before resolving or submitting a long list.",
      inputSchema: SCHEMAS.wallets,
      outputSchema: SCHEMAS.estimate,
      annotations: { title: "Estimate a list", ...FREE },
    },
    ({ wallets }) =>
      run(async (meterer) => {
        const { data, metered } = await estimateList(routes, meterer, { entries: wallets, ...normalizeAddressList(wallets) });
        return { ...data, billed_matches: 0, quota: quotaOf(metered) };
      }),
  );

  if (wanted("walletid_submit_job")) server.registerTool(
    "walletid_submit_job",
    {
      title: "Submit a long list as a job",
      description:
        "Resolve any number of addresses in the background (up to 10 times the credits available); the job also asks live sources, so it can find identities a lookup reports as never seen. Lists of 10 or fewer complete at once. One job per account at a time. Cost: nothing now; at completion 1 match credit per wallet that resolves to X or farcaster (a failed job is free). Rate units: 1. Then poll walletid_job_status with the job_id.",
      inputSchema: SCHEMAS.wallets,
      outputSchema: SCHEMAS.job,
      annotations: { title: "Submit a job", ...SPENDING },
    },
    ({ wallets }) =>
      run(async (meterer) => {
        const { data, metered } = await submitJob(routes, deps.jobs, meterer, normalizeAddressList(wallets));
        return { job: data, billed_matches: 0, quota: quotaOf(metered) };
      }),
  );

  if (wanted("walletid_job_status")) server.registerTool(
    "walletid_job_status",
    {
      title: "Poll a job (free)",
      description: `Status and progress of a job of this account; once completed, ${JOB_STATUS_ROWS} result records from offset (default 0). While next_offset is not null, call again with offset set to it. Free on both meters, works at zero balance.`,
      inputSchema: SCHEMAS.jobStatusIn,
      outputSchema: SCHEMAS.jobStatus,
      annotations: { title: "Poll a job", ...FREE },
    },
    ({ job_id, offset }) =>
      run(async (meterer) => {
        const m = await meterJobPoll(meterer);
        const { data, meta, page, metered } = await jobStatus(routes, m, { id: job_id, offset: offset ?? 0, limit: JOB_STATUS_ROWS });
        return {
          job: data,
          ...meta,
          ...(page
            ? { results: page.wallets.map((w) => trimmedRecord(w, page.views.get(w), { hideFollowers: page.hideFollowers })) }
            : {}),
          billed_matches: 0,
          quota: quotaOf(metered),
        };
      }),
  );

  if (wanted("walletid_reverse_twitter")) server.registerTool(
    "walletid_reverse_twitter",
    {
      title: "Wallets holding an X handle",
      description: `Every wallet the index links to an X (twitter) handle, through any evidence; attested says whether owner-attested evidence backs each. ${PAGING} Cost: 1 match credit per wallet returned; rate units: 2 per page.`,
      inputSchema: SCHEMAS.reverseTwitterIn,
      outputSchema: SCHEMAS.reverse,
      annotations: { title: "Reverse X lookup", ...SPENDING },
    },
    ({ handle, cursor }) => run(async (meterer) => reverseResult(await reverseTwitter(routes, meterer, handle, cursor))),
  );

  if (wanted("walletid_reverse_farcaster")) server.registerTool(
    "walletid_reverse_farcaster",
    {
      title: "Wallets attested to a farcaster username",
      description: `Only wallets whose every source is owner-attested evidence for a farcaster username. Needs a key that belongs to an account. ${PAGING} Cost: 1 match credit per wallet returned; rate units: 2 per page.`,
      inputSchema: SCHEMAS.reverseFarcasterIn,
      outputSchema: SCHEMAS.reverse,
      annotations: { title: "Reverse farcaster lookup", ...SPENDING },
    },
    ({ username, cursor }) => run(async (meterer) => reverseResult(await reverseFarcaster(routes, meterer, username, cursor))),
  );

  if (wanted("walletid_account_balance")) server.registerTool(
    "walletid_account_balance",
    {
      title: "Credits and limits (free)",
      description:
        "The match credits available, whether the account is on the free allowance, the plan, its batch size and the three rate windows. Free on both meters, works at zero balance.",
      inputSchema: SCHEMAS.none,
      outputSchema: SCHEMAS.balance,
      annotations: { title: "Account balance", ...FREE },
    },
    () =>
      run(async (meterer) => {
        const { data, metered } = await accountBalance(routes, meterer);
        return { ...data, rate_limits: rateLimitsJson(metered), billed_matches: 0, quota: quotaOf(metered) };
      }),
  );

  if (wanted("walletid_index_stats")) server.registerTool(
    "walletid_index_stats",
    {
      title: "Index statistics (free)",
      description:
        "How many wallets the index holds and has checked, coverage per identity kind, farcaster follower figures and the measured match rates (use them to judge what a never-checked list will bill). Counts are taken once a day. Free on both meters.",
      inputSchema: SCHEMAS.none,
      outputSchema: SCHEMAS.stats,
      annotations: { title: "Index stats", ...FREE },
    },
    () =>
      run(async (meterer) => {
        const { data, meta, metered } = await indexStats(routes, meterer);
        return { ...data, as_of: meta.as_of, billed_matches: 0, quota: quotaOf(metered) };
      }),
  );

  return server;
}
