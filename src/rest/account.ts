// GET /stats and GET /usage: free on both meters, need a valid key but no balance.
import { Hono } from "hono";
import * as v from "valibot";
import { ApiError } from "../http/errors.ts";
import { refusal } from "../http/meter.ts";
import { requestMeterer } from "../http/request-meter.ts";
import { StatsResponse, UsageQuery, UsageResponse } from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { accountUsage, USAGE_ROUTE } from "../operations/account.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";
import { indexStats } from "../operations/stats.ts";

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

export function accountRoutes(deps: OperationDeps) {
  const app = new Hono();

  app.get("/stats", async (c) => {
    const stats = await indexStats(deps, requestMeterer(c, meterDeps(deps)));
    if (!stats.ok) throw stats.refusal;
    const { data, meta } = stats;
    // the counts change only when the stats task stores a new snapshot (once a day); generated_at
    // alone does not make a new version, so the validator names the snapshot
    c.header("ETag", `"stats-${Date.parse(meta.as_of).toString(36)}"`);
    return c.json({ data, meta });
  });

  app.get("/usage", async (c) => {
    const meterer = requestMeterer(c, meterDeps(deps));
    const query = v.safeParse(UsageQuery, { period: c.req.query("period") });
    if (!query.success) {
      // refused once the key is known, free, with the rate-limit headers
      throw await refusal(meterer, USAGE_ROUTE, new ApiError(400, "INVALID_PARAMETER", "Invalid period: use day, week or month"));
    }
    const usage = await accountUsage(deps, meterer, { period: query.output.period });
    if (!usage.ok) throw usage.refusal;
    return c.json({ data: usage.data, meta: usage.meta });
  });

  return app;
}
