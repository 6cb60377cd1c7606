// GET /stats and GET /usage: free on both meters, need a valid key but no balance.
import { Hono } from "hono";
import * as v from "valibot";
import { sql } from "../db/queries.ts";
import { latestStats, materializeStats, type StatsSnapshot } from "../maintenance/stats.ts";
import { readCredits } from "../ledger/accounts.ts";
import { MATCH_RATES } from "../index/match-rates.ts";
import { ApiError } from "../http/errors.ts";
import { requestMeterer, type Metered, type Meterer } from "../http/meter.ts";
import { StatsResponse, UsageQuery, UsageResponse } from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { meterDeps, type RouteDeps } from "./deps.ts";

export const STATS_ROUTE = "/v1/stats";
export const USAGE_ROUTE = "/v1/usage";

export const accountOpenapi: Operation[] = [
  {
    method: "get",
    path: "/stats",
    operationId: "indexStats",
    tag: "Account",
    summary: "Index statistics",
    description:
      "Counts of the index, taken once per UTC day (two calls within a day return the same counts), and the dated match-rate measurement (`match_rates`, a constant, not a live count). Needs a valid key but no balance; free on both meters.",
    auth: true,
    success: { status: 200, description: "The stats resource", schema: StatsResponse },
    errors: [],
  },
  {
    method: "get",
    path: "/usage",
    operationId: "accountUsage",
    tag: "Account",
    summary: "Your own usage, limits and credits",
    description:
      "The calling key, the plan's limits, the three rate windows, the match-credit balance and usage over a rolling period. Free on both meters; works at zero balance.",
    auth: true,
    query: UsageQuery,
    success: { status: 200, description: "The usage resource", schema: UsageResponse },
    errors: [{ status: 400, codes: ["INVALID_PARAMETER"] }],
  },
];

const PERIOD_DAYS = { day: 1, week: 7, month: 30 } as const;

/**
 * The stored counts; the stats task moves them. Only a database that never had them (the
 * first request after the very first start) has them taken here, once.
 */
async function storedStats(deps: RouteDeps): Promise<StatsSnapshot> {
  return (await latestStats(deps.db)) ?? (await materializeStats(deps.db, { now: deps.now() }));
}

/** A rate window as /usage shows it: null until the window has been exercised. */
export function windowJson(m: Metered, name: "minute" | "day" | "month") {
  const w = m.windows.find((x) => x.name === name)!;
  if (w.used === 0) return null;
  return {
    limit: w.limit ?? "unlimited",
    remaining: w.limit === null ? "unlimited" : Math.max(0, w.limit - w.used),
    reset_at: w.resetAt.toISOString(),
  };
}

export function rateLimitsJson(m: Metered) {
  return { minute: windowJson(m, "minute"), day: windowJson(m, "day"), month: windowJson(m, "month") };
}

export function planLimitsJson(m: Metered) {
  return {
    requests_per_minute: m.windows[0].limit ?? "unlimited",
    requests_per_day: m.windows[1].limit ?? "unlimited",
    requests_per_month: m.windows[2].limit ?? "unlimited",
    max_batch_size: m.maxBatchSize ?? "unlimited",
  };
}

function creditsJson(m: Metered, credits: Awaited<ReturnType<typeof readCredits>>) {
  return {
    available: m.unmetered ? null : credits.available,
    unmetered: m.unmetered,
    on_free_allowance: !m.unmetered && credits.onFreeAllowance,
    free_window_resets_at: credits.freeResetsAt ? credits.freeResetsAt.toISOString() : null,
  };
}

/** GET /stats: the stored index counts and the dated match rates; free. */
export async function indexStats(deps: RouteDeps, meterer: Meterer) {
  const metered = await meterer.meter({ route: STATS_ROUTE, weight: 0, needsCredits: false });
  const { counts, asOf } = await storedStats(deps);
  return {
    data: {
      total_wallets: counts.total_wallets,
      wallets_checked: counts.wallets_checked,
      coverage: {
        twitter: counts.twitter,
        farcaster: counts.farcaster,
        ens: counts.ens,
        lens: counts.lens,
        github: counts.github,
      },
      farcaster_stats: { avg_followers: counts.avg_followers, max_followers: counts.max_followers },
      match_rates: MATCH_RATES,
    },
    meta: { generated_at: deps.now().toISOString(), as_of: asOf.toISOString() },
    metered,
  };
}

/** The balance part of GET /usage (plan, limits, windows, credits), metered as /usage: free. */
export async function accountBalance(deps: RouteDeps, meterer: Meterer) {
  const metered = await meterer.meter({ route: USAGE_ROUTE, weight: 0, needsCredits: false });
  const credits = await readCredits(deps.db, metered.accountId, deps.now());
  return {
    data: { plan: metered.plan, plan_limits: planLimitsJson(metered), credits: creditsJson(metered, credits) },
    metered,
  };
}

export function accountRoutes(deps: RouteDeps) {
  const app = new Hono();

  app.get("/stats", async (c) => {
    const { data, meta } = await indexStats(deps, requestMeterer(c, meterDeps(deps)));
    // the counts change only when the stats task stores a new snapshot (once a day); generated_at
    // alone does not make a new version, so the validator names the snapshot
    c.header("ETag", `"stats-${Date.parse(meta.as_of).toString(36)}"`);
    return c.json({ data, meta });
  });

  app.get("/usage", async (c) => {
    const query = v.safeParse(UsageQuery, { period: c.req.query("period") });
    const m = await requestMeterer(c, meterDeps(deps)).meter({ route: USAGE_ROUTE, weight: 0, needsCredits: false });
    if (!query.success) {
      throw new ApiError(400, "INVALID_PARAMETER", "Invalid period: use day, week or month");
    }
    const { period } = query.output;
    const now = deps.now();
    const since = new Date(now.getTime() - PERIOD_DAYS[period] * 86_400_000);
    await deps.usage.flush();
    const [[key], credits, [summary], byRoute, byDay] = await Promise.all([
      deps.db.query<{ id: string; name: string | null; prefix: string; created_at: Date; last_used_at: Date | null }>(
        sql("api_keys_select_for_usage"),
        [m.keyId],
      ),
      readCredits(deps.db, m.accountId, now),
      deps.db.query<{
        total_requests: number;
        total_credits: number;
        total_wallets: number;
        avg_latency_ms: number;
        error_rate: number;
      }>(sql("usage_counts_select_summary"), [m.accountId, since]),
      deps.db.query<{ route: string; count: number }>(sql("usage_counts_select_by_route"), [m.accountId, since]),
      deps.db.query<{ date: string; count: number; credits: number }>(sql("usage_counts_select_by_day"), [
        m.accountId,
        since,
      ]),
    ]);
    return c.json({
      data: {
        key: {
          id: key.id,
          ...(key.name !== null ? { name: key.name } : {}),
          prefix: key.prefix,
          plan: m.plan,
          created_at: key.created_at.toISOString(),
          last_used_at: (key.last_used_at ?? now).toISOString(),
        },
        plan_limits: planLimitsJson(m),
        rate_limits: rateLimitsJson(m),
        credits: creditsJson(m, credits),
        usage: {
          period,
          total_requests: summary.total_requests,
          total_credits: summary.total_credits,
          total_wallets: summary.total_wallets,
          avg_latency_ms: summary.avg_latency_ms,
          error_rate: summary.error_rate,
          requests_by_endpoint: Object.fromEntries(byRoute.map((r) => [r.route, r.count])),
          requests_by_day: byDay,
        },
      },
      meta: { generated_at: now.toISOString() },
    });
  });

  return app;
}
