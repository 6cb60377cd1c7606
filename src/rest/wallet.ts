// GET /wallet/{address}: one address, 1 rate unit, 1 match credit when it resolves to twitter or farcaster.
import { Hono, type Context } from "hono";
import * as v from "valibot";
import { invalidAddress } from "../http/errors.ts";
import type { WalletView } from "../index/records.ts";
import { requestMeterer } from "../http/request-meter.ts";
import { walletRecordJson } from "../http/render.ts";
import { WalletLookupResponse, WalletParams } from "../http/schemas.ts";
import type { Operation } from "../openapi/operation.ts";
import { meterDeps, type OperationDeps } from "../operations/deps.ts";
import { lookupWallet, WALLET_ROUTE } from "../operations/lookup.ts";
import type { PerCallDeps } from "../operations/percall.ts";
import { answerPaid, paysPerCall, type PaidRoute } from "./paid.ts";

export const walletOpenapi: Operation[] = [
  {
    method: "get",
    path: "/wallet/{address}",
    operationId: "lookupWallet",
    tag: "Lookups",
    summary: "Look up one wallet",
    description:
      "The identities attached to one address. A wallet with nothing attached is a 200 with `data: null` and `meta.found: false` (`meta.checked_at` is a timestamp when checked and found empty, null when never seen). Stale records carry `X-Data-Staleness` and `X-Last-Updated`. Cost: 1 match credit when the wallet resolves to twitter or farcaster; rate weight 1. A malformed address costs nothing. Without Authorization, on a server with x402 configured: paid per call (x402 `upto`, see `x-payment-info`): the call answers 402 with a challenge for its ceiling, and the paid retry settles only the matches the answer bills (a miss costs nothing), limited per paying wallet as the Developer preset.",
    auth: true,
    paidPerCall: { maxMatches: 1 },
    params: WalletParams,
    success: {
      status: 200,
      description: "The wallet record, or null when nothing is attached",
      schema: WalletLookupResponse,
      headers: ["X-Data-Staleness", "X-Last-Updated"],
    },
    errors: [
      { status: 400, codes: ["INVALID_ADDRESS"] },
      {
        status: 402,
        codes: ["NO_CREDITS", "PAYMENT_REQUIRED"],
        headers: ["PAYMENT-REQUIRED", "PAYMENT-RESPONSE"],
        description: "No match credits left on the key's account (NO_CREDITS); or, with no Authorization on a server with x402 configured, payment required per call (PAYMENT_REQUIRED: the x402 `upto` challenge in PAYMENT-REQUIRED; after a refused payment, the reason in the body and PAYMENT-RESPONSE)",
      },
    ],
  },
];

/** The single-lookup response: record or null, meta, and the staleness headers of a stale record. */
export function lookupResponse(c: Context, address: string, view: WalletView | undefined): Response {
  if (!view || !view.found) {
    return c.json({
      data: null,
      meta: { wallet: address, found: false, checked_at: view ? view.checkedAt.toISOString() : null },
    });
  }
  const lastUpdated = (view.lastUpdated ?? view.checkedAt).toISOString();
  if (view.stale) {
    c.header("X-Data-Staleness", "stale");
    c.header("X-Last-Updated", lastUpdated);
  }
  return c.json({
    data: walletRecordJson(view),
    meta: { wallet: address, found: true, last_updated: lastUpdated, stale: view.stale },
  });
}

/** GET /wallet/{address} paid per call: at most one match. */
export const walletPaidRoute: PaidRoute = {
  method: "GET",
  pattern: "/wallet/:address",
  description: "walletid: the social identities (twitter, farcaster, ens, lens, github) attached to one wallet; billed only when it resolves to twitter or farcaster",
  discovery: {
    pathParams: { address: "0xd8da6bf26964af9d7eed9e03e53415d37aa96045" },
    pathParamsSchema: { properties: { address: { type: "string", pattern: "^0x[0-9a-fA-F]{40}$" } }, required: ["address"] },
    output: {
      example: {
        data: { wallet: "0xd8da6bf26964af9d7eed9e03e53415d37aa96045", twitter: { handle: "vitalikbuterin" }, ens_name: "vitalik.eth" },
        meta: { wallet: "0xd8da6bf26964af9d7eed9e03e53415d37aa96045", found: true, last_updated: "2026-01-01T00:00:00.000Z", stale: false },
      },
    },
  },
};

export function walletRoutes(deps: PerCallDeps) {
  const app = new Hono();

  app.get("/wallet/:address", async (c) => {
    if (paysPerCall(c, deps)) {
      // a malformed address is refused before any challenge: nobody signs for a 400
      if (!v.is(WalletParams, { address: c.req.param("address") })) throw invalidAddress([c.req.param("address")]);
      return await answerPaid(
        c,
        deps,
        walletPaidRoute,
        { route: WALLET_ROUTE, maxMatches: 1, run: (meterer) => lookupWallet(deps, meterer, c.req.param("address")), billed: (r) => r.metered.matched },
        (r) => lookupResponse(c, r.address, r.view),
      );
    }
    const looked = await lookupWallet(deps, requestMeterer(c, meterDeps(deps)), c.req.param("address"));
    if (!looked.ok) throw looked.refusal;
    return lookupResponse(c, looked.address, looked.view);
  });

  return app;
}
