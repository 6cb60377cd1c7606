// POST /batch: up to the plan's max_batch_size addresses; body checks run before authentication
// because the rate weight is the body's address count.
import { Hono } from "hono";
import * as v from "valibot";
import { sha256Hex } from "../ledger/keys.ts";
import { canonicalJson, ONE_MB, readWalletList } from "../http/body.ts";
import { ApiError } from "../http/errors.ts";
import { releaseIdempotencyClaim, storeIdempotentResponse } from "../http/meter.ts";
import { requestMeterer } from "../http/request-meter.ts";
import { batchRowJson } from "../http/render.ts";
import { BatchResponse, IdempotencyKey, WalletListBody } from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { lookupBatch } from "../operations/batch.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";

export const batchOpenapi: Operation[] = [
  {
    method: "post",
    path: "/batch",
    operationId: "lookupBatch",
    tag: "Lookups",
    summary: "Look up a list of wallets",
    description:
      "Up to the plan's `max_batch_size` addresses (body at most 1 MiB, 1,048,576 bytes, measured on bytes read). Duplicates are removed; `data` has one entry per unique address in submission order, a batch row or null; index results by `wallet`. Body size and shape are checked before authentication (no rate-limit headers on those rejections). Cost: 1 match credit per unique address that resolves to twitter or farcaster (`meta.matched`); rate weight 1 per address submitted, before deduplication.",
    auth: true,
    headers: { "Idempotency-Key": IdempotencyKey },
    body: WalletListBody,
    success: { status: 200, description: "One entry per unique address", schema: BatchResponse, headers: ["Idempotent-Replayed"] },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_ADDRESS", "BATCH_SIZE_EXCEEDED"] },
      { status: 402, codes: ["NO_CREDITS"] },
      { status: 409, codes: ["IDEMPOTENCY_KEY_REUSED"] },
      { status: 413, codes: ["INVALID_REQUEST"] },
    ],
  },
];

export function batchRoutes(deps: OperationDeps) {
  const app = new Hono();

  app.post("/batch", async (c) => {
    const { document, entries, unique, invalid, invalidCount } = await readWalletList(c.req.raw, { maxBytes: ONE_MB, label: "1 MiB" });
    const idempotencyKey = c.req.header("Idempotency-Key");
    if (idempotencyKey !== undefined && !v.is(IdempotencyKey, idempotencyKey)) {
      throw new ApiError(400, "INVALID_REQUEST", "Idempotency-Key must be 1 to 255 visible ASCII characters");
    }

    // the same JSON with other whitespace or key order is the same request
    const requestHash = idempotencyKey ? await sha256Hex(canonicalJson(document)) : undefined;
    const looked = await lookupBatch(deps, requestMeterer(c, meterDeps(deps)), {
      entries,
      unique,
      invalid,
      invalidCount,
      idempotency: idempotencyKey ? { key: idempotencyKey, requestHash: requestHash! } : undefined,
    });
    if (!looked.ok) throw looked.refusal;
    const { metered, views } = looked;

    if (metered.replay) {
      // another body: a stored answer's, or that of an unanswered attempt already billed (meter_call
      // then answers its hash with no response): never answered on the other body's payment
      if (metered.replay.requestHash !== requestHash) {
        throw new ApiError(
          409,
          "IDEMPOTENCY_KEY_REUSED",
          "Idempotency-Key was already used with a different request body: use a new key for a new request",
        );
      }
      metered.matched = 0;
      c.header("Idempotent-Replayed", "true");
      return c.body(metered.replay.body, metered.replay.status as 200, { "Content-Type": "application/json" });
    }

    try {
      const data = unique.map((address) => {
        const view = views.get(address);
        return view && view.found ? batchRowJson(view) : null;
      });
      const found = data.filter((row) => row !== null).length;
      // matched is what meter_call counted and debited with the same x_or_farcaster predicate
      const payload = JSON.stringify({
        data,
        meta: { requested: unique.length, found, not_found: unique.length - found, matched: Math.min(metered.matched, found) },
      });
      await storeIdempotentResponse(meterDeps(deps), metered, { status: 200, body: payload });
      return c.body(payload, 200, { "Content-Type": "application/json" });
    } catch (err) {
      // the next request with the key runs now rather than after the claim expires
      await releaseIdempotencyClaim(meterDeps(deps), metered).catch((e) => deps.log(`Cannot release an Idempotency-Key claim: ${String(e)}`, "warn"));
      throw err;
    }
  });

  return app;
}
