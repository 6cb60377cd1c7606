// The walletid tools (eight, and two for the watchlist) on a fresh McpServer per request: each calls the operation its REST
// route calls, is metered and recorded under that route's template, and turns refusals into tool
// errors an agent can act on.
import { McpServer, type CallToolResult } from "@modelcontextprotocol/server";
import { normalizeAddressList } from "../index/address.ts";
import type { WalletView } from "../index/records.ts";
import { ApiError } from "../http/errors.ts";
import { isDatabaseUnavailable } from "../db/errors.ts";
import { meterKey, recordUsage, type Metered, type Meterer } from "../http/meter.ts";
import { rateLimitsJson } from "../http/render.ts";
import { accountBalance } from "../operations/account.ts";
import { lookupBatch } from "../operations/batch.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";
import { estimateList } from "../operations/estimate.ts";
import { readJob, submitJob } from "../operations/jobs.ts";
import { lookupWallet } from "../operations/lookup.ts";
import { isRefused, type Outcome, type Refused } from "../operations/outcome.ts";
import { reverseFarcaster, reverseTwitter, type ReversePage } from "../operations/reverse.ts";
import { indexStats } from "../operations/stats.ts";
import { unwatch, watch } from "../operations/watchlist.ts";
import { meteringKeyHash, type McpCaller } from "./credentials.ts";
import { quotaOf, trimmedRecord } from "./results.ts";
import { SCHEMAS } from "./schemas.ts";

export const SERVER_INFO = { name: "walletid", version: "1.0.0" };

/** Rows of a job's results one walletid_job_status call returns. */
export const JOB_STATUS_ROWS = 100;

/** One pack: what an out-of-credits tool error quotes. */
const PACK_PRICE = "1.00 dollar (USDC) for 12 match credits, valid 12 months";

/** What a tool's work answers: its structured result, or the refusal of the operation it called. */
type ToolAnswer = Record<string, unknown> | Refused;

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

function refusedResult(err: ApiError, publicUrl: string): CallToolResult {
  return { content: [{ type: "text", text: toolErrorText(err, publicUrl) }], isError: true };
}

/**
 * Runs one tool call: meters the caller through `meterer`, records the call's usage under the
 * REST route template it used, and turns every failure into a tool error.
 */
async function runTool(deps: OperationDeps, caller: McpCaller, work: (meterer: Meterer) => Promise<ToolAnswer>): Promise<CallToolResult> {
  const started = performance.now();
  let metered: Metered | undefined;
  const hash = meteringKeyHash(caller);
  const meterer: Meterer = {
    digest: async () => hash,
    meter: async (options) => {
      if (hash === null) throw new ApiError(401, "UNAUTHORIZED", "Missing or invalid API key");
      return await meterKey(meterDeps(deps), hash, options, (m) => (metered = m));
    },
  };
  let status = 200;
  try {
    const answer = await work(meterer);
    if (isRefused(answer)) {
      status = answer.refusal.status;
      return refusedResult(answer.refusal, deps.config.publicUrl);
    }
    return textResult(answer);
  } catch (err) {
    if (err instanceof ApiError) {
      status = err.status;
      return refusedResult(err, deps.config.publicUrl);
    }
    if (isDatabaseUnavailable(err)) {
      status = 503;
      deps.log(`mcp tool call: service unavailable: ${(err as Error).message}`, "warn");
      return { content: [{ type: "text", text: "The service is temporarily unavailable: retry in a few seconds." }], isError: true };
    }
    status = 500;
    const id = crypto.randomUUID();
    deps.log(`mcp tool call ${id}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`, "error");
    return { content: [{ type: "text", text: `Internal error (request ${id}): nothing was billed for a failed lookup; retry later.` }], isError: true };
  } finally {
    if (metered) recordUsage(deps.usage, metered, { status, latencyMs: performance.now() - started, at: deps.now() });
  }
}

function reverseResult(page: Outcome<ReversePage>): ToolAnswer {
  if (!page.ok) return page;
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
  "walletid_watch_wallets",
  "walletid_unwatch_wallets",
] as const;

/**
 * A fresh server with the tools, for one request of `caller`. `only`: the request is one
 * tools/call of that tool, so the server registers just it (a call answers the same either way,
 * and a per-request server need not build the seven others).
 */
