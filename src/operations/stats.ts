// Index statistics: counts taken once per UTC day and the dated match rates; free on both meters.
// Faces: GET /stats; MCP walletid_index_stats.
import { latestStats, materializeStats, type StatsSnapshot } from "../maintenance/stats.ts";
import { MATCH_RATES } from "../index/match-rates.ts";
import type { Meterer } from "../http/meter.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf } from "./outcome.ts";

export const STATS_ROUTE = "/v1/stats";

/**
 * The stored counts; the stats task moves them. Only a database that never had them (the
 * first request after the very first start) has them taken here, once.
 */
async function storedStats(deps: OperationDeps): Promise<StatsSnapshot> {
  return (await latestStats(deps.db)) ?? (await materializeStats(deps.db, { now: deps.now() }));
}

/** The stored index counts and the dated match rates; free on both meters. */
export function indexStats(deps: OperationDeps, meterer: Meterer) {
  return outcomeOf(async () => {
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
  });
}
