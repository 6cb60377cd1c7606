// Estimate what a list would bill: a dry run over 10 to max_batch_size distinct addresses. Counts
// and a billing band only, never identities; free at any balance, rate weight 1 per address sent.
import { buildViews } from "../index/records.ts";
import { MATCH_RATES } from "../index/match-rates.ts";
import { ApiError, invalidAddress } from "../http/errors.ts";
import { refusal, type Metered, type Meterer } from "../http/meter.ts";
import type { WalletList } from "./batch.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export const ESTIMATE_ROUTE = "/v1/estimate";
export const ESTIMATE_MIN_ADDRESSES = 10;
export const BILLABLE_PREDICATE = "x_or_farcaster";

export interface Estimate {
  data: {
    requested: number;
    in_index: number;
    previously_checked_empty: number;
    never_checked: number;
    would_bill_estimate: { low: number; high: number; note: string };
  };
  metered: Metered;
}

/** The dry run over a list: counts and a billing band, rate weight 1 per address sent, free. */
export function estimateList(deps: OperationDeps, meterer: Meterer, list: WalletList): Promise<Outcome<Estimate>> {
  return outcomeOf(() => estimate(deps, meterer, list));
}

async function estimate(deps: OperationDeps, meterer: Meterer, list: WalletList) {
  const { entries, unique, invalid, invalidCount } = list;
  if (invalid.length > 0) throw await refusal(meterer, ESTIMATE_ROUTE, invalidAddress(invalid, invalidCount));
  if (unique.length < ESTIMATE_MIN_ADDRESSES) {
    const tooSmall = new ApiError(
      400,
      "LIST_TOO_SMALL",
      `Too few addresses: ${unique.length} distinct sent, an estimate needs at least ${ESTIMATE_MIN_ADDRESSES}`,
    );
    throw await refusal(meterer, ESTIMATE_ROUTE, tooSmall);
  }

  const metered = await meterer.meter({
    route: ESTIMATE_ROUTE,
    weight: entries.length,
    needsCredits: false,
    listSize: unique.length,
    wallets: entries.length,
    lookup: unique,
  });

  const views = buildViews(metered.identities, { now: deps.now(), staleAfterDays: deps.config.staleAfterDays });
  let inIndex = 0;
  for (const view of views.values()) if (view.found) inIndex++;
  const neverChecked = unique.length - views.size;
  // the predicate meter_call bills a batch by: a twitter or farcaster link in the index
  const billable = new Set(
    metered.identities.filter((r) => r.kind === "twitter" || r.kind === "farcaster").map((r) => r.address),
  ).size;
  const low = Math.min(billable, inIndex);
  const rate = MATCH_RATES.overall_either_pct;
  const high = low + Math.ceil((neverChecked * rate) / 100);

  const data = {
    requested: unique.length,
    in_index: inIndex,
    previously_checked_empty: views.size - inIndex,
    never_checked: neverChecked,
    would_bill_estimate: {
      low,
      high,
      note:
        `low is exactly what a batch of this list would bill now; high adds the ${neverChecked} never-checked ` +
        `wallets at the measured overall match rate of ${rate}% (measured ${MATCH_RATES.measured_on}), ` +
        `the ceiling for an async job that resolves them live`,
    },
  };
  return { data, metered };
}
