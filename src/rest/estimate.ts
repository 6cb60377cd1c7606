// POST /estimate: a dry run of a batch over 10 to max_batch_size distinct addresses. Counts
// and a billing band only, never identities; free at any balance, rate weight 1 per address.
import { Hono } from "hono";
import { ONE_MB, readWalletList } from "../http/body.ts";
import { requestMeterer } from "../http/request-meter.ts";
import { EstimateResponse, WalletListBody } from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";
import { BILLABLE_PREDICATE, estimateList } from "../operations/estimate.ts";

export const estimateOpenapi: Operation[] = [
  {
    method: "post",
    path: "/estimate",
    operationId: "estimateList",
    tag: "Lookups",
    summary: "Estimate what a list would bill",
    description:
      "A dry run over 10 to the plan's `max_batch_size` distinct addresses (body at most 1 MiB, 1,048,576 bytes): counts and a billing band, never identities. `low` is exactly what a batch of the list would bill now; `high` adds the never-checked wallets at the measured overall match rate, the ceiling for an async job. Free at any balance; rate weight 1 per address sent.",
    auth: true,
    body: WalletListBody,
    success: { status: 200, description: "Counts and the billing band", schema: EstimateResponse },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_ADDRESS", "LIST_TOO_SMALL", "BATCH_SIZE_EXCEEDED"] },
      { status: 413, codes: ["INVALID_REQUEST"] },
    ],
  },
];

export function estimateRoutes(deps: OperationDeps) {
  const app = new Hono();

  app.post("/estimate", async (c) => {
    // body checks first, as for batch: the rate weight is the body's address count
    const list = await readWalletList(c.req.raw, { maxBytes: ONE_MB, label: "1 MiB" });
    const estimated = await estimateList(deps, requestMeterer(c, meterDeps(deps)), list);
    if (!estimated.ok) throw estimated.refusal;
    return c.json({ data: estimated.data, meta: { generated_at: deps.now().toISOString(), billable_predicate: BILLABLE_PREDICATE } });
  });

  return app;
}