export function buildMcpServer(deps: OperationDeps, caller: McpCaller, only?: string): McpServer {
  const wanted = (name: (typeof TOOL_NAMES)[number]) =>
    only === undefined || !(TOOL_NAMES as readonly string[]).includes(only) || only === name;
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions:
      "walletid resolves wallet addresses (0x + 40 hex) to the X (twitter), farcaster, ENS, lens and github identities attached to them, and handles back to wallets. A match credit is billed only for a wallet that resolves to X or farcaster; everything else is free. Use walletid_estimate_list (free) before resolving a long list, and walletid_submit_job for lists longer than the plan's batch size.",
  });
  const run = (work: (meterer: Meterer) => Promise<ToolAnswer>) => runTool(deps, caller, work);

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
        let views: Map<string, WalletView>;
        let metered: Metered;
        if (unique.length === 1 && invalid.length === 0) {
          // one distinct address: the single-lookup path, GET /wallet/{address}
          const one = await lookupWallet(deps, meterer, unique[0]);
          if (!one.ok) return one;
          views = new Map(one.view ? [[one.address, one.view]] : []);
          metered = one.metered;
        } else {
          const list = await lookupBatch(deps, meterer, { entries: wallets, unique, invalid, invalidCount });
          if (!list.ok) return list;
          ({ views, metered } = list);
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
        const estimated = await estimateList(deps, meterer, { entries: wallets, ...normalizeAddressList(wallets) });
        if (!estimated.ok) return estimated;
        return { ...estimated.data, billed_matches: 0, quota: quotaOf(estimated.metered) };
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
        const submitted = await submitJob(deps, meterer, normalizeAddressList(wallets));
        if (!submitted.ok) return submitted;
        return { job: submitted.data, billed_matches: 0, quota: quotaOf(submitted.metered) };
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
        const read = await readJob(deps, meterer, { id: job_id, offset: offset ?? 0, limit: JOB_STATUS_ROWS });
        if (!read.ok) return read;
        const { data, meta, page, metered } = read;
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
    ({ handle, cursor }) => run(async (meterer) => reverseResult(await reverseTwitter(deps, meterer, { handle, cursor }))),
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
    ({ username, cursor }) => run(async (meterer) => reverseResult(await reverseFarcaster(deps, meterer, { username, cursor }))),
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
        const balance = await accountBalance(deps, meterer);
        if (!balance.ok) return balance;
        const { data, metered } = balance;
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
        const stats = await indexStats(deps, meterer);
        if (!stats.ok) return stats;
        const { data, meta, metered } = stats;
        return { ...data, as_of: meta.as_of, billed_matches: 0, quota: quotaOf(metered) };
      }),
  );

  if (wanted("walletid_watch_wallets")) server.registerTool(
    "walletid_watch_wallets",
    {
      title: "Watch wallets for identity changes",
      description:
        "Add 1 to 1,000 addresses to the account's watchlist (at most 100,000 in all). When a watched wallet's X, farcaster, ENS, lens or github identity, its X handle's reachability or its evidence changes, the account's webhook endpoints subscribed to wallet.changed receive an event (register endpoints with POST /api/v1/webhooks and an API key). Watching is free; rate units: 1. An event whose record shows X or farcaster costs 1 match credit when it is sent (withheld, with field names only, when no credits are left).",
      inputSchema: SCHEMAS.wallets,
      outputSchema: SCHEMAS.watch,
      annotations: { title: "Watch wallets", readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ wallets }) =>
      run(async (meterer) => {
        const added = await watch(deps, meterer, { entries: wallets, ...normalizeAddressList(wallets) });
        if (!added.ok) return added;
        return { ...added.data, billed_matches: 0, quota: quotaOf(added.metered) };
      }),
  );

  if (wanted("walletid_unwatch_wallets")) server.registerTool(
    "walletid_unwatch_wallets",
    {
      title: "Stop watching wallets",
      description: "Remove 1 to 1,000 addresses from the account's watchlist; addresses not on it are ignored. Free; rate units: 1.",
      inputSchema: SCHEMAS.wallets,
      outputSchema: SCHEMAS.unwatch,
      annotations: { title: "Unwatch wallets", readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ wallets }) =>
      run(async (meterer) => {
        const removed = await unwatch(deps, meterer, { entries: wallets, ...normalizeAddressList(wallets) });
        if (!removed.ok) return removed;
        return { ...removed.data, billed_matches: 0, quota: quotaOf(removed.metered) };
      }),
  );

  return server;
}
