// POST /batch: up to the plan's max_batch_size addresses; body checks run before authentication
// because the rate weight is the body's address count.
import { Hono } from "hono";
import * as v from "valibot";
import { sha256Hex } from "../ledger/keys.ts";
import { canonicalJson, ONE_MB, readWalletList } from "../http/body.ts";
import { ApiError, invalidAddress } from "../http/errors.ts";
import { releaseIdempotencyClaim, storeIdempotentResponse } from "../http/meter.ts";
import { requestMeterer } from "../http/request-meter.ts";
import { batchRowJson } from "../http/render.ts";
import { BatchResponse, IdempotencyKey, WalletListBody } from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { BATCH_ROUTE, lookupBatch } from "../operations/batch.ts";
import type { PerCallDeps } from "../operations/percall.ts";
import { answerPaid, paysPerCall, type PaidRoute } from "./paid.ts";
import type { WalletView } from "../index/records.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";

export const batchOpenapi: Operation[] = [
  {
    method: "post",
    path: "/batch",
    operationId: "lookupBatch",
    tag: "Lookups",
    summary: "Look up a list of wallets",
    description:
      "Up to the plan's `max_batch_size` addresses (body at most 1 MiB, 1,048,576 bytes, measured on bytes read). Duplicates are removed; `data` has one entry per unique address in submission order, a batch row or null; index results by `wallet`. Body size and shape are checked before authentication (no rate-limit headers on those rejections). Cost: 1 match credit per unique address that resolves to twitter or farcaster (`meta.matched`); rate weight 1 per address submitted, before deduplication. Without Authorization, on a server with x402 configured: paid per call (x402 `upto`, see `x-payment-info`): the call answers 402 with a challenge for its ceiling, and the paid retry settles only the matches the answer bills (a miss costs nothing), limited per paying wallet as the Developer preset.",
    auth: true,
    // the Developer preset's max_batch_size (00002_ledger.sql): a paying wallet's list limit
    paidPerCall: { maxMatches: 50 },
    headers: { "Idempotency-Key": IdempotencyKey },
    body: WalletListBody,
    success: { status: 200, description: "One entry per unique address", schema: BatchResponse, headers: ["Idempotent-Replayed"] },
    errors: [
      { status: 400, codes: ["INVALID_REQUEST", "INVALID_ADDRESS", "BATCH_SIZE_EXCEEDED"] },
      {
        status: 402,
        codes: ["NO_CREDITS", "PAYMENT_REQUIRED"],
        headers: ["PAYMENT-REQUIRED", "PAYMENT-RESPONSE"],
        description: "No match credits left on the key's account (NO_CREDITS); or, with no Authorization on a server with x402 configured, payment required per call (PAYMENT_REQUIRED: the x402 `upto` challenge in PAYMENT-REQUIRED; after a refused payment, the reason in the body and PAYMENT-RESPONSE)",
      },
      { status: 409, codes: ["IDEMPOTENCY_KEY_REUSED"] },
      { status: 413, codes: ["INVALID_REQUEST"] },
    ],
  },
];

/** POST /batch paid per call: at most one match per unique address. */
export const batchPaidRoute: PaidRoute = {
  method: "POST",
  pattern: "/batch",
  description: "walletid: the social identities attached to a list of wallets; billed per unique wallet that resolves to twitter or farcaster (meta.matched)",
  discovery: {
    bodyType: "json",
    input: { wallets: ["0xd8da6bf26964af9d7eed9e03e53415d37aa96045", "0x0000000000000000000000000000000000000001"] },
    inputSchema: {
      properties: { wallets: { type: "array", items: { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" }, minItems: 1 } },
      required: ["wallets"],
    },
    output: {
      example: {
        data: [{ wallet: "0xd8da6bf26964af9d7eed9e03e53415d37aa96045", twitter: { handle: "vitalikbuterin" } }, null],
        meta: { requested: 2, found: 1, not_found: 1, matched: 1 },
      },
    },
  },
};

/** The batch body: one entry per unique address, and the counts; `matched` as metering counted it. */
function batchPayload(unique: string[], views: Map<string, WalletView>, matched: number): { payload: string; matched: number } {
  const data = unique.map((address) => {
    const view = views.get(address);
    return view && view.found ? batchRowJson(view) : null;
  });
  const found = data.filter((row) => row !== null).length;
  const billed = Math.min(matched, found);
  return { payload: JSON.stringify({ data, meta: { requested: unique.length, found, not_found: unique.length - found, matched: billed } }), matched: billed };
}

export function batchRoutes(deps: PerCallDeps) {
  const app = new Hono();

  app.post("/batch", async (c) => {
    const { document, entries, unique, invalid, invalidCount } = await readWalletList(c.req.raw, { maxBytes: ONE_MB, label: "1 MiB" });
    if (paysPerCall(c, deps)) {
      // malformed entries are refused before any challenge: nobody signs for a 400. An
      // Idempotency-Key is not needed: one payment runs one call
      if (invalid.length > 0) throw invalidAddress(invalid, invalidCount);
      return await answerPaid(
        c,
        deps,
        batchPaidRoute,
        {
          route: BATCH_ROUTE,
          maxMatches: unique.length,
          run: (meterer) => lookupBatch(deps, meterer, { entries, unique, invalid, invalidCount }),
          // the matches the answer shows in meta.matched
          billed: (r) => batchPayload(unique, r.views, r.metered.matched).matched,
        },
        (r) => c.body(batchPayload(unique, r.views, r.metered.matched).payload, 200, { "Content-Type": "application/json" }),
      );
    }
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
      // matched is what meter_call counted and debited with the same x_or_farcaster predicate
      const { payload } = batchPayload(unique, views, metered.matched);
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
