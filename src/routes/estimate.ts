// POST /estimate: a dry run of a batch over 10 to max_batch_size distinct addresses. Counts
// and a billing band only, never identities; free at any balance, rate weight 1 per address.
import { Hono } from "hono";
import { buildViews } from "../index/records.ts";
import { MATCH_RATES } from "../index/match-rates.ts";
import { ONE_MB, readWalletList } from "../http/body.ts";
import { ApiError, invalidAddress } from "../http/errors.ts";
import { refusal, requestMeterer, type Meterer } from "../http/meter.ts";
import { EstimateResponse, WalletListBody } from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { meterDeps, type RouteDeps } from "./deps.ts";

export const ESTIMATE_ROUTE = "/v1/estimate";
export const ESTIMATE_MIN_ADDRESSES = 10;
export const BILLABLE_PREDICATE = "x_or_farcaster";

export const estimateOpenapi: Operation[] = [
  {
    method: "post",
    path: "/estimate",
    operationId: "estimateList",
    tag: "Lookups",
    summary: "Estimate what a list would bill",
    description:
      "A dry run over 10 to the plan's `max_batch_size` distinct addresses (body at most 1 MB): counts and a billing band, never identities. `low` is exactly what a batch of the list would bill now; `high` adds the never-checked wallets at the measured overall match rate, the ceiling for an async job. Free at any balance; rate weight 1 per address sent.",
    auth: true,
    body: WalletListBody,
    success: { status: 200, description: "Counts and the billing band", schema: EstimateResponse },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_ADDRESS", "LIST_TOO_SMALL", "BATCH_SIZE_EXCEEDED"] },
      { status: 413, codes: ["INVALID_REQUEST"] },
    ],
  },
];

/** The dry run over a list: counts and a billing band, rate weight 1 per address sent, free. */
export async function estimateList(
  deps: RouteDeps,
  meterer: Meterer,
  list: { entries: unknown[]; unique: string[]; invalid: unknown[]; invalidCount: number },
) {
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

export function estimateRoutes(deps: RouteDeps) {
  const app = new Hono();

  app.post("/estimate", async (c) => {
    // body checks first, as for batch: the rate weight is the body's address count
    const list = await readWalletList(c.req.raw, { maxBytes: ONE_MB, label: "1 MB" });
    const { data } = await estimateList(deps, requestMeterer(c, meterDeps(deps)), list);
    return c.json({ data, meta: { generated_at: deps.now().toISOString(), billable_predicate: BILLABLE_PREDICATE } });
  });

  return app;
}
