// A caller's own account: its balance (plan, limits, credits) and its usage over a period, free on
// both meters at any balance. Faces: GET /usage; MCP walletid_account_balance.
import { sql } from "../db/queries.ts";
import { readCredits } from "../ledger/accounts.ts";
import type { Metered, Meterer } from "../http/meter.ts";
import { planLimitsJson, rateLimitsJson } from "../http/render.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export const USAGE_ROUTE = "/v1/usage";

const PERIOD_DAYS = { day: 1, week: 7, month: 30 } as const;

function creditsJson(m: Metered, credits: Awaited<ReturnType<typeof readCredits>>) {
  return {
    available: m.unmetered ? null : credits.available,
    unmetered: m.unmetered,
    on_free_allowance: !m.unmetered && credits.onFreeAllowance,
    free_window_resets_at: credits.freeResetsAt ? credits.freeResetsAt.toISOString() : null,
  };
}

export interface AccountBalance {
  data: { plan: string; plan_limits: ReturnType<typeof planLimitsJson>; credits: ReturnType<typeof creditsJson> };
  metered: Metered;
}

export interface AccountUsage {
  data: Record<string, unknown>;
  meta: { generated_at: string };
  metered: Metered;
}

/** The balance part of the usage (plan, limits, credits), metered under /usage: free. */
export function accountBalance(deps: OperationDeps, meterer: Meterer): Promise<Outcome<AccountBalance>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: USAGE_ROUTE, weight: 0, needsCredits: false });
    const credits = await readCredits(deps.db, metered.accountId, deps.now());
    return {
      data: { plan: metered.plan, plan_limits: planLimitsJson(metered), credits: creditsJson(metered, credits) },
      metered,
    };
  });
}

/**
 * The calling key, the plan's limits, the three rate windows, the match-credit balance and usage
 * over a rolling period. Free on both meters; works at zero balance.
 */
export function accountUsage(
  deps: OperationDeps,
  meterer: Meterer,
  input: { period: keyof typeof PERIOD_DAYS },
): Promise<Outcome<AccountUsage>> {
  return outcomeOf(async () => {
    const { period } = input;
    const metered = await meterer.meter({ route: USAGE_ROUTE, weight: 0, needsCredits: false });
    const now = deps.now();
    const since = new Date(now.getTime() - PERIOD_DAYS[period] * 86_400_000);
    await deps.usage.flush();
    const [[key], credits, [summary], byRoute, byDay] = await Promise.all([
      deps.db.query<{ id: string; name: string | null; prefix: string; created_at: Date; last_used_at: Date | null }>(
        sql("api_keys_select_for_usage"),
        [metered.keyId],
      ),
      readCredits(deps.db, metered.accountId, now),
      deps.db.query<{
        total_requests: number;
        total_credits: number;
        total_wallets: number;
        avg_latency_ms: number;
        error_rate: number;
      }>(sql("usage_counts_select_summary"), [metered.accountId, since]),
      deps.db.query<{ route: string; count: number }>(sql("usage_counts_select_by_route"), [metered.accountId, since]),
      deps.db.query<{ date: string; count: number; credits: number }>(sql("usage_counts_select_by_day"), [
        metered.accountId,
        since,
      ]),
    ]);
    return {
      data: {
        key: {
          id: key.id,
          ...(key.name !== null ? { name: key.name } : {}),
          prefix: key.prefix,
          plan: metered.plan,
          created_at: key.created_at.toISOString(),
          last_used_at: (key.last_used_at ?? now).toISOString(),
        },
        plan_limits: planLimitsJson(metered),
        rate_limits: rateLimitsJson(metered),
        credits: creditsJson(metered, credits),
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
      metered,
    };
  });
}
